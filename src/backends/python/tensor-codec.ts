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
 * Copies a tensor into shared memory; returns its descriptor, whose segment and offset (`d[3]`,
 * `d[4]`) are also the block to free later.
 */
export function writeInput(channel: StubChannel, t: Tensor): TensorDescriptor {
  const n = t.data.length;
  const d: TensorDescriptor = [t.name, t.datatype, t.shape, '', 0, n];
  // Zero-size tensors still get a (minimal) block so the stub sees a valid address.
  channel.copyInput(t.data, n, Math.max(n, 1), d, 3);
  return d;
}

/** Output descriptor → a Tensor viewing shared memory (valid until its block, put in `blocks[at]`, is released). */
export function readOutput(channel: StubChannel, d: TensorDescriptor, blocks: Block[], at: number): Tensor {
  const [name, datatype, shape, seg, off, nbytes] = d;
  blocks[at] = [seg, off];
  return { name, datatype: datatype as Datatype, shape, data: nbytes > 0 ? channel.view(seg, off, nbytes) : EMPTY };
}

/** The data of an empty output (never written to). */
const EMPTY = Buffer.alloc(0);
