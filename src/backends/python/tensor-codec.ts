/**
 * @module backends/python/tensor-codec
 * Tensors ↔ the descriptors of docs/ipc.md (`[name, datatype, shape, segment, offset, nbytes]`).
 * Inputs are copied once into Node's arena; outputs are read in place from the stub's arena.
 */
import type { Datatype } from '../../core/datatype.js';
import type { Tensor } from '../../core/tensor.js';
import type { StubChannel } from './ipc/channel.js';
import type { BlockRef, TensorDescriptor } from './ipc/messages.js';

export type { TensorDescriptor } from './ipc/messages.js';
export type Block = BlockRef;

/**
 * Copies a tensor into shared memory; returns its descriptor. The block to free later goes to
 * `blocks[at]` (the caller sizes `blocks`: no array growth per request).
 */
export function writeInput(channel: StubChannel, t: Tensor, blocks: Block[], at: number): TensorDescriptor {
  const n = t.data.length;
  // Zero-size tensors still get a (minimal) block so the stub sees a valid address.
  const { seg, off, view } = channel.allocInput(Math.max(n, 1));
  if (n > 0) t.data.copy(view, 0, 0, n);
  blocks[at] = [seg, off];
  return [t.name, t.datatype, t.shape, seg, off, n];
}

/** Output descriptor → a Tensor viewing shared memory (valid until its block, put in `blocks[at]`, is released). */
export function readOutput(channel: StubChannel, d: TensorDescriptor, blocks: Block[], at: number): Tensor {
  const [name, datatype, shape, seg, off, nbytes] = d;
  blocks[at] = [seg, off];
  return { name, datatype: datatype as Datatype, shape, data: nbytes > 0 ? channel.view(seg, off, nbytes) : EMPTY };
}

/** The data of an empty output (never written to). */
const EMPTY = Buffer.alloc(0);
