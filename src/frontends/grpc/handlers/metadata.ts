/**
 * @module frontends/grpc/handlers/metadata
 * ServerMetadata, ModelMetadata and ModelConfig.
 */
import type { JsonValue } from '@bufbuild/protobuf';
import { create, fromJson } from '@bufbuild/protobuf';
import type { ModelConfigRequest, ModelMetadataRequest } from '../../../generated/grpc_service_pb.js';
import { ModelConfigResponseSchema, ModelMetadataResponseSchema, ServerMetadataResponseSchema } from '../../../generated/grpc_service_pb.js';
import type { ModelConfig } from '../../../generated/model_config_pb.js';
import { ModelConfigSchema } from '../../../generated/model_config_pb.js';
import type { GrpcContext } from '../context.js';

export function serverMetadata(ctx: GrpcContext) {
  const m = ctx.core.serverMetadata();
  return create(ServerMetadataResponseSchema, { name: m.name, version: m.version, extensions: m.extensions });
}

export function modelMetadata(ctx: GrpcContext, req: ModelMetadataRequest) {
  const handle = ctx.core.resolveModel(req.name, req.version);
  const meta = handle.metadata();
  const tensor = (t: { name: string; datatype: string; shape: number[] }) => ({
    name: t.name,
    datatype: t.datatype,
    shape: t.shape.map((d) => BigInt(d)),
  });
  return create(ModelMetadataResponseSchema, {
    name: meta.name,
    // With a version in the request, Triton lists just that version.
    versions: req.version === '' ? meta.versions : [handle.version],
    platform: meta.platform,
    inputs: meta.inputs.map(tensor),
    outputs: meta.outputs.map(tensor),
  });
}

export function modelConfig(ctx: GrpcContext, req: ModelConfigRequest) {
  const handle = ctx.core.resolveModel(req.name, req.version);
  return create(ModelConfigResponseSchema, { config: configMessage(ctx, handle.name, handle.configJson()) });
}

/**
 * The config JSON is Triton's protobuf-JSON rendering of `ModelConfig`, so it parses back into
 * the message. A field the proto lacks would be a bug in the renderer or the proto: it is
 * logged and dropped rather than failing the call (clients need the rest of the config).
 */
function configMessage(ctx: GrpcContext, model: string, json: Record<string, unknown>): ModelConfig {
  try {
    return fromJson(ModelConfigSchema, json as JsonValue, { ignoreUnknownFields: false });
  } catch (err) {
    ctx.logger?.warn(`config of model '${model}' does not match the ModelConfig proto: ${(err as Error).message}`);
    return fromJson(ModelConfigSchema, json as JsonValue, { ignoreUnknownFields: true });
  }
}
