/**
 * @module frontends/grpc/handlers/repository
 * RepositoryIndex lists the core's models; load/unload are refused the way Triton refuses them
 * outside `--model-control-mode=explicit` (Model Analyzer looks for "polling is enabled").
 */
import { create } from '@bufbuild/protobuf';
import { Errors } from '../../../core/errors.js';
import type { RepositoryIndexRequest, RepositoryModelLoadRequest, RepositoryModelUnloadRequest } from '../../../generated/grpc_service_pb.js';
import { RepositoryIndexResponseSchema } from '../../../generated/grpc_service_pb.js';
import type { GrpcContext } from '../context.js';

function checkRepositoryName(name: string): void {
  if (name !== '') throw Errors.repositoryName();
}

export function repositoryIndex(ctx: GrpcContext, req: RepositoryIndexRequest) {
  checkRepositoryName(req.repositoryName);
  const models = ctx.core.repositoryIndex(req.ready).map((e) => ({
    name: e.name,
    version: e.version ?? '',
    state: e.state ?? '',
    reason: e.reason ?? '',
  }));
  return create(RepositoryIndexResponseSchema, { models });
}

// TODO(explicit mode): route to the core once ServerCore exposes load/unload.
export function repositoryModelLoad(_ctx: GrpcContext, req: RepositoryModelLoadRequest | RepositoryModelUnloadRequest): never {
  checkRepositoryName(req.repositoryName);
  throw Errors.explicitLoadUnload();
}

export const repositoryModelUnload = repositoryModelLoad;
