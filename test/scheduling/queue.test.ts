import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PriorityQueue, Ring } from '../../src/core/scheduling/queue.js';

describe('Ring', () => {
  it('behaves like an array used as a FIFO (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.integer(), fc.constant<'shift'>('shift')), { maxLength: 300 }), (ops) => {
        const ring = new Ring<number>(2);
        const model: number[] = [];
        for (const op of ops) {
          if (op === 'shift') expect(ring.shift()).toBe(model.shift());
          else {
            ring.push(op);
            model.push(op);
          }
          expect(ring.length).toBe(model.length);
          expect(ring.peek()).toBe(model[0]);
        }
        for (let i = 0; i < model.length; i++) expect(ring.at(i)).toBe(model[i]);
        ring.retain((v) => v % 2 === 0);
        expect(ring.drain()).toEqual(model.filter((v) => v % 2 === 0));
        expect(ring.length).toBe(0);
      }),
    );
  });
});

describe('PriorityQueue', () => {
  it('serves levels in order, main before delayed, skipping dead items', () => {
    type Item = { dead: boolean; id: string };
    const q = new PriorityQueue<Item>(2);
    const mk = (id: string): Item => ({ dead: false, id });
    const a = mk('a');
    q.push(1, a);
    q.push(1, mk('b'));
    const c = mk('c');
    q.push(0, c);
    q.push(0, mk('d'));
    q.moveToDelayed(0, c, mk('c*'));
    q.kill(1, a);
    expect(q.size).toBe(3);
    expect(q.levels[1]!.live).toBe(1);
    const order: string[] = [];
    for (let it = q.shiftLive(); it; it = q.shiftLive()) order.push(it.id);
    expect(order).toEqual(['d', 'c*', 'b']);
    expect(q.size).toBe(0);
  });
});
