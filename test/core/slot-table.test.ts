import { describe, expect, it } from 'vitest';
import { SlotTable } from '../../src/core/slot-table.js';

describe('SlotTable', () => {
  it('finds, deletes and counts entries under increasing keys', () => {
    const t = new SlotTable<string>(8);
    for (let k = 1; k <= 5; k++) t.set(k, `v${k}`);
    expect(t.size).toBe(5);
    expect(t.get(3)).toBe('v3');
    expect(t.delete(3)).toBe(true);
    expect(t.delete(3)).toBe(false);
    expect(t.get(3)).toBeUndefined();
    expect(t.get(9)).toBeUndefined(); // same slot as 1, another key
    expect(t.size).toBe(4);
    expect(t.keys()).toEqual([1, 2, 4, 5]);
  });

  it('keeps an entry still open when a later key lands on its slot', () => {
    const t = new SlotTable<string>(4);
    t.set(1, 'long stream');
    for (let k = 2; k <= 12; k++) {
      t.set(k, `v${k}`);
      if (k !== 5 && k !== 9) t.delete(k);
    }
    // 5 and 9 both took slot 1: the open entries moved aside, none lost.
    expect(t.get(1)).toBe('long stream');
    expect(t.get(5)).toBe('v5');
    expect(t.get(9)).toBe('v9');
    expect(t.size).toBe(3);
    expect(t.keys()).toEqual([1, 5, 9]);
    expect(t.delete(1)).toBe(true);
    expect(t.delete(5)).toBe(true);
    expect(t.keys()).toEqual([9]);
  });

  it('spreads keys that step by two (HTTP/2 client streams) over every slot', () => {
    const t = new SlotTable<number>(4, 1);
    for (const id of [1, 3, 5, 7]) t.set(id, id);
    expect(t.keys()).toEqual([1, 3, 5, 7]);
    t.set(9, 9); // the slot of 1, which is still open
    expect([1, 3, 5, 7, 9].map((id) => t.get(id))).toEqual([1, 3, 5, 7, 9]);
  });

  it('takes keys past 2^32', () => {
    const t = new SlotTable<string>(16);
    const big = 2 ** 32 + 5;
    t.set(big, 'big');
    t.set(5, 'small');
    expect(t.get(big)).toBe('big');
    expect(t.get(5)).toBe('small');
    expect(t.keys()).toEqual([5, big]);
  });

  it('drains everything it holds, oldest first, and is empty after', () => {
    const t = new SlotTable<string>(2);
    t.set(1, 'a');
    t.set(2, 'b');
    t.set(3, 'c'); // moves 1 aside
    expect(t.drain()).toEqual(['a', 'b', 'c']);
    expect(t.size).toBe(0);
    expect(t.keys()).toEqual([]);
    expect(t.get(2)).toBeUndefined();
  });

  it('refuses a slot count that is not a power of two', () => {
    expect(() => new SlotTable(12)).toThrow(/power of two/);
  });
});
