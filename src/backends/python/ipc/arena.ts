/**
 * @module backends/python/ipc/arena
 * First-fit allocator over one segment's byte range, with coalescing on free. Metadata lives in
 * this process only: each side allocates only in its own segments (docs/ipc.md), so no
 * cross-process lock is needed. Offsets are absolute within the segment.
 */
import { BLOCK_ALIGN } from './shm-layout.js';

const alignUp = (n: number, a: number): number => Math.ceil(n / a) * a;

export class Arena {
  /** Free extents sorted by offset, never adjacent (adjacent ones are merged). */
  private readonly free: Array<{ off: number; size: number }> = [];
  private readonly used = new Map<number, number>();
  private freeBytes: number;

  constructor(
    readonly base: number,
    readonly size: number,
    private readonly align = BLOCK_ALIGN,
  ) {
    const start = alignUp(base, align);
    const usable = Math.max(0, base + size - start);
    this.freeBytes = usable;
    if (usable > 0) this.free.push({ off: start, size: usable });
  }

  /** Offset of a block of at least `nbytes` (0 is allowed and gets a minimal block), or -1. */
  alloc(nbytes: number): number {
    const need = alignUp(Math.max(nbytes, 1), this.align);
    for (let i = 0; i < this.free.length; i++) {
      const ext = this.free[i]!;
      if (ext.size < need) continue;
      const off = ext.off;
      if (ext.size === need) this.free.splice(i, 1);
      else {
        ext.off += need;
        ext.size -= need;
      }
      this.used.set(off, need);
      this.freeBytes -= need;
      return off;
    }
    return -1;
  }

  /** Returns a block; throws on an offset this arena did not hand out (double free included). */
  release(off: number): void {
    const size = this.used.get(off);
    if (size === undefined) throw new Error(`arena: free of unknown block at offset ${off}`);
    this.used.delete(off);
    this.freeBytes += size;
    // Binary search for the first extent after `off`.
    let lo = 0;
    let hi = this.free.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.free[mid]!.off < off) lo = mid + 1;
      else hi = mid;
    }
    const prev = lo > 0 ? this.free[lo - 1] : undefined;
    const next = lo < this.free.length ? this.free[lo] : undefined;
    if (prev && prev.off + prev.size === off) {
      prev.size += size;
      if (next && prev.off + prev.size === next.off) {
        prev.size += next.size;
        this.free.splice(lo, 1);
      }
    } else if (next && off + size === next.off) {
      next.off = off;
      next.size += size;
    } else {
      this.free.splice(lo, 0, { off, size });
    }
  }

  owns(off: number): boolean {
    return this.used.has(off);
  }

  bytesFree(): number {
    return this.freeBytes;
  }

  blocksInUse(): number {
    return this.used.size;
  }
}
