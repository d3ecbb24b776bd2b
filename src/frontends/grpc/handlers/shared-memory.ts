/**
 * @module frontends/grpc/handlers/shared-memory
 * System and CUDA shared-memory RPCs. Client shared memory is not supported yet: status lists
 * no regions, register is refused UNIMPLEMENTED (current Triton answers the same class of error
 * without `--allow-client-shm`), and unregister succeeds as a no-op so perf_analyzer's start-up
 * "unregister all" and its clean-up calls do not fail.
 */
import { create } from '@bufbuild/protobuf';
import { ErrorCode, TritonError } from '../../../core/errors.js';
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

type Kind = 'system' | 'cuda';

function notFound(kind: Kind, name: string): TritonError {
  return new TritonError(ErrorCode.NOT_FOUND, `Unable to find ${kind} shared memory region: '${name}'`);
}

function refuseRegister(kind: Kind, name: string): never {
  if (name === '') throw new TritonError(ErrorCode.INVALID_ARG, `'region name' is necessary to register ${kind} shared memory region`);
  throw new TritonError(
    ErrorCode.UNSUPPORTED,
    `failed to register ${kind} shared memory region '${name}': client shared memory is not supported by tritium yet`,
  );
}

export function systemSharedMemoryStatus(_ctx: GrpcContext, req: SystemSharedMemoryStatusRequest) {
  if (req.name !== '') throw notFound('system', req.name);
  return create(SystemSharedMemoryStatusResponseSchema);
}

export function systemSharedMemoryRegister(_ctx: GrpcContext, req: SystemSharedMemoryRegisterRequest): never {
  refuseRegister('system', req.name);
}

export function systemSharedMemoryUnregister() {
  return create(SystemSharedMemoryUnregisterResponseSchema);
}

export function cudaSharedMemoryStatus(_ctx: GrpcContext, req: CudaSharedMemoryStatusRequest) {
  if (req.name !== '') throw notFound('cuda', req.name);
  return create(CudaSharedMemoryStatusResponseSchema);
}

export function cudaSharedMemoryRegister(_ctx: GrpcContext, req: CudaSharedMemoryRegisterRequest): never {
  refuseRegister('cuda', req.name);
}

export function cudaSharedMemoryUnregister() {
  return create(CudaSharedMemoryUnregisterResponseSchema);
}
