import { afterEach, describe, expect, it, vi } from 'vitest';
import { ErrorCode, Errors } from '../../src/core/errors.js';
import { DEFAULT_QUEUE_POLICY, DynamicBatcher, type DynamicBatchingOptions, type QueuePolicy } from '../../src/core/scheduling/dynamic-batcher.js';
import type { ExecutionObserver } from '../../src/core/scheduling/types.js';
import { FakeRequest, Journal, okResponse, RecordingInstance, sum, tick, ticks } from './helpers.js';

function options(o: Partial<DynamicBatchingOptions> = {}): DynamicBatchingOptions {
  return {
    maxBatchSize: 10,
    preferredBatchSizes: [],
    maxQueueDelayUs: 0,
    preserveOrdering: false,
    priorityLevels: 0,
    defaultPriorityLevel: 0,
    defaultQueuePolicy: { ...DEFAULT_QUEUE_POLICY },
    priorityQueuePolicy: new Map(),
    ...o,
  };
}

function policy(p: Partial<QueuePolicy>): QueuePolicy {
  return { ...DEFAULT_QUEUE_POLICY, ...p };
}

const noop: ExecutionObserver = () => {};

function reqs(n: number, prefix = 'r', init: ConstructorParameters<typeof FakeRequest>[1] = {}): FakeRequest[] {
  return Array.from({ length: n }, (_, i) => new FakeRequest(`${prefix}${i}`, init));
}

/** Private state, for "no timer left behind" checks. */
function timerOf(b: DynamicBatcher): unknown {
  return (b as unknown as { timer: unknown }).timer;
}

afterEach(() => {
  vi.useRealTimers();
});

