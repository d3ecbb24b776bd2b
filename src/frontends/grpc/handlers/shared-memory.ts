/**
 * @module frontends/grpc/handlers/shared-memory
 * System and CUDA shared-memory RPCs; what they answer is the core's
 * (core/extensions/shared-memory.ts: client shared memory is not supported yet).
 */
import { create } from '@bufbuild/protobuf';
import { sharedMemoryRegister, sharedMemoryStatus } from '../../../core/extensions/shared-memory.js';
import type {
  CudaSharedMemoryRegisterRequest,
  CudaSharedMemoryStatusRequest,
  SystemSharedMemoryRegisterRequest,
  SystemSharedMemoryStatusRequest,
} from '../../../generated/grpc_service_pb.js';
import {
  CudaSharedMemoryStatusResponseSchema,
  CudaSharedMemoryUnregisterResponseSchema,
  SystemSharedMemoryStatusResponseSchema,
  SystemSharedMemoryUnregisterResponseSchema,
} from '../../../generated/grpc_service_pb.js';
import type { GrpcContext } from '../context.js';

export function systemSharedMemoryStatus(_ctx: GrpcContext, req: SystemSharedMemoryStatusRequest) {
  sharedMemoryStatus('system', req.name);
  return create(SystemSharedMemoryStatusResponseSchema);
}

export function systemSharedMemoryRegister(_ctx: GrpcContext, req: SystemSharedMemoryRegisterRequest): never {
  sharedMemoryRegister('system', req.name);
}

export function systemSharedMemoryUnregister() {
  return create(SystemSharedMemoryUnregisterResponseSchema);
}

export function cudaSharedMemoryStatus(_ctx: GrpcContext, req: CudaSharedMemoryStatusRequest) {
  sharedMemoryStatus('cuda', req.name);
  return create(CudaSharedMemoryStatusResponseSchema);
}

export function cudaSharedMemoryRegister(_ctx: GrpcContext, req: CudaSharedMemoryRegisterRequest): never {
  sharedMemoryRegister('cuda', req.name);
}

export function cudaSharedMemoryUnregister() {
  return create(CudaSharedMemoryUnregisterResponseSchema);
}
