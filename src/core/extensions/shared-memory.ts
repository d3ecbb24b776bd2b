/**
 * @module core/extensions/shared-memory
 * Client shared memory, shared by HTTP and gRPC. System regions are POSIX shared-memory objects
 * the client created (`/dev/shm/<key>`); registering one opens it, and inference inputs and
 * outputs may then live in it (`shared_memory_region` / `_offset` / `_byte_size` parameters):
 * inputs are copied out of it when the request arrives, outputs are written into it when the
 * model answers. Both go through the object's descriptor, never a mapping (./shm-file.ts says
 * why: a client that shrinks its object must not be able to kill the server).
 *
 * A region named by a request for an output stays open until that request's final response,
 * even if it is unregistered meanwhile (the name is gone at once, as in Triton). CUDA regions
 * need CUDA IPC: register is refused UNSUPPORTED, status lists none, unregister is a no-op
 * (perf_analyzer unregisters both kinds at start).
 */
import { Errors } from '../errors.js';
import type { ShmFile, ShmFiles } from './shm-file.js';

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
  file: ShmFile;
  /** Requests holding it for an output. */
  users: number;
  registered: boolean;
}

/** An input's bytes read out of its region, held until release() (idempotent). */
export interface ShmInputCopy {
  readonly data: Buffer;
  release(): void;
}

/** Part of a region held for an output until release() (idempotent). */
export interface ShmOutputTarget {
  readonly byteSize: number;
  /** Writes `data` at the start of the part; throws a catalogue error when it cannot. */
  write(data: Buffer): void;
  release(): void;
}

/**
 * Keys of shared memory that belongs to servers, never to clients: tritium's own stub regions
 * and Triton's Python-backend regions. A client naming one could read or corrupt a model's IPC.
 */
const RESERVED_KEYS = /^(tritium_\d+_|triton_python_backend_shm_region_)/;

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Buffers for inputs read out of regions, kept by size for reuse: clients send the same shapes
 * again and again. At most POOL_BYTES are kept idle; past that a returned buffer is dropped.
 */
class BufferPool {
  private readonly free = new Map<number, Buffer[]>();
  private idle = 0;

  constructor(private readonly maxIdle: number) {}

  take(size: number): Buffer {
    const list = this.free.get(size);
    const b = list?.pop();
    if (b === undefined) return Buffer.allocUnsafeSlow(size);
    this.idle -= size;
    return b;
  }

  give(b: Buffer): void {
    if (this.idle + b.length > this.maxIdle) return;
    let list = this.free.get(b.length);
    if (list === undefined) this.free.set(b.length, (list = []));
    list.push(b);
    this.idle += b.length;
  }
}

const POOL_BYTES = 64 * 2 ** 20;

export class SystemSharedMemory {
  private readonly regions = new Map<string, Region>();
  private readonly buffers = new BufferPool(POOL_BYTES);

  constructor(private readonly files: ShmFiles | undefined) {}

  register(name: string, key: string, offset: number, byteSize: number): void {
    if (name === '') throw Errors.shmRegionNameMissing('system');
    if (this.regions.has(name)) throw Errors.shmRegionExists(name);
    const bare = key.startsWith('/') ? key.slice(1) : key;
    if (RESERVED_KEYS.test(bare)) throw Errors.shmKeyReserved(key);
    if (this.files === undefined) throw Errors.shmUnsupported('system', name);
    if (byteSize <= 0) throw Errors.shmRegionInvalid(key);
    let file: ShmFile;
    let size: number;
    try {
      file = this.files.open(key);
      size = file.size();
    } catch {
      throw Errors.shmOpenFailed(key);
    }
    if (size === 0) {
      file.close();
      throw Errors.shmOpenFailed(key);
    }
    if (offset + byteSize > size) {
      file.close();
      throw Errors.shmRegisterInvalidArgs(name);
    }
    this.regions.set(name, { name, key, offset, byteSize, file, users: 0, registered: true });
  }

  /** Unregisters `name`, or every region when it is ''. Unknown names are not an error (Triton). */
  unregister(name: string): void {
    const names = name === '' ? [...this.regions.keys()] : [name];
    for (const n of names) {
      const r = this.regions.get(n);
      if (r === undefined) continue;
      this.regions.delete(n);
      r.registered = false;
      if (r.users === 0) r.file.close();
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

  /**
   * A copy of an input's `byteSize` bytes at `offset` of a registered region, in a buffer the
   * caller gives back with release() once the request is answered (so the next request reuses
   * its pages: a fresh buffer per request made shared memory 1.5× as costly, docs/benchmarks.md).
   */
  readInput(ref: ShmRef): ShmInputCopy {
    const r = this.find(ref);
    const data = this.buffers.take(ref.byteSize);
    const at = r.offset + ref.offset;
    let got: number;
    try {
      got = r.file.read(data, at);
    } catch (err) {
      this.buffers.give(data);
      throw Errors.shmAccessFailed('read', r.name, message(err));
    }
    if (got < data.length) {
      this.buffers.give(data);
      throw Errors.shmObjectShrunk(r.name, at + data.length, at + got);
    }
    let held = true;
    return {
      data,
      release: () => {
        if (!held) return;
        held = false;
        this.buffers.give(data);
      },
    };
  }

  /** Holds `byteSize` bytes at `offset` of a registered region for an output. */
  holdOutput(ref: ShmRef): ShmOutputTarget {
    const r = this.find(ref);
    const at = r.offset + ref.offset;
    r.users++;
    let held = true;
    return {
      byteSize: ref.byteSize,
      write: (data: Buffer) => {
        // Written only within the object's current size: writing past its end would grow the
        // client's object behind its back, and the client reading through a mapping of the old
        // size would not see the bytes anyway.
        let size: number;
        try {
          size = r.file.size();
        } catch (err) {
          throw Errors.shmAccessFailed('write', r.name, message(err));
        }
        if (at + data.length > size) throw Errors.shmObjectShrunk(r.name, at + data.length, size);
        try {
          r.file.write(data, at);
        } catch (err) {
          throw Errors.shmAccessFailed('write', r.name, message(err));
        }
      },
      release: () => {
        if (!held) return;
        held = false;
        r.users--;
        if (r.users === 0 && !r.registered) r.file.close();
      },
    };
  }

  private find(ref: ShmRef): Region {
    const r = this.regions.get(ref.region);
    if (r === undefined) throw Errors.shmRegionUnknown(ref.region);
    if (ref.byteSize <= 0 || ref.offset < 0 || ref.offset + ref.byteSize > r.byteSize) throw Errors.shmBounds(ref.region);
    return r;
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
