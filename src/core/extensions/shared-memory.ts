/**
 * @module core/extensions/shared-memory
 * Client shared memory, shared by HTTP and gRPC. System regions are POSIX shared-memory objects
 * the client created (`/dev/shm/<key>`); registering one maps it, and inference inputs and
 * outputs may then live in it (`shared_memory_region` / `_offset` / `_byte_size` parameters):
 * inputs are read as views of the mapping (no copy), outputs are written into it.
 *
 * A region in use by a request stays mapped until that request's final response, even if it
 * is unregistered meanwhile (the name is gone at once, as in Triton). CUDA regions need CUDA
 * IPC: register is refused UNSUPPORTED, status lists none, unregister is a no-op (perf_analyzer
 * unregisters both kinds at start).
 */
import { Errors } from '../errors.js';

export type SharedMemoryKind = 'system' | 'cuda';

/** Maps client shared-memory objects (the native addon in the server, see src/server.ts). */
export interface ShmMapper {
  /** Maps the whole object `key` (a `/name` in /dev/shm); throws when it cannot be opened. */
  open(key: string): SharedArrayBuffer;
  /** Drops the mapping's pages now (stale views read zeros). */
  release(mapping: SharedArrayBuffer): void;
}

export interface SystemRegionStatus {
  name: string;
  key: string;
  offset: number;
  byteSize: number;
}

/** Where a tensor lives in a registered region (the request's parameters). */
export interface ShmRef {
  region: string;
  offset: number;
  byteSize: number;
}

interface Region extends SystemRegionStatus {
  mapping: SharedArrayBuffer;
  /** Requests holding a view of it. */
  users: number;
  registered: boolean;
}

/** A view of part of a region, held until release() (idempotent). */
export interface ShmLease {
  readonly data: Buffer;
  release(): void;
}

/**
 * Keys of shared memory that belongs to servers, never to clients: tritium's own stub regions
 * and Triton's Python-backend regions. A client naming one could read or corrupt a model's IPC.
 */
const RESERVED_KEYS = /^(tritium_\d+_|triton_python_backend_shm_region_)/;

export class SystemSharedMemory {
  private readonly regions = new Map<string, Region>();

  constructor(private readonly mapper: ShmMapper | undefined) {}

  register(name: string, key: string, offset: number, byteSize: number): void {
    if (name === '') throw Errors.shmRegionNameMissing('system');
    if (this.regions.has(name)) throw Errors.shmRegionExists(name);
    const bare = key.startsWith('/') ? key.slice(1) : key;
    if (RESERVED_KEYS.test(bare)) throw Errors.shmKeyReserved(key);
    if (this.mapper === undefined) throw Errors.shmUnsupported('system', name);
    if (byteSize <= 0) throw Errors.shmRegionInvalid(key);
    let mapping: SharedArrayBuffer;
    try {
      mapping = this.mapper.open(key);
    } catch {
      throw Errors.shmOpenFailed(key);
    }
    if (offset + byteSize > mapping.byteLength) {
      this.mapper.release(mapping);
      throw Errors.shmRegisterInvalidArgs(name);
    }
    this.regions.set(name, { name, key, offset, byteSize, mapping, users: 0, registered: true });
  }

  /** Unregisters `name`, or every region when it is ''. Unknown names are not an error (Triton). */
  unregister(name: string): void {
    const names = name === '' ? [...this.regions.keys()] : [name];
    for (const n of names) {
      const r = this.regions.get(n);
      if (r === undefined) continue;
      this.regions.delete(n);
      r.registered = false;
      if (r.users === 0) this.mapper?.release(r.mapping);
    }
  }

  /** Every region, or the one named (NOT_FOUND when it is not registered). */
  status(name: string): SystemRegionStatus[] {
    const pick = (r: Region): SystemRegionStatus => ({ name: r.name, key: r.key, offset: r.offset, byteSize: r.byteSize });
    if (name === '') return [...this.regions.values()].map(pick);
    const r = this.regions.get(name);
    if (r === undefined) throw Errors.shmRegionNotFound('system', name);
    return [pick(r)];
  }

  /** `byteSize` bytes at `offset` of a registered region, checked against its bounds. */
  acquire(ref: ShmRef): ShmLease {
    const r = this.regions.get(ref.region);
    if (r === undefined) throw Errors.shmRegionUnknown(ref.region);
    if (ref.byteSize <= 0 || ref.offset < 0 || ref.offset + ref.byteSize > r.byteSize) throw Errors.shmBounds(ref.region);
    r.users++;
    let held = true;
    return {
      data: Buffer.from(r.mapping, r.offset + ref.offset, ref.byteSize),
      release: () => {
        if (!held) return;
        held = false;
        r.users--;
        if (r.users === 0 && !r.registered) this.mapper?.release(r.mapping);
      },
    };
  }
}

/** The CUDA extension without CUDA: nothing can be registered, so a named region is not found. */
export function cudaSharedMemoryStatus(name: string): [] {
  if (name !== '') throw Errors.shmRegionNotFound('cuda', name);
  return [];
}

export function cudaSharedMemoryRegister(name: string): never {
  if (name === '') throw Errors.shmRegionNameMissing('cuda');
  throw Errors.shmUnsupported('cuda', name);
}
