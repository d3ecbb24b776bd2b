/**
 * @module core/cache/response-cache
 * Triton's `local` response cache (`--cache-config local,size=N`), built in: the outputs of a
 * successful response, looked up by a key over the model name, the version that served it, and
 * each input sorted by name (the name and every data byte), as Triton's code keys it — neither
 * datatype, shape, requested outputs nor parameters are in the key (docs/protocol-notes.md,
 * "Response cache"). Entries are evicted least recently used first (a hit or an insert makes
 * an entry the newest) to stay within `size` bytes. Errors are never cached.
 *
 * A model uses it when the server has a cache and the model sets `response_cache { enable:
 * true }`; the model version looks up before its scheduler and inserts at the final response
 * (core/model/model-version.ts).
 */
import { createHash } from 'node:crypto';
import type { Tensor } from '../tensor.js';

/** Bytes an entry is charged beyond its tensors' data (names, shapes, bookkeeping). */
const ENTRY_OVERHEAD = 64;
const TENSOR_OVERHEAD = 32;

interface Entry {
  readonly outputs: readonly Tensor[];
  readonly bytes: number;
}

/** The counters the `nv_cache_*` gauges show. */
export interface CacheCounters {
  entries: number;
  lookups: number;
  hits: number;
  misses: number;
  evictions: number;
  /** Bytes held / size, 0..1. */
  util: number;
  lookupUs: number;
  insertionUs: number;
}

export class ResponseCache {
  /** Insertion order is recency order: the first entry is the least recently used. */
  private readonly entries = new Map<string, Entry>();
  private used = 0;
  private lookups = 0;
  private hits = 0;
  private misses = 0;
  private evictions = 0;
  private lookupNs = 0n;
  private insertionNs = 0n;

  constructor(
    /** Capacity in bytes. */
    readonly size: number,
    /** Told when an entry cannot be inserted (Triton logs "Failed to insert key ..."). */
    private readonly onInsertFailure?: (key: string, why: string) => void,
  ) {}

  /** The key of a request to `model` version `version` with these inputs. */
  static key(model: string, version: string, inputs: readonly Tensor[]): string {
    const h = createHash('sha256');
    h.update(model);
    h.update('\0');
    h.update(version);
    const sorted = inputs.length > 1 ? [...inputs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) : inputs;
    for (const t of sorted) {
      h.update('\0');
      h.update(t.name);
      h.update('\0');
      h.update(t.data);
    }
    return h.digest('base64');
  }

  /** The cached outputs of `key` (made the newest entry), or undefined; `ns` is the lookup's duration. */
  lookup(key: string, ns: bigint): readonly Tensor[] | undefined {
    this.lookups++;
    this.lookupNs += ns;
    const e = this.entries.get(key);
    if (e === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.outputs;
  }

  /** Keeps a copy of `outputs` under `key`, evicting the least recently used entries to make room. */
  insert(key: string, outputs: readonly Tensor[]): void {
    const t0 = process.hrtime.bigint();
    try {
      if (this.entries.has(key)) return; // another request with the same key got here first
      let bytes = ENTRY_OVERHEAD;
      for (const t of outputs) bytes += TENSOR_OVERHEAD + t.name.length + t.data.length;
      if (bytes > this.size) {
        this.onInsertFailure?.(key, `Requested byte_size: ${bytes} is greater than total cache size: ${this.size}`);
        return;
      }
      while (this.used + bytes > this.size) {
        const oldest = this.entries.keys().next().value as string;
        this.used -= this.entries.get(oldest)!.bytes;
        this.entries.delete(oldest);
        this.evictions++;
      }
      // A copy: response buffers may be views of a stub's shared memory, handed back after the write.
      const copies = outputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape.slice(), data: Buffer.from(t.data) }));
      this.entries.set(key, { outputs: copies, bytes });
      this.used += bytes;
    } finally {
      this.insertionNs += process.hrtime.bigint() - t0;
    }
  }

  counters(): CacheCounters {
    return {
      entries: this.entries.size,
      lookups: this.lookups,
      hits: this.hits,
      misses: this.misses,
      evictions: this.evictions,
      util: this.size > 0 ? this.used / this.size : 0,
      lookupUs: Number(this.lookupNs / 1000n),
      insertionUs: Number(this.insertionNs / 1000n),
    };
  }
}
