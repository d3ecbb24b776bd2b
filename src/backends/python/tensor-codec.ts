/**
 * @module backends/python/tensor-codec
 * Tensors ↔ the descriptors of docs/ipc.md (`[name, datatype, shape, segment, offset, nbytes]`).
 * Inputs are copied once into Node's arena; outputs are read in place from the stub's arena,
 * except small ones, which came inline (`[name, datatype, shape, data]`, already a copy).
 */
import type { Datatype } from '../../core/datatype.js';
import type { Tensor } from '../../core/tensor.js';
import type { StubChannel } from './ipc/channel.js';
import type { BlockRef, OutputDescriptor, TensorDescriptor } from './ipc/messages.js';

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
