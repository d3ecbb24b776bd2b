/**
 * @module backends/python/tensor-codec
 * Tensors ↔ the descriptors of docs/ipc.md (`[name, datatype, shape, segment, offset, nbytes]`).
 * A request's inputs are copied once into Node's arena (the small ones into one block with its
 * cancel flag); outputs are read in place from the stub's arena, except small ones, which came
 * inline (`[name, datatype, shape, data]`, already a copy).
 */
import type { Datatype } from '../../core/datatype.js';
import type { Tensor } from '../../core/tensor.js';
import type { StubChannel } from './ipc/channel.js';
import type { BlockRef, OutputDescriptor, TensorDescriptor } from './ipc/messages.js';
import { BLOCK_ALIGN } from './ipc/shm-layout.js';

export type { TensorDescriptor } from './ipc/messages.js';
export type Block = BlockRef;

/**
 * Inputs of more than this many bytes get a block of their own; smaller ones share their
 * request's block. Above it an arena call costs nothing beside the copy, and a large tensor keeps
 * a segment to itself that is hollowed once it is freed (docs/ipc.md, "Segments").
 */
export const SHARED_INPUT_MAX_BYTES = 64 * 1024;

/** Whether the input of descriptor `d` (from writeRequestInputs) has a block of its own. */
const ownsBlock = (d: TensorDescriptor): boolean => d[5] > SHARED_INPUT_MAX_BYTES;

/**
 * Copies a request's cancel flag word (`flag`, 4 bytes) and its input tensors into Node's arena:
 * the flag and every input of at most SHARED_INPUT_MAX_BYTES in one block, each part at
 * BLOCK_ALIGN, the flag first. They live exactly as long as the request, so one allocation and
 * one free serve them all, where an arena call each per tensor and per flag was a good part of
 * the Node side of `exec`. `cflag` receives the flag's [segment, offset], which is also that
 * block's. Returns the descriptors; free with freeRequestInputs. Throws if the arenas cannot
 * grow, with nothing left allocated.
 */
export function writeRequestInputs(channel: StubChannel, tensors: readonly Tensor[], flag: Buffer, cflag: Block): TensorDescriptor[] {
  const n = tensors.length;
  let size = BLOCK_ALIGN;
  // Zero-size tensors still get a (minimal) part so the stub sees a valid address.
  for (let i = 0; i < n; i++) {
    const len = tensors[i]!.data.length;
    if (len <= SHARED_INPUT_MAX_BYTES) size += alignUp(Math.max(len, 1));
  }
  const base = channel.allocBlockIn(size);
  const seg = channel.lastBlockSegment;
  const bytes = channel.lastBlockBytes;
  flag.copy(bytes, base, 0, 4);
  cflag[0] = seg;
  cflag[1] = base;
  const descs: TensorDescriptor[] = new Array(n);
  let off = base + BLOCK_ALIGN;
  let i = 0;
  try {
    for (; i < n; i++) {
      const t = tensors[i]!;
      const len = t.data.length;
      if (len <= SHARED_INPUT_MAX_BYTES) {
        if (len > 0) t.data.copy(bytes, off, 0, len);
        descs[i] = [t.name, t.datatype, t.shape, seg, off, len];
        off += alignUp(Math.max(len, 1));
      } else {
        const own = channel.allocBlockIn(len);
        t.data.copy(channel.lastBlockBytes, own, 0, len);
        descs[i] = [t.name, t.datatype, t.shape, channel.lastBlockSegment, own, len];
      }
    }
  } catch (err) {
    // The request never becomes live: give back what it took so far.
    for (let k = 0; k < i; k++) {
      const d = descs[k]!;
      if (ownsBlock(d)) channel.freeInput(d[3], d[4]);
    }
    channel.freeInput(seg, base);
    throw err;
  }
  return descs;
}

/** Frees the blocks of a request written by writeRequestInputs: its own block and each large input's. */
export function freeRequestInputs(channel: StubChannel, cflag: Block, inputs: readonly TensorDescriptor[]): void {
  for (let i = 0; i < inputs.length; i++) {
    const d = inputs[i]!;
    if (ownsBlock(d)) channel.freeInput(d[3], d[4]);
  }
  channel.freeInput(cflag[0], cflag[1]);
}

/** How many blocks freeRequestInputs frees for `inputs`: the request's own and each large input's. */
export function requestInputBlocks(inputs: readonly TensorDescriptor[]): number {
  let n = 1;
  for (let i = 0; i < inputs.length; i++) if (ownsBlock(inputs[i]!)) n++;
  return n;
}

/** `n` rounded up to BLOCK_ALIGN (arithmetic, not bitwise: a part may pass 2 GiB). */
function alignUp(n: number): number {
  return Math.ceil(n / BLOCK_ALIGN) * BLOCK_ALIGN;
}

/**
 * Output descriptor → a Tensor: an inline output's own bytes, or a view of shared memory (valid
 * until its block, appended to `blocks`, is released).
 */
export function readOutput(channel: StubChannel, d: OutputDescriptor, blocks: Block[]): Tensor {
  if (d.length === 4) {
    // The hand-written exec_done reader gives a Buffer; msgpackr's (an unusual message) may not.
    const data = Buffer.isBuffer(d[3]) ? d[3] : Buffer.from(d[3].buffer, d[3].byteOffset, d[3].byteLength);
    return { name: d[0], datatype: d[1] as Datatype, shape: d[2], data };
  }
  const [name, datatype, shape, seg, off, nbytes] = d;
  blocks.push([seg, off]);
  return { name, datatype: datatype as Datatype, shape, data: nbytes > 0 ? channel.view(seg, off, nbytes) : EMPTY };
}

/** The blocks of outputs that will not be read (their response went nowhere): inline ones have none. */
export function outputBlocks(outs: readonly OutputDescriptor[]): Block[] {
  const blocks: Block[] = [];
  for (const d of outs) if (d.length === 6) blocks.push([d[3], d[4]]);
  return blocks;
}

/** The data of an empty output (never written to). */
const EMPTY = Buffer.alloc(0);
