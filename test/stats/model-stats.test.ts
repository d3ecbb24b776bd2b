import { describe, expect, it } from 'vitest';
import { Errors, type FailureReason } from '../../src/core/errors.js';
import type { ExecutionTimes } from '../../src/core/scheduling/types.js';
import { ModelStats, type StatsListener } from '../../src/core/stats/model-stats.js';
import { FakeRequest, okResponse } from '../scheduling/helpers.js';

/** A request that arrived at `arrival` and left the queue at `queueEnd` (ns). */
function req(id: string, arrival: bigint, queueEnd: bigint, batchSize = 1): FakeRequest {
  const r = new FakeRequest(id, { batchSize });
  (r as { arrivalNs: bigint }).arrivalNs = arrival;
  r.queueEndNs = queueEnd;
  return r;
}

const exec = (start: bigint, input: bigint, infer: bigint, output: bigint): ExecutionTimes => ({
  startNs: start,
  inputEndNs: start + input,
  inferEndNs: start + input + infer,
  endNs: start + input + infer + output,
});

const finish = (r: FakeRequest) => r.respond(okResponse(r.id));

describe('ModelStats', () => {
  it('accounts per request and per execution like Triton', () => {
    const s = new ModelStats();
    const a = req('a', 0n, 100n, 3);
    const b = req('b', 50n, 100n, 2);
    // Non-decoupled: responses go out before execute() resolves.
    finish(a);
    s.recordSuccess(a, 1000n);
    finish(b);
    s.recordSuccess(b, 1100n);
    s.recordExecution([a, b], exec(100n, 10n, 700n, 40n), 5);

    const c = req('c', 2000n, 2010n, 1);
    finish(c);
    s.recordSuccess(c, 2500n);
    s.recordExecution([c], exec(2010n, 5n, 400n, 20n), 1);

    const st = s.snapshot('m', '1');
    expect(st.name).toBe('m');
    expect(st.version).toBe('1');
    expect(st.inference_count).toBe(6n);
    expect(st.execution_count).toBe(2n);
    const i = st.inference_stats;
    expect(i.success).toEqual({ count: 3n, ns: 1000n + 1050n + 500n });
    expect(i.queue).toEqual({ count: 3n, ns: 100n + 50n + 10n });
    // The batch's phase durations, once per request of the batch.
    expect(i.compute_input).toEqual({ count: 3n, ns: 10n * 2n + 5n });
    expect(i.compute_infer).toEqual({ count: 3n, ns: 700n * 2n + 400n });
    expect(i.compute_output).toEqual({ count: 3n, ns: 40n * 2n + 20n });
    expect(i.fail).toEqual({ count: 0n, ns: 0n });
    expect(i.cache_hit).toEqual({ count: 0n, ns: 0n });
    expect(st.batch_stats).toEqual([
      { batch_size: 1n, compute_input: { count: 1n, ns: 5n }, compute_infer: { count: 1n, ns: 400n }, compute_output: { count: 1n, ns: 20n } },
      { batch_size: 5n, compute_input: { count: 1n, ns: 10n }, compute_infer: { count: 1n, ns: 700n }, compute_output: { count: 1n, ns: 40n } },
    ]);
    expect(st.last_inference).toBeGreaterThan(BigInt(Date.now() - 60_000));
    expect(st.response_stats).toEqual({});
    expect(st.memory_usage).toEqual([]);
  });

  it('adds compute time when the request finishes after its execution (decoupled / ordered)', () => {
    const s = new ModelStats();
    const a = req('a', 0n, 10n);
    s.recordExecution([a], exec(10n, 1n, 2n, 3n), 1);
    let st = s.snapshot('m', '1');
    expect(st.inference_stats.compute_infer.count).toBe(0n);
    expect(st.execution_count).toBe(1n);
    finish(a);
    s.recordSuccess(a, 100n);
    st = s.snapshot('m', '1');
    expect(st.inference_stats.compute_input).toEqual({ count: 1n, ns: 1n });
    expect(st.inference_stats.compute_infer).toEqual({ count: 1n, ns: 2n });
    expect(st.inference_stats.compute_output).toEqual({ count: 1n, ns: 3n });
  });

  it('keeps the three compute counts equal with failures in a batch', () => {
    const s = new ModelStats();
    const ok = req('ok', 0n, 10n);
    const bad = req('bad', 0n, 10n);
    finish(ok);
    s.recordSuccess(ok, 100n);
    bad.fail(Errors.stubUnhealthy('i0'));
    s.recordFailure(bad, 90n, 'BACKEND');
    s.recordExecution([ok, bad], exec(10n, 1n, 50n, 1n), 2);
    const i = s.snapshot('m', '1').inference_stats;
    expect(i.success.count).toBe(1n);
    expect(i.fail).toEqual({ count: 1n, ns: 90n });
    expect(i.compute_input.count).toBe(1n);
    expect(i.compute_infer.count).toBe(1n);
    expect(i.compute_output.count).toBe(1n);
    expect(s.snapshot('m', '1').inference_count).toBe(1n);
  });

  it('stays exact past 2^53 nanoseconds', () => {
    const s = new ModelStats();
    const big = 2n ** 54n + 1n;
    for (const id of ['a', 'b']) {
      const r = req(id, 0n, big);
      finish(r);
      s.recordSuccess(r, 2n * big + 5n);
      s.recordExecution([r], exec(big, big, 1n, 1n), 1);
    }
    const i = s.snapshot('m', '1').inference_stats;
    expect(i.success.ns).toBe(2n * (2n * big + 5n));
    expect(i.queue.ns).toBe(2n * big);
    expect(i.compute_input.ns).toBe(2n * big);
    expect(i.success.ns > BigInt(Number.MAX_SAFE_INTEGER)).toBe(true);
  });

  it('never reports negative durations', () => {
    const s = new ModelStats();
    const r = req('r', 100n, 50n);
    finish(r);
    s.recordSuccess(r, 10n);
    s.recordExecution([r], { startNs: 10n, inputEndNs: 5n, inferEndNs: 20n, endNs: 15n }, 1);
    const i = s.snapshot('m', '1').inference_stats;
    expect([i.success.ns, i.queue.ns, i.compute_input.ns, i.compute_infer.ns, i.compute_output.ns]).toEqual([0n, 0n, 0n, 15n, 0n]);
  });

  it("ends a request no earlier than its execution, as Triton's release does", () => {
    const calls: bigint[] = [];
    const listener: StatsListener = {
      onSuccess: (_n, ns) => calls.push(ns),
      onCompute: (_a, _b, _c, extra) => calls.push(extra),
      onFailure: () => {},
      onExecution: () => {},
    };
    const s = new ModelStats(listener);
    // Two requests of one batch: responses at 900 and 950, the execution ends at 1000.
    const a = req('a', 0n, 100n);
    const b = req('b', 0n, 100n);
    finish(a);
    s.recordSuccess(a, 900n);
    finish(b);
    s.recordSuccess(b, 950n);
    s.recordExecution([a, b], exec(100n, 100n, 700n, 100n), 2);
    const i = s.snapshot('m', '1').inference_stats;
    expect(i.success.ns).toBe(2000n);
    // request = queue + compute for both: perf_analyzer's overhead is 0, never negative.
    expect(i.success.ns).toBe(i.queue.ns + i.compute_input.ns + i.compute_infer.ns + i.compute_output.ns);
    expect(calls).toEqual([900n, 950n, 100n, 50n]);
    // Executed first (decoupled / ordered), answered later: nothing to add.
    const c = req('c', 0n, 100n);
    s.recordExecution([c], exec(100n, 100n, 700n, 100n), 1);
    finish(c);
    s.recordSuccess(c, 1500n);
    expect(s.snapshot('m', '1').inference_stats.success.ns).toBe(3500n);
  });

  it('feeds its listener the same increments', () => {
    const calls: string[] = [];
    const listener: StatsListener = {
      onSuccess: (n, req, q) => calls.push(`success ${n} ${req} ${q}`),
      onCompute: (a, b, c) => calls.push(`compute ${a} ${b} ${c}`),
      onFailure: (reason: FailureReason, ns) => calls.push(`fail ${reason} ${ns}`),
      onExecution: (n) => calls.push(`exec ${n}`),
    };
    const s = new ModelStats(listener);
    const a = req('a', 0n, 10n, 4);
    finish(a);
    s.recordSuccess(a, 100n);
    s.recordExecution([a], exec(10n, 1n, 2n, 3n), 4);
    const b = req('b', 0n, 10n);
    s.recordFailure(b, 7n, 'REJECTED');
    expect(calls).toEqual(['success 4 100 10', 'exec 4', 'compute 1 2 3', 'fail REJECTED 7']);
  });
});
