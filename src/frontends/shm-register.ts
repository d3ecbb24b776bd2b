/**
 * @module frontends/shm-register
 * A system shared-memory register as both frontends make it: the core's registry decides, and
 * its refusal of a zero byte size is answered in Triton's words. Triton checks the name and
 * opens the key before it maps the region, where mmap refuses a 0-byte length as an invalid
 * argument (400 / INVALID_ARGUMENT, tritonserver 2.51); the registry refuses it as INTERNAL.
 */
import { Errors, TritonError } from '../core/errors.js';
import type { SystemSharedMemory } from '../core/extensions/shared-memory.js';

export function registerSystemRegion(shm: SystemSharedMemory, region: string, key: string, offset: number, byteSize: number): void {
  try {
    shm.register(region, key, offset, byteSize);
  } catch (err) {
    if (byteSize === 0 && err instanceof TritonError && err.entry === 'shmRegionInvalid') throw Errors.shmRegisterZeroSize(region);
    throw err;
  }
}
