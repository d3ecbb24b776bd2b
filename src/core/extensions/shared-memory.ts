/**
 * @module core/extensions/shared-memory
 * The system and CUDA shared-memory extensions, shared by HTTP and gRPC. Client shared memory is
 * not supported yet: status lists no regions (a named region is not found), register is refused
 * UNSUPPORTED, and unregister succeeds as a no-op, so perf_analyzer's start-up "unregister all"
 * and its clean-up calls do not fail.
 */
import { Errors } from '../errors.js';

export type SharedMemoryKind = 'system' | 'cuda';

/** The registered regions: none; `name` set asks for one region, which cannot exist. */
export function sharedMemoryStatus(kind: SharedMemoryKind, name: string): [] {
  if (name !== '') throw Errors.shmRegionNotFound(kind, name);
  return [];
}

/** Always refuses: nothing can be registered yet. */
export function sharedMemoryRegister(kind: SharedMemoryKind, name: string): never {
  if (name === '') throw Errors.shmRegionNameMissing(kind);
  throw Errors.shmUnsupported(kind, name);
}
