import { describe, expect, it } from 'vitest';
import { compareUtf8 } from '../../src/core/utf8-order.js';

const sign = (n: number) => Math.sign(n);
const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe('compareUtf8', () => {
  it("orders model names as Triton's std::string keys do", () => {
    expect(['amod', 'zeta', '_cmod', 'Zmod', 'Bmod'].sort(compareUtf8)).toEqual(['Bmod', 'Zmod', '_cmod', 'amod', 'zeta']);
    expect(['ab', 'a', ''].sort(compareUtf8)).toEqual(['', 'a', 'ab']);
  });

  it('agrees with the bytes of the encoded strings, astral and private-use characters included', () => {
    // Characters from each UTF-8 length, and U+E000–U+FFFF, where UTF-16's order and UTF-8's differ.
    const pool = ['a', 'Z', '_', 'é', 'ß', '中', '\ue000', '\uffee', '😀', '𝄞', '\u0800', '\ud7ff'];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % pool.length;
    const word = () => Array.from({ length: 1 + (next() % 4) }, () => pool[next()]!).join('');
    for (let i = 0; i < 5000; i++) {
      const a = word();
      const b = i % 10 === 0 ? a : word();
      expect([a, b, sign(compareUtf8(a, b))]).toEqual([a, b, sign(bytes(a, b))]);
    }
  });
});
