/**
 * @module frontends/grpc/routes
 * The transport's routes: every RPC of `inference.GRPCInferenceService` and `grpc.health.v1.Health`
 * (Check only), built from the generated descriptors. server.ts loads this module with the
 * first connection, not at start: its imports (the descriptors of grpc_service.proto, the
 * handlers and the infer codecs) are most of the gRPC frontend, and a server that never gets
 * a gRPC call does without them (docs/design.md, "gRPC transport").
 */
import { GRPCInferenceService } from '../../generated/grpc_service_pb.js';
import { Health } from '../../generated/health_pb.js';
import type { GrpcContext } from './context.js';
import { healthCheck } from './handlers/health.js';
import { inferenceHandlers } from './handlers/index.js';
import { addServiceRoutes } from './service.js';
import type { Route } from './transport/http2-server.js';

/** The routes by path, their handlers bound to `ctx`. */
export function serviceRoutes(ctx: GrpcContext): Map<string, Route> {
  const routes = new Map<string, Route>();
  addServiceRoutes(routes, GRPCInferenceService, inferenceHandlers, ctx);
  addServiceRoutes(routes, Health, { check: healthCheck }, ctx);
  for (const method of ['ModelInfer', 'ModelStreamInfer']) routes.get(`/inference.GRPCInferenceService/${method}`)!.compressResponses = true;
  return routes;
}
