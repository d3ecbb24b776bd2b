/**
 * A request's inputs in Node's arena (tensor-codec's writeRequestInputs): the cancel flag and the
 * small inputs in one block, large inputs in blocks of their own, every part where its descriptor
 * says, and nothing left allocated after freeRequestInputs or a failed write. A real channel
 * (real segments and arena), without a stub: nothing here needs one.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Datatype } from '../../../src/core/datatype.js';
import type { Tensor } from '../../../src/core/tensor.js';
import { StubChannel, newRegionName } from '../../../src/backends/python/ipc/channel.js';
import { BLOCK_ALIGN } from '../../../src/backends/python/ipc/shm-layout.js';
import { SHARED_INPUT_MAX_BYTES, freeRequestInputs, writeRequestInputs, type Block } from '../../../src/backends/python/tensor-codec.js';

const MiB = 1 << 20;
const channels: StubChannel[] = [];

afterEach(() => {
  for (const ch of channels.splice(0)) ch.close();
});

function channel(): StubChannel {
  const ch = StubChannel.create({ region: newRegionName('codec'), defaultByteSize: MiB, growthByteSize: MiB, ringByteSize: 64 * 1024 });
  channels.push(ch);
  return ch;
}

/** A tensor of `n` bytes, each byte its index + `seed` (mod 256). */
function tensor(name: string, n: number, seed: number, datatype: Datatype = 'UINT8'): Tensor {
  const data = Buffer.alloc(n);
  for (let i = 0; i < n; i++) data[i] = (i + seed) & 0xff;
  return { name, datatype, shape: [n], data };
}

const FLAG_SET = Buffer.from([1, 0, 0, 0]);

describe('writeRequestInputs', () => {
  it('puts the flag and the small inputs in one block, aligned, and a large input in a block of its own', () => {
    const ch = channel();
    const small = tensor('A', 16, 1);
    const empty = tensor('B', 0, 0);
    const large = tensor('C', SHARED_INPUT_MAX_BYTES + 1, 3);
    const edge = tensor('D', SHARED_INPUT_MAX_BYTES, 4);
    const cflag = ['', 0] as Block;
    const d = writeRequestInputs(ch, [small, empty, large, edge], FLAG_SET, cflag);

    expect(ch.view(cflag[0], cflag[1], 4).readUInt32LE(0)).toBe(1);
    // In order after the flag, each at BLOCK_ALIGN; the empty one takes a minimal part.
    expect(d[0]!.slice(0, 3)).toEqual(['A', 'UINT8', [16]]);
    expect([d[0]![3], d[0]![4]]).toEqual([cflag[0], cflag[1] + BLOCK_ALIGN]);
    expect([d[1]![3], d[1]![4], d[1]![5]]).toEqual([cflag[0], cflag[1] + 2 * BLOCK_ALIGN, 0]);
    expect([d[3]![3], d[3]![4]]).toEqual([cflag[0], cflag[1] + 3 * BLOCK_ALIGN]);
    // The large one lies outside the request's block.
    const [, , , seg, off, n] = d[2]!;
    expect(n).toBe(large.data.length);
    const blockEnd = cflag[1] + 3 * BLOCK_ALIGN + SHARED_INPUT_MAX_BYTES;
    expect(seg !== cflag[0] || off >= blockEnd || off + n <= cflag[1]).toBe(true);
    for (const x of d) expect(x[4] % BLOCK_ALIGN).toBe(0);
    // Every input's bytes are where its descriptor says.
    for (const [i, t] of [small, empty, large, edge].entries()) expect(ch.view(d[i]![3], d[i]![4], d[i]![5]).equals(t.data)).toBe(true);

    expect(ch.inputBlocksInUse()).toBe(2);
    freeRequestInputs(ch, cflag, d);
    expect(ch.inputBlocksInUse()).toBe(0);
  });

  it('takes one block for a request of small inputs', () => {
    const ch = channel();
    const cflag = ['', 0] as Block;
    const d = writeRequestInputs(ch, [tensor('INPUT0', 64, 0, 'FP32'), tensor('INPUT1', 64, 9, 'FP32')], Buffer.alloc(4), cflag);
    expect(ch.inputBlocksInUse()).toBe(1);
    expect(ch.view(cflag[0], cflag[1], 4).readUInt32LE(0)).toBe(0);
    expect(ch.view(d[1]![3], d[1]![4], 64)[0]).toBe(9);
    freeRequestInputs(ch, cflag, d);
    expect(ch.inputBlocksInUse()).toBe(0);
  });

  it('gives back what it took when an input cannot be placed, and throws', () => {
    const ch = channel();
    // A tensor claiming more bytes than any arena can hold: its allocation is refused after the
    // request's block and the large input before it were taken.
    const impossible = { name: 'X', datatype: 'UINT8', shape: [1], data: { length: 2 ** 60 } } as unknown as Tensor;
    const cflag = ['', 0] as Block;
    expect(() => writeRequestInputs(ch, [tensor('A', 8, 0), tensor('B', 2 * SHARED_INPUT_MAX_BYTES, 1), impossible], FLAG_SET, cflag)).toThrow(RangeError);
    expect(ch.inputBlocksInUse()).toBe(0);
    // The arena still serves the next request.
    const d = writeRequestInputs(ch, [tensor('A', 8, 5)], FLAG_SET, cflag);
    expect(ch.view(d[0]![3], d[0]![4], 8)[0]).toBe(5);
    freeRequestInputs(ch, cflag, d);
    expect(ch.inputBlocksInUse()).toBe(0);
  });
});
