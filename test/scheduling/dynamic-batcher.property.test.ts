import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_QUEUE_POLICY, DynamicBatcher } from '../../src/core/scheduling/dynamic-batcher.js';
import { FakeRequest, RecordingInstance, ticks } from './helpers.js';

describe('DynamicBatcher invariants (property)', () => {
  it('limits, signatures, priority order and FIFO hold for any queued mix', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.integer({ min: 1, max: 12 }), { maxLength: 3 }),
        fc.array(fc.record({ rows: fc.integer({ min: 1, max: 12 }), sig: fc.constantFrom('a', 'b'), prio: fc.integer({ min: 0, max: 4 }) }), {
          minLength: 1,
          maxLength: 40,
        }),
        async (maxBatch, preferred, specs) => {
          const inst = new RecordingInstance('i0', false);
          const b = new DynamicBatcher(
            [inst],
            {
              maxBatchSize: maxBatch,
              preferredBatchSizes: preferred,
              maxQueueDelayUs: 0,
              preserveOrdering: false,
              priorityLevels: 3,
              defaultPriorityLevel: 2,
              defaultQueuePolicy: { ...DEFAULT_QUEUE_POLICY },
              priorityQueuePolicy: new Map(),
            },
            () => {},
          );
          b.enqueue(new FakeRequest('blocker'));
          await ticks(1);
          const rs = specs.map((s, i) => new FakeRequest(`r${i}`, { batchSize: Math.min(s.rows, maxBatch), shapeSignature: s.sig, priority: s.prio }));
          rs.forEach((r) => b.enqueue(r));
          while (inst.busy) {
            inst.release();
            await ticks(1);
          }
          const byId = new Map(rs.map((r) => [r.id, r]));
          const batches = inst.batches.slice(1).map((ids) => ids.map((id) => byId.get(id)!));
          const level = (r: FakeRequest) => (r.priority >= 1 && r.priority <= 3 ? r.priority : 2);
          // Exactly once, in priority order, FIFO within a level.
          const expected = rs
            .map((r, i) => ({ r, i }))
            .sort((x, y) => level(x.r) - level(y.r) || x.i - y.i)
            .map((x) => x.r.id);
          expect(batches.flat().map((r) => r.request.id)).toEqual(expected);
          for (const batch of batches) {
            expect(batch.reduce((a, r) => a + r.batchSize, 0)).toBeLessThanOrEqual(maxBatch);
            expect(new Set(batch.map((r) => r.shapeSignature)).size).toBe(1);
          }
          expect(rs.every((r) => r.done && r.error === undefined)).toBe(true);
          expect(b.pendingCount()).toBe(0);
        },
      ),
      { numRuns: 150 },
    );
  });
});
