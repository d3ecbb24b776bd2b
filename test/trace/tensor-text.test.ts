/**
 * TENSORS trace data text (src/core/trace/tensor-text.ts): the values below are what
 * tritonserver 2.51 wrote for the same tensors (docs/protocol-notes.md, "Trace"), except INT8 /
 * UINT8 and escaping, where tritium writes valid JSON instead of raw bytes.
 */
import { describe, expect, it } from 'vitest';
import type { Datatype } from '../../src/core/datatype.js';
import { joinBytesElements, type Tensor } from '../../src/core/tensor.js';
import { dataText, shapeText, streamDouble } from '../../src/core/trace/tensor-text.js';

function tensor(datatype: Datatype, data: Buffer, shape = [0]): Tensor {
  return { name: 'T', datatype, shape, data };
}

describe('tensor data text', () => {
  it('prints floats as a C++ stream does (6 significant digits)', () => {
    const f32 = Buffer.from(new Float32Array([0.1, 1e20, 1e-7, 123456789, 1 / 3, -0]).buffer);
    expect(dataText(tensor('FP32', f32))).toBe('0.1,1e+20,1e-07,1.23457e+08,0.333333,-0');
    const f64 = Buffer.from(new Float64Array([0.1, 1e300, -2.5e-300, 3, 1 / 3, Number.NaN]).buffer);
    expect(dataText(tensor('FP64', f64))).toBe('0.1,1e+300,-2.5e-300,3,0.333333,nan');
    expect([Infinity, -Infinity, 1.5, 0.0001, 0.00001, 999999.5, 123456, -2.25e-5].map(streamDouble)).toEqual([
      'inf',
      '-inf',
      '1.5',
      '0.0001',
      '1e-05',
      '1e+06',
      '123456',
      '-2.25e-05',
    ]);
  });

  it('prints integers in decimal, BOOL as 1/0, FP16 not at all', () => {
    expect(dataText(tensor('INT64', Buffer.from(new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n]).buffer)))).toBe('-9223372036854775808,9223372036854775807');
    expect(dataText(tensor('UINT64', Buffer.from(new BigUint64Array([2n ** 64n - 1n, 0n]).buffer)))).toBe('18446744073709551615,0');
    expect(dataText(tensor('INT32', Buffer.from(new Int32Array([5, -6]).buffer)))).toBe('5,-6');
    expect(dataText(tensor('INT8', Buffer.from(new Int8Array([-128, 127]).buffer)))).toBe('-128,127');
    expect(dataText(tensor('BOOL', Buffer.from([1, 0])))).toBe('1,0');
    expect(dataText(tensor('FP16', Buffer.alloc(8)))).toBe('');
  });

  it('quotes BYTES elements', () => {
    expect(dataText(tensor('BYTES', joinBytesElements(['ab', 'c,d', '', 'é'])))).toBe('"ab","c,d","","é"');
  });

  it('writes shapes as dims joined by commas', () => {
    expect(shapeText([2, 3])).toBe('2,3');
    expect(shapeText([4])).toBe('4');
  });

  it('stops at the limit on a whole element, cutting only a BYTES element', () => {
    const ints = Buffer.from(new Int32Array(1000).map((_, i) => i).buffer);
    expect(dataText(tensor('INT32', ints), 10)).toBe('0,1,2,3,4');
    expect(dataText(tensor('BYTES', joinBytesElements(['abc', 'x'.repeat(100)])), 12)).toBe('"abc","xxxx"');
  });
});
