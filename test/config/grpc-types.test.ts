import { readFileSync } from 'node:fs';
import { create, equals, fromBinary, toBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { GRPCInferenceService, ModelConfigResponseSchema, ModelInferRequestSchema } from '../../src/generated/grpc_service_pb.js';
import { HealthCheckResponse_ServingStatus, Health } from '../../src/generated/health_pb.js';
import { parseModelConfigText } from '../../src/core/config/parse.js';

describe('generated gRPC types', () => {
  it('encodes a parsed config in ModelConfigResponse and decodes it back', () => {
    const config = parseModelConfigText(readFileSync(new URL('./fixtures/kitchen-sink.pbtxt', import.meta.url), 'utf8'), 'c');
    const bytes = toBinary(ModelConfigResponseSchema, create(ModelConfigResponseSchema, { config }));
    expect(equals(ModelConfigResponseSchema, fromBinary(ModelConfigResponseSchema, bytes), create(ModelConfigResponseSchema, { config }))).toBe(true);
  });

  it('uses the wire numbers of the spec for ModelInferRequest', () => {
    const req = create(ModelInferRequestSchema, {
      modelName: 'm',
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1n, 4n] }],
      rawInputContents: [new Uint8Array(16)],
    });
    const bytes = toBinary(ModelInferRequestSchema, req);
    // field 1 (model_name), length-delimited: tag 0x0a
    expect(bytes[0]).toBe(0x0a);
    expect(fromBinary(ModelInferRequestSchema, bytes).inputs[0]!.shape).toEqual([1n, 4n]);
  });

  it('describes every RPC of the inference service and the health service', () => {
    expect(Object.keys(GRPCInferenceService.method)).toEqual([
      'serverLive',
      'serverReady',
      'modelReady',
      'serverMetadata',
      'modelMetadata',
      'modelInfer',
      'modelStreamInfer',
      'modelConfig',
      'modelStatistics',
      'repositoryIndex',
      'repositoryModelLoad',
      'repositoryModelUnload',
      'systemSharedMemoryStatus',
      'systemSharedMemoryRegister',
      'systemSharedMemoryUnregister',
      'cudaSharedMemoryStatus',
      'cudaSharedMemoryRegister',
      'cudaSharedMemoryUnregister',
      'traceSetting',
      'logSettings',
    ]);
    expect(GRPCInferenceService.typeName).toBe('inference.GRPCInferenceService');
    expect(GRPCInferenceService.method.modelStreamInfer.methodKind).toBe('bidi_streaming');
    expect(Health.method.check.name).toBe('Check');
    expect(HealthCheckResponse_ServingStatus.SERVING).toBe(1);
  });
});