describe('DynamicBatcher batch formation', () => {
  it('max_batch_size 10, 200 ms delay, 20 concurrent requests → two batches of 10', async () => {
    const inst = new RecordingInstance('i0');
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 10, maxQueueDelayUs: 200_000 }), noop);
    const rs = reqs(20);
    rs.forEach((r) => b.enqueue(r));
    expect(b.pendingCount()).toBe(20);
    await Promise.all(rs.map((r) => r.finished));
    expect(inst.batches.map((x) => x.length)).toEqual([10, 10]);
    expect(inst.batches.flat()).toEqual(rs.map((r) => r.id));
    expect(rs.every((r) => r.error === undefined && r.queueEndNs !== undefined)).toBe(true);
    expect(b.pendingCount()).toBe(0);
    expect(timerOf(b)).toBeNull();
  });

  it('never pipelines: the next batch forms when the instance frees, holding what came meanwhile', async () => {
    const inst = new RecordingInstance('i0', false, 2);
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 10 }), noop);
    const first = reqs(3, 'a');
    first.forEach((r) => b.enqueue(r));
    await ticks(2);
    const later = reqs(4, 'b');
    later.forEach((r) => b.enqueue(r));
    await ticks(2);
    // The instance accepts two batches, but the batcher hands it one at a time.
    expect(inst.batches).toEqual([['a0', 'a1', 'a2']]);
    inst.release();
    await ticks(2);
    expect(inst.batches[1]).toEqual(['b0', 'b1', 'b2', 'b3']);
    inst.release();
    await Promise.all([...first, ...later].map((r) => r.finished));
  });

  it('102 requests → ten batches of 10, then a batch of 2 released by the delay', async () => {
    const inst = new RecordingInstance('i0');
    const observed: number[] = [];
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 10, maxQueueDelayUs: 200_000 }), (_b, _t, n) => observed.push(n));
    const rs = reqs(102);
    const t0 = performance.now();
    rs.forEach((r) => b.enqueue(r));
    await Promise.all(rs.slice(0, 100).map((r) => r.finished));
    // The full batches went out without waiting for the delay; the last two are still queued.
    expect(inst.batches.map((x) => x.length)).toEqual(Array(10).fill(10));
    expect(b.pendingCount()).toBe(2);
    await Promise.all(rs.map((r) => r.finished));
    // A lower bound only: load can make it later, never earlier.
    expect(performance.now() - t0).toBeGreaterThanOrEqual(195);
    expect(inst.batches.map((x) => x.length)).toEqual([...Array(10).fill(10), 2]);
    expect(observed).toEqual([...Array(10).fill(10), 2]);
    expect(timerOf(b)).toBeNull();
  });

  it('groups requests of 1–6 rows without exceeding max_batch_size, in order', async () => {
    const inst = new RecordingInstance('i0', false);
    const observed: number[] = [];
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 10 }), (_b, _t, n) => observed.push(n));
    const sizes = [3, 4, 2, 6, 1, 5, 5, 2, 6, 3, 1, 1, 4, 6, 6, 2];
    const rs = sizes.map((s, i) => new FakeRequest(`r${i}`, { batchSize: s }));
    const size = new Map(rs.map((r) => [r.id, r.batchSize]));
    // Hold the instance with a first request so that everything else queues up.
    const first = new FakeRequest('first');
    b.enqueue(first);
    await tick();
    rs.forEach((r) => b.enqueue(r));
    while (inst.busy) {
      inst.release();
      await ticks(2);
    }
    const batches = inst.batches.slice(1);
    expect(batches.flat()).toEqual(rs.map((r) => r.id));
    const rowsOf = (ids: string[]) => sum(ids.map((id) => size.get(id)!));
    for (let i = 0; i < batches.length; i++) {
      const rows = rowsOf(batches[i]!);
      expect(rows).toBeLessThanOrEqual(10);
      // Greedy: the next request would not have fitted.
      if (i + 1 < batches.length) expect(rows + size.get(batches[i + 1]![0]!)!).toBeGreaterThan(10);
    }
    expect(batches.map(rowsOf)).toEqual([9, 7, 10, 8, 9, 6, 8]);
    expect(observed.slice(1)).toEqual([9, 7, 10, 8, 9, 6, 8]);
  });

  it('sends a preferred size at once and keeps the rest queued until its delay or the next preferred size', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
    const inst = new RecordingInstance('i0');
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 16, preferredBatchSizes: [4, 8], maxQueueDelayUs: 10_000_000 }), noop);
    const rs = reqs(11);
    rs.forEach((r) => b.enqueue(r));
    await vi.advanceTimersByTimeAsync(1);
    expect(inst.batches.map((x) => x.length)).toEqual([8]);
    expect(b.pendingCount()).toBe(3);
    await vi.advanceTimersByTimeAsync(1000);
    expect(inst.batches.length).toBe(1); // 3 is not preferred: still waiting for the delay
    b.enqueue(new FakeRequest('r11'));
    await vi.advanceTimersByTimeAsync(1);
    expect(inst.batches.map((x) => x.length)).toEqual([8, 4]);
    // A lone request waits for the whole delay, then goes.
    b.enqueue(new FakeRequest('late'));
    await vi.advanceTimersByTimeAsync(9_000);
    expect(inst.batches.length).toBe(2);
    await vi.advanceTimersByTimeAsync(1_001);
    expect(inst.batches.map((x) => x.length)).toEqual([8, 4, 1]);
    expect(timerOf(b)).toBeNull();
  });

  it('with no delay, sends the preferred candidate and then the rest', async () => {
    const inst = new RecordingInstance('i0');
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 8, preferredBatchSizes: [4] }), noop);
    const rs = reqs(6);
    rs.forEach((r) => b.enqueue(r));
    await Promise.all(rs.map((r) => r.finished));
    expect(inst.batches.map((x) => x.length)).toEqual([4, 2]);
  });

  it('never batches different shape signatures together', async () => {
    const inst = new RecordingInstance('i0');
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 8 }), noop);
    const sigs = ['a', 'a', 'b', 'b', 'b', 'a'];
    const rs = sigs.map((s, i) => new FakeRequest(`${s}${i}`, { shapeSignature: s }));
    rs.forEach((r) => b.enqueue(r));
    await Promise.all(rs.map((r) => r.finished));
    expect(inst.batches).toEqual([['a0', 'a1'], ['b2', 'b3', 'b4'], ['a5']]);
  });

  it('a different signature closes a batch that waits for its delay', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
    const inst = new RecordingInstance('i0');
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 8, maxQueueDelayUs: 5_000_000 }), noop);
    b.enqueue(new FakeRequest('a0', { shapeSignature: 'a' }));
    b.enqueue(new FakeRequest('a1', { shapeSignature: 'a' }));
    await vi.advanceTimersByTimeAsync(10);
    expect(inst.batches).toEqual([]);
    b.enqueue(new FakeRequest('b0', { shapeSignature: 'b' }));
    await vi.advanceTimersByTimeAsync(1);
    expect(inst.batches).toEqual([['a0', 'a1']]);
    b.stop();
  });

  it('spreads batches over idle instances and skips instances that are not ready', async () => {
    const i0 = new RecordingInstance('i0', false);
    const i1 = new RecordingInstance('i1', false);
    i1.ready = false;
    const b = new DynamicBatcher([i0, i1], options({ maxBatchSize: 2 }), noop);
    const rs = reqs(6);
    rs.forEach((r) => b.enqueue(r));
    await tick();
    expect(i0.batches).toEqual([['r0', 'r1']]);
    expect(i1.batches).toEqual([]);
    i1.ready = true;
    b.kick();
    expect(i1.batches).toEqual([['r2', 'r3']]);
    i1.release();
    await ticks(2);
    expect(i1.batches).toEqual([
      ['r2', 'r3'],
      ['r4', 'r5'],
    ]);
    expect(b.pendingCount()).toBe(0);
  });
});

