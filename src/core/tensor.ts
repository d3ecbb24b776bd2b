/**
 * @module core/tensor
 * A tensor as it crosses tritium: name, datatype, shape and its raw bytes. Fixed-size types are
 * little-endian C-order elements; BYTES is the concatenation of `u32 LE length + bytes` per
 * element — the layout of Triton's HTTP binary extension, gRPC raw contents and the Python stub,
 * so the same buffer travels from socket to shared memory without re-encoding.
 */
import type { Datatype } from './datatype.js';
import { elementSize } from './datatype.js';
import type { ShmRef } from './extensions/shared-memory.js';

export interface Tensor {
  name: string;
  datatype: Datatype;
  shape: number[];
  /** Raw bytes (a view; may point into a request body or shared memory). */
  data: Buffer;
  /**
   * The tensor's bytes live in a client shared-memory region: for an input, where the core is
   * to find them (data is empty until then); for an output, where they were written (data is
   * empty, and responses carry name, datatype and shape only).
   */
  shm?: ShmRef;
}

export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Expected byte size of a fixed-size tensor, or undefined for BYTES. */
export function expectedByteSize(datatype: Datatype, shape: readonly number[]): number | undefined {
  const size = elementSize(datatype);
  return size === 0 ? undefined : size * elementCount(shape);
}

/**
 * Counts the elements of a BYTES buffer; returns -1 if a length prefix runs past the end
 * (a truncated or lying buffer), so callers can reject it with Triton's error.
 */
export function countBytesElements(buf: Buffer): number {
  let off = 0;
  let n = 0;
  while (off < buf.length) {
    if (off + 4 > buf.length) return -1;
    const len = buf.readUInt32LE(off);
    off += 4 + len;
    if (off > buf.length) return -1;
    n++;
  }
  return n;
}

/** Splits a BYTES buffer into its elements (views, no copy). Assumes a valid buffer. */
export function splitBytesElements(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let off = 0;
  while (off + 4 <= buf.length) {
    const len = buf.readUInt32LE(off);
    out.push(buf.subarray(off + 4, off + 4 + len));
    off += 4 + len;
  }
  return out;
}

/** Serialises elements into the length-prefixed BYTES layout. */
export function joinBytesElements(elems: readonly (Buffer | Uint8Array | string)[]): Buffer {
  const parts = elems.map((e) => (typeof e === 'string' ? Buffer.from(e, 'utf8') : Buffer.from(e.buffer, e.byteOffset, e.byteLength)));
  let total = 0;
  for (const p of parts) total += 4 + p.length;
  const out = Buffer.allocUnsafe(total);
  let off = 0;
  for (const p of parts) {
    out.writeUInt32LE(p.length, off);
    off += 4;
    p.copy(out, off);
    off += p.length;
  }
  return out;
}
