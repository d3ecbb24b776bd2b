// The memo the three message readers share (gRPC requests, thread records, exec_done): a repeat
// gives the very string read before, anything else is decoded as Buffer would decode it.
import { describe, expect, it } from 'vitest';
import { REMEMBER_MAX, StringMemo, utf8 } from '../../src/core/string-memo.js';

const bytesOf = (s: string, pad = 0): Buffer => {
  const b = Buffer.alloc(pad + Buffer.byteLength(s) + pad, 0x7a);
  b.write(s, pad, 'utf8');
  return b;
};

describe('utf8', () => {
  it('decodes ASCII, non-ASCII, long and malformed bytes as Buffer#toString does', () => {
    for (const s of ['', 'INPUT0', 'é', 'Ã©', 'x'.repeat(32), 'y'.repeat(33), '名前', `${'a'.repeat(31)}é`]) {
      const b = bytesOf(s, 3);
      expect(utf8(b, 3, b.length - 3)).toBe(s);
    }
    const bad = Buffer.from([0x61, 0xc3, 0x28, 0xff]);
    expect(utf8(bad, 0, bad.length)).toBe(bad.toString('utf8'));
  });

  it('reads a view that starts inside its ArrayBuffer', () => {
    const whole = bytesOf('FP32', 5);
    const view = new Uint8Array(whole.buffer, whole.byteOffset + 2, whole.length - 2);
    expect(utf8(view, 3, 7)).toBe('FP32');
  });
});

describe('StringMemo', () => {
  it('gives back the remembered string when the bytes repeat, at any offset', () => {
    const memo = new StringMemo();
    const first = memo.read(bytesOf('OUTPUT0', 1), 1, 8);
    expect(first).toBe('OUTPUT0');
    expect(memo.match(bytesOf('OUTPUT0', 4), 4, 11)).toBe(first);
    expect(memo.read(bytesOf('OUTPUT0'), 0, 7)).toBe(first);
  });

  it('tells apart strings of the same length and strings whose bytes differ only past ASCII', () => {
    const memo = new StringMemo();
    memo.read(bytesOf('OUTPUT0'), 0, 7);
    expect(memo.match(bytesOf('OUTPUT1'), 0, 7)).toBeUndefined();
    expect(memo.read(bytesOf('OUTPUT1'), 0, 7)).toBe('OUTPUT1');
    // 'é' is 2 bytes, 'Ã©' is 4: same length in UTF-16 is not the test, bytes are.
    expect(memo.read(bytesOf('é'), 0, 2)).toBe('é');
    expect(memo.match(bytesOf('Ã©'), 0, 4)).toBeUndefined();
    expect(memo.read(bytesOf('Ã©'), 0, 4)).toBe('Ã©');
    expect(memo.read(bytesOf('é'), 0, 2)).toBe('é');
  });

  it('keeps a copy of the bytes, not a view the caller may overwrite', () => {
    const memo = new StringMemo();
    const b = bytesOf('INPUT0');
    memo.read(b, 0, 6);
    b.write('INPUT9', 0);
    expect(memo.match(b, 0, 6)).toBeUndefined();
    expect(memo.match(bytesOf('INPUT0'), 0, 6)).toBe('INPUT0');
  });

  it('matches an empty span before anything was read', () => {
    expect(new StringMemo().match(Buffer.alloc(4), 2, 2)).toBe('');
  });

  it('does not keep a string longer than REMEMBER_MAX, and forgets the one before it', () => {
    const memo = new StringMemo();
    memo.read(bytesOf('INPUT0'), 0, 6);
    const long = 'n'.repeat(REMEMBER_MAX + 1);
    expect(memo.read(bytesOf(long), 0, long.length)).toBe(long);
    expect(memo.match(bytesOf(long), 0, long.length)).toBeUndefined();
    expect(memo.match(bytesOf('INPUT0'), 0, 6)).toBeUndefined();
    const longest = 'm'.repeat(REMEMBER_MAX);
    expect(memo.match(bytesOf(longest), 0, longest.length)).toBeUndefined();
    memo.read(bytesOf(longest), 0, longest.length);
    expect(memo.match(bytesOf(longest), 0, longest.length)).toBe(longest);
  });
});