describe('DynamicBatcher priorities and queue policies', () => {
  it('serves higher priority levels first; priority 0 and out-of-range go to the default level', async () => {
    const inst = new RecordingInstance('i0', false);
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 1, priorityLevels: 3, defaultPriorityLevel: 2 }), noop);
    b.enqueue(new FakeRequest('blocker', { priority: 3 }));
    await tick();
    const order: Array<[string, number]> = [
      ['low0', 3],
      ['def0', 0],
      ['high0', 1],
      ['low1', 3],
      ['def1', 2],
      ['def2', 9],
      ['high1', 1],
    ];
    for (const [id, priority] of order) b.enqueue(new FakeRequest(id, { priority }));
    while (inst.busy) {
      inst.release();
      await ticks(2);
    }
    expect(inst.batches.flat()).toEqual(['blocker', 'high0', 'high1', 'def0', 'def1', 'def2', 'low0', 'low1']);
  });

  it('a batch spans priority levels in priority order', async () => {
    const inst = new RecordingInstance('i0', false);
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 4, priorityLevels: 2, defaultPriorityLevel: 2 }), noop);
    b.enqueue(new FakeRequest('blocker'));
    await tick();
    for (const id of ['l0', 'l1', 'l2']) b.enqueue(new FakeRequest(id, { priority: 2 }));
    for (const id of ['h0', 'h1']) b.enqueue(new FakeRequest(id, { priority: 1 }));
    inst.release();
    await ticks(2);
    expect(inst.batches[1]).toEqual(['h0', 'h1', 'l0', 'l1']);
  });

  it('rejects at enqueue when the level queue is full', async () => {
    const inst = new RecordingInstance('i0', false);
    const b = new DynamicBatcher(
      [inst],
      options({
        maxBatchSize: 1,
        priorityLevels: 2,
        defaultPriorityLevel: 2,
        defaultQueuePolicy: policy({ maxQueueSize: 2 }),
        priorityQueuePolicy: new Map([[1, policy({ maxQueueSize: 1 })]]),
      }),
      noop,
    );
    const rs = reqs(3, 'lo', { priority: 2 });
    rs.forEach((r) => b.enqueue(r));
    expect(rs[2]!.done).toBe(true);
    expect(rs[2]!.error?.code).toBe(ErrorCode.UNAVAILABLE);
    expect(rs[2]!.error?.message).toBe('Exceeds maximum queue size');
    expect(rs[2]!.error?.reason).toBe('REJECTED');
    const hs = reqs(2, 'hi', { priority: 1 });
    hs.forEach((r) => b.enqueue(r));
    expect(hs[0]!.done).toBe(false);
    expect(hs[1]!.error?.message).toBe('Exceeds maximum queue size');
    expect(b.pendingCount()).toBe(3);
    // Once dispatched, requests no longer count against the queue.
    await tick();
    expect(inst.batches).toEqual([['hi0']]);
    const again = new FakeRequest('hi2', { priority: 1 });
    b.enqueue(again);
    expect(again.done).toBe(false);
    b.stop();
  });

  it('REJECT: an expired request is answered while every instance stays busy', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
    const inst = new RecordingInstance('i0', false);
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 1, defaultQueuePolicy: policy({ defaultTimeoutUs: 50_000 }) }), noop);
    b.enqueue(new FakeRequest('blocker'));
    await vi.advanceTimersByTimeAsync(1);
    const waiting = reqs(3);
    waiting.forEach((r) => b.enqueue(r));
    await vi.advanceTimersByTimeAsync(40);
    expect(waiting.some((r) => r.done)).toBe(false);
    await vi.advanceTimersByTimeAsync(20);
    for (const r of waiting) {
      expect(r.error?.message).toBe('Request timeout expired');
      expect(r.error?.code).toBe(ErrorCode.UNAVAILABLE);
      expect(r.error?.reason).toBe('REJECTED');
    }
    expect(b.pendingCount()).toBe(0);
    expect(timerOf(b)).toBeNull();
    inst.release();
    await vi.advanceTimersByTimeAsync(1);
    expect(inst.batches).toEqual([['blocker']]);
  });

  it('REJECT with per-request timeouts (allow_timeout_override) expires each on time', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
    const inst = new RecordingInstance('i0', false);
    const b = new DynamicBatcher(
      [inst],
      options({ maxBatchSize: 1, defaultQueuePolicy: policy({ defaultTimeoutUs: 1_000_000, allowTimeoutOverride: true }) }),
      noop,
    );
    b.enqueue(new FakeRequest('blocker'));
    await vi.advanceTimersByTimeAsync(1);
    const slow = new FakeRequest('slow', { timeoutUs: 300_000 });
    const fast = new FakeRequest('fast', { timeoutUs: 100_000 });
    const longer = new FakeRequest('longer', { timeoutUs: 5_000_000 }); // larger than the default: ignored
    const none = new FakeRequest('none');
    [slow, fast, longer, none].forEach((r) => b.enqueue(r));
    await vi.advanceTimersByTimeAsync(150);
    expect([slow.done, fast.done, longer.done, none.done]).toEqual([false, true, false, false]);
    await vi.advanceTimersByTimeAsync(200);
    expect([slow.done, fast.done, longer.done, none.done]).toEqual([true, true, false, false]);
    await vi.advanceTimersByTimeAsync(700);
    expect([longer.done, none.done]).toEqual([true, true]);
    expect(longer.error?.message).toBe('Request timeout expired');
    expect(timerOf(b)).toBeNull();
  });

  it('quirk: with default_timeout 0 the per-request timeout is ignored even when overriding is allowed', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
    const inst = new RecordingInstance('i0', false);
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 1, defaultQueuePolicy: policy({ defaultTimeoutUs: 0, allowTimeoutOverride: true }) }), noop);
    b.enqueue(new FakeRequest('blocker'));
    await vi.advanceTimersByTimeAsync(1);
    const r = new FakeRequest('r', { timeoutUs: 1000 });
    b.enqueue(r);
    await vi.advanceTimersByTimeAsync(1000);
    expect(r.done).toBe(false);
    expect(timerOf(b)).toBeNull();
    inst.release();
    await vi.advanceTimersByTimeAsync(1);
    expect(inst.batches).toEqual([['blocker'], ['r']]);
  });

  it('DELAY: an expired request is moved behind the non-expired ones of its level', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
    const inst = new RecordingInstance('i0', false);
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 1, defaultQueuePolicy: policy({ timeoutAction: 'DELAY', defaultTimeoutUs: 100_000 }) }), noop);
    b.enqueue(new FakeRequest('blocker'));
    await vi.advanceTimersByTimeAsync(1);
    b.enqueue(new FakeRequest('old0'));
    b.enqueue(new FakeRequest('old1'));
    await vi.advanceTimersByTimeAsync(150);
    expect(b.pendingCount()).toBe(2); // not rejected
    b.enqueue(new FakeRequest('new0'));
    b.enqueue(new FakeRequest('new1'));
    while (inst.busy) {
      inst.release();
      await vi.advanceTimersByTimeAsync(1);
    }
    expect(inst.batches.flat()).toEqual(['blocker', 'new0', 'new1', 'old0', 'old1']);
  });

  it('drops cancelled requests with CANCELLED instead of executing them', async () => {
    const inst = new RecordingInstance('i0');
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 4 }), noop);
    const rs = reqs(4);
    rs[1]!.cancelled = true;
    rs[3]!.cancelled = true;
    rs.forEach((r) => b.enqueue(r));
    await Promise.all(rs.map((r) => r.finished));
    expect(inst.batches).toEqual([['r0', 'r2']]);
    expect(rs[1]!.error?.code).toBe(ErrorCode.CANCELLED);
    expect(rs[1]!.error?.reason).toBe('CANCELED');
    expect(rs[3]!.error?.message).toBe('Request was cancelled');
  });

  it('stop() fails queued requests and refuses new ones; in-flight batches finish', async () => {
    const inst = new RecordingInstance('i0', false);
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 1, maxQueueDelayUs: 1_000_000 }), noop);
    const rs = reqs(3);
    rs.forEach((r) => b.enqueue(r));
    await tick();
    // A lone request waits for its 1 s delay: wait for the first to be dispatched.
    expect(inst.batches).toEqual([['r0']]);
    b.stop();
    for (const r of rs.slice(1)) {
      expect(r.error?.message).toBe('Server is stopping, scheduler for model has stopped accepting new inference requests');
      expect(r.error?.code).toBe(ErrorCode.UNAVAILABLE);
    }
    const late = new FakeRequest('late');
    b.enqueue(late);
    expect(late.error?.code).toBe(ErrorCode.UNAVAILABLE);
    expect(b.pendingCount()).toBe(0);
    inst.release();
    await rs[0]!.finished;
    expect(rs[0]!.error).toBeUndefined();
    expect(timerOf(b)).toBeNull();
  });
});

