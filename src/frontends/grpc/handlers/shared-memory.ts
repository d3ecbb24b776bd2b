/**
 * @module frontends/grpc/handlers/shared-memory
 * System and CUDA shared-memory RPCs. The registry and its rules are the core's
 * (core/extensions/shared-memory.ts); this module maps messages to it.
 */
import { create } from '@bufbuild/protobuf';
import { cudaSharedMemoryRegister as refuseCuda, cudaSharedMemoryStatus as cudaStatus } from '../../../core/extensions/shared-memory.js';
import type {
  CudaSharedMemoryRegisterRequest,
  CudaSharedMemoryStatusRequest,
  SystemSharedMemoryRegisterRequest,
  SystemSharedMemoryStatusRequest,
  SystemSharedMemoryUnregisterRequest,
} from '../../../generated/grpc_service_pb.js';
import {
  CudaSharedMemoryStatusResponseSchema,
  CudaSharedMemoryUnregisterResponseSchema,
  SystemSharedMemoryRegisterResponseSchema,
  SystemSharedMemoryStatusResponse_RegionStatusSchema,
  SystemSharedMemoryStatusResponseSchema,
  SystemSharedMemoryUnregisterResponseSchema,
} from '../../../generated/grpc_service_pb.js';
import { registerSystemRegion } from '../../shm-register.js';
import type { GrpcContext } from '../context.js';

export function systemSharedMemoryStatus(ctx: GrpcContext, req: SystemSharedMemoryStatusRequest) {
  const regions: Record<string, ReturnType<typeof regionStatus>> = {};
  for (const r of ctx.core.systemSharedMemory.status(req.name)) regions[r.name] = regionStatus(r);
  return create(SystemSharedMemoryStatusResponseSchema, { regions });
}

function regionStatus(r: { name: string; key: string; offset: number; byteSize: number }) {
  return create(SystemSharedMemoryStatusResponse_RegionStatusSchema, { name: r.name, key: r.key, offset: BigInt(r.offset), byteSize: BigInt(r.byteSize) });
}

export function systemSharedMemoryRegister(ctx: GrpcContext, req: SystemSharedMemoryRegisterRequest) {
  registerSystemRegion(ctx.core.systemSharedMemory, req.name, req.key, Number(req.offset), Number(req.byteSize));
  return create(SystemSharedMemoryRegisterResponseSchema);
}

export function systemSharedMemoryUnregister(ctx: GrpcContext, req: SystemSharedMemoryUnregisterRequest) {
  ctx.core.systemSharedMemory.unregister(req.name);
  return create(SystemSharedMemoryUnregisterResponseSchema);
}

export function cudaSharedMemoryStatus(_ctx: GrpcContext, req: CudaSharedMemoryStatusRequest) {
  cudaStatus(req.name);
  return create(CudaSharedMemoryStatusResponseSchema);
}

export function cudaSharedMemoryRegister(_ctx: GrpcContext, req: CudaSharedMemoryRegisterRequest): never {
  refuseCuda(req.name);
}

export function cudaSharedMemoryUnregister() {
  return create(CudaSharedMemoryUnregisterResponseSchema);
}
