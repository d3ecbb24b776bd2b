/**
 * @module frontends/grpc/handlers/health
 * ServerLive / ServerReady / ModelReady and the standard `grpc.health.v1.Health/Check`.
 *
 * Not live / not ready is an OK status with `false`; only an exiting server answers
 * UNAVAILABLE `Server exiting` (as Triton's frontend does). ModelReady for an unknown model is
 * the lookup error; a known version that is not (or no longer) ready is `ready: false`.
 * Readiness asks each model's own check (`is_ready()`) once per call (ServerCore.checkReady).
 */
import { create } from '@bufbuild/protobuf';
import { ErrorCode, TritonError, Errors } from '../../../core/errors.js';
import type { ModelReadyRequest } from '../../../generated/grpc_service_pb.js';
import { ModelReadyResponseSchema, ServerLiveResponseSchema, ServerReadyResponseSchema } from '../../../generated/grpc_service_pb.js';
import { HealthCheckResponse_ServingStatus, HealthCheckResponseSchema } from '../../../generated/health_pb.js';
import type { GrpcContext } from '../context.js';

function checkExiting(ctx: GrpcContext): void {
  if (ctx.core.isExiting()) throw Errors.serverExiting();
}

export function serverLive(ctx: GrpcContext) {
  checkExiting(ctx);
  return create(ServerLiveResponseSchema, { live: ctx.core.isLive() });
}

export async function serverReady(ctx: GrpcContext) {
  checkExiting(ctx);
  return create(ServerReadyResponseSchema, { ready: await ctx.core.checkReady() });
}

export async function modelReady(ctx: GrpcContext, req: ModelReadyRequest) {
  let ready: boolean;
  try {
    ready = await ctx.core.checkModelReady(req.name, req.version);
  } catch (err) {
    // As Triton 2.51 answers (checked against tritonserver): a model that is unknown, unloaded
    // or has no READY version is simply not ready; tritonclient's is_model_ready() says False.
    if (err instanceof TritonError && (err.code === ErrorCode.UNAVAILABLE || err.code === ErrorCode.NOT_FOUND)) ready = false;
    else throw err;
  }
  return create(ModelReadyResponseSchema, { ready });
}

/** The service name in the request is ignored: the answer is the server's readiness. */
export async function healthCheck(ctx: GrpcContext) {
  const serving = !ctx.core.isExiting() && (await ctx.core.checkReady());
  return create(HealthCheckResponseSchema, {
    status: serving ? HealthCheckResponse_ServingStatus.SERVING : HealthCheckResponse_ServingStatus.NOT_SERVING,
  });
}