describe('DynamicBatcher preserve_ordering', () => {
  it('releases responses in enqueue order across instances', async () => {
    const journal = new Journal();
    const i0 = new RecordingInstance('i0', false);
    const i1 = new RecordingInstance('i1', false);
    const b = new DynamicBatcher([i0, i1], options({ maxBatchSize: 2, preserveOrdering: true }), noop);
    const rs = Array.from({ length: 4 }, (_, i) => new FakeRequest(`r${i}`, {}, journal));
    rs.forEach((r) => b.enqueue(r));
    await tick();
    expect(i0.batches).toEqual([['r0', 'r1']]);
    expect(i1.batches).toEqual([['r2', 'r3']]);
    i1.release();
    await ticks(2);
    expect(journal.finals).toEqual([]);
    expect(rs[2]!.done).toBe(false);
    i0.release();
    await Promise.all(rs.map((r) => r.finished));
    expect(journal.finals).toEqual(['r0', 'r1', 'r2', 'r3']);
  });

  it('passes the head request’s decoupled responses through and buffers the others, errors included', async () => {
    const journal = new Journal();
    const i0 = new RecordingInstance('i0', false);
    const i1 = new RecordingInstance('i1', false);
    const b = new DynamicBatcher([i0, i1], options({ maxBatchSize: 1, preserveOrdering: true }), noop);
    const [a, c] = [new FakeRequest('a', {}, journal), new FakeRequest('c', {}, journal)];
    b.enqueue(a);
    b.enqueue(c);
    await tick();
    const [ha] = i0.held.map((h) => h.batch[0]!);
    const [hc] = i1.held.map((h) => h.batch[0]!);
    hc!.respond(okResponse('c', false));
    hc!.fail(Errors.modelRaised(ErrorCode.INTERNAL, 'boom'));
    expect(hc!.done).toBe(true); // the instance sees it finished …
    expect(c.responses.length).toBe(0); // … the client does not yet
    ha!.respond(okResponse('a', false));
    expect(a.responses.length).toBe(1); // head: straight through
    ha!.respond(okResponse('a', true));
    expect(journal.finals).toEqual(['a', 'c']);
    expect(c.responses.length).toBe(1);
    expect(c.error?.message).toBe('boom');
    i0.release(false);
    i1.release(false);
  });
});

describe('DynamicBatcher observer', () => {
  it('reports each execution with the original requests and the summed batch size', async () => {
    const inst = new RecordingInstance('i0');
    const seen: Array<[string[], number]> = [];
    const b = new DynamicBatcher([inst], options({ maxBatchSize: 8, preserveOrdering: true }), (batch, _t, n) =>
      seen.push([batch.map((r) => r.request.id), n]),
    );
    const rs = [new FakeRequest('x', { batchSize: 3 }), new FakeRequest('y', { batchSize: 2 })];
    rs.forEach((r) => b.enqueue(r));
    await Promise.all(rs.map((r) => r.finished));
    await tick();
    expect(seen).toEqual([[['x', 'y'], 5]]);
    expect(rs[0]!.queueEndNs).toBe(rs[1]!.queueEndNs);
    expect(rs[0]!.queueEndNs! >= rs[0]!.arrivalNs).toBe(true);
  });
});
