import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/core/errors.js';
import { DefaultScheduler } from '../../src/core/scheduling/default-scheduler.js';
import { FakeRequest, RecordingInstance, ticks } from './helpers.js';

describe('DefaultScheduler', () => {
  it('runs every request as its own execution, FIFO, on any idle instance', async () => {
    const i0 = new RecordingInstance('i0', false);
    const i1 = new RecordingInstance('i1', false);
    const seen: number[] = [];
    const s = new DefaultScheduler([i0, i1], (_b, _t, n) => seen.push(n));
    const rs = Array.from({ length: 5 }, (_, i) => new FakeRequest(`r${i}`, { batchSize: i + 1 }));
    rs.forEach((r) => s.enqueue(r));
    // Dispatch is immediate: two instances busy, three queued.
    expect(i0.batches).toEqual([['r0']]);
    expect(i1.batches).toEqual([['r1']]);
    expect(s.pendingCount()).toBe(3);
    i1.release();
    await ticks(2);
    expect(i1.batches).toEqual([['r1'], ['r2']]);
    i0.release();
    await ticks(2);
    expect(i0.batches).toEqual([['r0'], ['r3']]);
    i0.release();
    await ticks(2);
    i1.release();
    await ticks(2);
    i0.release();
    await Promise.all(rs.map((r) => r.finished));
    expect([...i0.batches, ...i1.batches].every((b) => b.length === 1)).toBe(true);
    expect(seen.sort()).toEqual([1, 2, 3, 4, 5]);
    expect(s.pendingCount()).toBe(0);
  });

  it('pipelines into an instance that accepts it, after every instance has one batch', async () => {
    const i0 = new RecordingInstance('i0', false, 2);
    const i1 = new RecordingInstance('i1', false, 2);
    const s = new DefaultScheduler([i0, i1], () => {});
    const rs = Array.from({ length: 6 }, (_, i) => new FakeRequest(`r${i}`));
    rs.forEach((r) => s.enqueue(r));
    // Idle instances first (r0, r1), then one queued batch each (r2, r3); the rest waits.
    expect(i0.batches).toEqual([['r0'], ['r2']]);
    expect(i1.batches).toEqual([['r1'], ['r3']]);
    // Pending: not started yet, in the scheduler's queue (r4, r5) or an instance's (r2, r3).
    expect(s.pendingCount()).toBe(4);
    i0.release();
    await ticks(2);
    // A slot freed on i0: it gets the next request while it still runs r2.
    expect(i0.batches).toEqual([['r0'], ['r2'], ['r4']]);
    expect(i0.held.length).toBe(2);
    for (const i of [i0, i1, i0, i1, i0]) {
      i.release();
      await ticks(2);
    }
    await Promise.all(rs.map((r) => r.finished));
    expect(s.pendingCount()).toBe(0);
  });

  it('pipelines beyond two batches only while executions are short', async () => {
    const i0 = new RecordingInstance('i0', false, 4);
    const s = new DefaultScheduler([i0], () => {});
    const rs = Array.from({ length: 7 }, (_, i) => new FakeRequest(`r${i}`));
    rs.forEach((r) => s.enqueue(r));
    // Its executions are not known yet: two batches at most.
    expect(i0.held.map((h) => h.batch[0]!.request.id)).toEqual(['r0', 'r1']);
    i0.release(true, 20_000n);
    await ticks(2);
    // A 20 µs execution is short: up to four batches now.
    expect(i0.held.map((h) => h.batch[0]!.request.id)).toEqual(['r1', 'r2', 'r3', 'r4']);
    // r5 and r6 in the scheduler's queue, r2–r4 behind r1 in the instance's.
    expect(s.pendingCount()).toBe(5);
    // A 50 ms one lifts the mean above 1 ms: back to two, so nothing more is handed over until
    // two of the four queued have been answered.
    i0.release(true, 50_000_000n);
    await ticks(2);
    expect(i0.held.length).toBe(3);
    i0.release(true, 50_000_000n);
    await ticks(2);
    expect(i0.held.length).toBe(2);
    expect(s.pendingCount()).toBe(3);
    i0.release(true, 50_000_000n);
    await ticks(2);
    expect(i0.held.map((h) => h.batch[0]!.request.id)).toEqual(['r4', 'r5']);
    while (i0.held.length > 0) {
      i0.release(true, 50_000_000n);
      await ticks(2);
    }
    await Promise.all(rs.map((r) => r.finished));
    expect(i0.batches.flat()).toEqual(rs.map((r) => r.request.id));
  });

  it("judges short executions on the instance's own time where it tells it", async () => {
    // A stub reports its own time for a batch: a 20 µs execute that Node saw answered 3 ms
    // after the send (the stub's wake-up, a busy host) is short, and a 50 ms one Node saw
    // answered at once (it ran while Node was busy elsewhere) is long.
    const i0 = new RecordingInstance('i0', false, 4);
    const s = new DefaultScheduler([i0], () => {});
    const rs = Array.from({ length: 7 }, (_, i) => new FakeRequest(`r${i}`));
    rs.forEach((r) => s.enqueue(r));
    expect(i0.held.length).toBe(2);
    i0.release(true, 3_000_000n, 20_000);
    await ticks(2);
    expect(i0.held.map((h) => h.batch[0]!.request.id)).toEqual(['r1', 'r2', 'r3', 'r4']);
    i0.release(true, 10_000n, 50_000_000);
    await ticks(2);
    // The mean is past 1 ms: nothing more until at most one batch is queued behind the running one.
    expect(i0.held.length).toBe(3);
    while (i0.held.length > 0) {
      i0.release(true, 10_000n, 50_000_000);
      await ticks(2);
    }
    await Promise.all(rs.map((r) => r.finished));
    expect(i0.batches.flat()).toEqual(rs.map((r) => r.request.id));
  });

  it('queues the next batch on the instance with the fewest batches', async () => {
    const i0 = new RecordingInstance('i0', false, 4);
    const i1 = new RecordingInstance('i1', false, 4);
    const s = new DefaultScheduler([i0, i1], () => {});
    const rs = Array.from({ length: 8 }, (_, i) => new FakeRequest(`r${i}`));
    for (const r of rs.slice(0, 4)) s.enqueue(r);
    expect(i0.batches).toEqual([['r0'], ['r2']]);
    expect(i1.batches).toEqual([['r1'], ['r3']]);
    // Short executions on both: each may queue four now; one batch runs on each.
    i0.release();
    i1.release();
    await ticks(2);
    for (const r of rs.slice(4)) s.enqueue(r);
    // Not the first instance with room until it is full: the less loaded one each time.
    expect(i0.batches.flat()).toEqual(['r0', 'r2', 'r4', 'r6']);
    expect(i1.batches.flat()).toEqual(['r1', 'r3', 'r5', 'r7']);
    for (const i of [i0, i0, i0, i1, i1, i1]) {
      i.release();
      await ticks(2);
    }
    await Promise.all(rs.map((r) => r.finished));
    expect(s.pendingCount()).toBe(0);
  });

  it('waits for a ready instance and resumes on kick()', async () => {
    const i0 = new RecordingInstance('i0');
    i0.ready = false;
    const s = new DefaultScheduler([i0], () => {});
    const r = new FakeRequest('r');
    s.enqueue(r);
    await ticks(2);
    expect(i0.batches).toEqual([]);
    expect(s.pendingCount()).toBe(1);
    i0.ready = true;
    s.kick();
    await r.finished;
    expect(i0.batches).toEqual([['r']]);
    expect(r.queueEndNs).toBeDefined();
  });

  it('fails cancelled requests instead of running them', async () => {
    const i0 = new RecordingInstance('i0', false);
    const s = new DefaultScheduler([i0], () => {});
    const a = new FakeRequest('a');
    const b = new FakeRequest('b');
    s.enqueue(a);
    s.enqueue(b);
    b.cancelled = true;
    i0.release();
    await b.finished;
    expect(b.error?.code).toBe(ErrorCode.CANCELLED);
    expect(i0.batches).toEqual([['a']]);
  });

  it('stop() fails what is queued and refuses new requests', () => {
    const i0 = new RecordingInstance('i0', false);
    const s = new DefaultScheduler([i0], () => {});
    const [a, b] = [new FakeRequest('a'), new FakeRequest('b')];
    s.enqueue(a);
    s.enqueue(b);
    s.stop();
    expect(b.error?.code).toBe(ErrorCode.UNAVAILABLE);
    const c = new FakeRequest('c');
    s.enqueue(c);
    expect(c.error?.message).toMatch(/stopped accepting/);
    expect(a.done).toBe(false);
    i0.release();
  });

  it('answers the batch when execute() rejects against its contract', async () => {
    const s = new DefaultScheduler([{ name: 'bad', isReady: () => true, execute: () => Promise.reject(new Error('kaput')) }], () => {});
    const r = new FakeRequest('r');
    s.enqueue(r);
    await r.finished;
    expect(r.error?.code).toBe(ErrorCode.INTERNAL);
    expect(r.error?.message).toBe('kaput');
  });
});
