/**
 * @module frontends/grpc/handlers/repository
 * RepositoryIndex lists the core's models; RepositoryModelLoad/Unload translate the request's
 * parameters (`config` string, `file:<version>/<path>` bytes, `unload_dependents` bool) and
 * call the core, which refuses them outside `--model-control-mode=explicit` with Triton's text.
 */
import { create } from '@bufbuild/protobuf';
import { Errors } from '../../../core/errors.js';
import type { LoadModelOptions } from '../../../core/server-core.js';
import type {
  ModelRepositoryParameter,
  RepositoryIndexRequest,
  RepositoryModelLoadRequest,
  RepositoryModelUnloadRequest,
} from '../../../generated/grpc_service_pb.js';
import { RepositoryIndexResponseSchema, RepositoryModelLoadResponseSchema, RepositoryModelUnloadResponseSchema } from '../../../generated/grpc_service_pb.js';
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

export async function repositoryModelLoad(ctx: GrpcContext, req: RepositoryModelLoadRequest) {
  checkRepositoryName(req.repositoryName);
  await ctx.core.loadModel(req.modelName, loadOptions(req.parameters));
  return create(RepositoryModelLoadResponseSchema, {});
}

export async function repositoryModelUnload(ctx: GrpcContext, req: RepositoryModelUnloadRequest) {
  checkRepositoryName(req.repositoryName);
  const p = req.parameters.unload_dependents?.parameterChoice;
  await ctx.core.unloadModel(req.modelName, { unloadDependents: p?.case === 'boolParam' && p.value });
  return create(RepositoryModelUnloadResponseSchema, {});
}

/** `config` as a string, `file:` contents as bytes (tritonclient's shapes); others are ignored. */
function loadOptions(params: Record<string, ModelRepositoryParameter>): LoadModelOptions {
  const o: LoadModelOptions = {};
  for (const [key, param] of Object.entries(params)) {
    const p = param.parameterChoice;
    const text = p.case === 'stringParam' ? p.value : p.case === 'bytesParam' ? Buffer.from(p.value).toString('utf8') : undefined;
    if (key === 'config' && text !== undefined) o.config = text;
    else if (key.startsWith('file:') && (p.case === 'bytesParam' || p.case === 'stringParam')) {
      o.files = { ...o.files, [key]: p.case === 'bytesParam' ? Buffer.from(p.value) : Buffer.from(p.value, 'utf8') };
    }
  }
  return o;
}
