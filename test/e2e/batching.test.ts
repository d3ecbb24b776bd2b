/**
 * End-to-end dynamic batching (docs/protocol-notes.md, "Dynamic batcher"): the real
 * CLI, real stubs, and a Python model (test/models/batch_probe) that reports len(requests), the
 * rows of its batch and which execute() call served each request. Composition and ordering are
 * asserted, never durations (except lower bounds a correct server cannot undercut).
 *
 * Scenarios that need "the instance is busy while requests queue up" hold the instance with a
 * request whose execute() creates a marker file and then waits for a release file the test
 * creates: no sleeps decide the outcome.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, pythonAsync, shmFilesOf, startTritium, type Tritium } from '../helpers/server.js';
import { inferJson, markPath, metricValue, scrape, waitFor, waitForMark, writeVariant, type InferResult } from './infer-helpers.js';

let server: Tritium;
const holds: string[] = [];

const OUTPUTS = `output [
  { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] },
  { name: "BATCH_LEN" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "BATCH_ROWS" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "EXEC_ID" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "POSITION" data_type: TYPE_INT32 dims: [ 1 ] }
]`;
const variant = (mbs: number, dynamicBatching: string, instances = 1) => `backend: "python"
max_batch_size: ${mbs}
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
${OUTPUTS}
dynamic_batching { ${dynamicBatching} }
instance_group [ { kind: KIND_CPU, count: ${instances} } ]
`;

beforeAll(async () => {
  const repo = makeRepo(['batch_probe']);
  writeVariant(repo, 'batch_probe', 'var_prio', variant(4, 'priority_levels: 2 default_priority_level: 2'));
  writeVariant(
    repo,
    'batch_probe',
    'var_qfull',
    variant(
      4,
      `priority_levels: 2 default_priority_level: 2
       default_queue_policy { max_queue_size: 2 }
       priority_queue_policy { key: 1 value: { max_queue_size: 1 } }`,
    ),
  );
  writeVariant(
    repo,
    'batch_probe',
    'var_timeout',
    variant(4, 'default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 1000000 allow_timeout_override: true }'),
  );
  writeVariant(
    repo,
    'batch_probe',
    'var_delay',
    variant(1, 'default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 30000000 allow_timeout_override: true }'),
  );
  writeVariant(repo, 'batch_probe', 'var_order', variant(4, 'preserve_ordering: true', 2));
  writeVariant(repo, 'batch_probe', 'var_noorder', variant(4, '', 2));
  server = await startTritium({ repos: [repo] });
}, 120_000);

afterAll(async () => {
  for (const h of holds) fs.writeFileSync(h, '');
  const pid = server?.proc.pid;
  await server?.stop();
  for (const h of holds) fs.rmSync(h, { force: true });
  expect(shmFilesOf(pid)).toEqual([]);
});

const infer = (model: string, o: Parameters<typeof inferJson>[2] = {}) => inferJson(server.http, model, o);

/** batch_stats of the model as { batch size: executions }. */
async function batchStats(model: string): Promise<Map<number, number>> {
  const res = await fetch(`${server.http}/v2/models/${model}/stats`);
  expect(res.status).toBe(200);
  const body = await res.json();
  return new Map(
    (body.model_stats[0].batch_stats as Array<{ batch_size: number; compute_infer: { count: number } }>).map((b) => [b.batch_size, b.compute_infer.count]),
  );
}
function statsDelta(before: Map<number, number>, after: Map<number, number>): Record<number, number> {
  const out: Record<number, number> = {};
  for (const [k, v] of after) if (v - (before.get(k) ?? 0) > 0) out[k] = v - (before.get(k) ?? 0);
  return out;
}

/** Starts a request that occupies one instance until release() is called. */
async function hold(model: string, params: Record<string, unknown> = {}) {
  const mark = markPath('mark');
  const release = markPath('hold');
  holds.push(release);
  const done = infer(model, { params: { mark, hold: release, ...params } });
  await waitForMark(mark);
  return { done, release: () => fs.writeFileSync(release, '') };
}

async function pending(model: string): Promise<number> {
  const m = await scrape(server.metricsPort!);
  return metricValue(m.samples, 'nv_inference_pending_request_count', { model, version: '1' }) ?? -1;
}

const first = (r: InferResult, name: string) => Number(r.out[name]?.[0]);

describe('batch composition (max_batch_size 10, max_queue_delay 200 ms)', () => {
  // Each scenario first holds the single instance, queues its requests (checked through
  // nv_inference_pending_request_count), then releases it: the batches depend on the queue
  // contents only, not on how fast a loaded machine delivers concurrent requests.
  async function queued<T>(model: string, n: number, send: () => T[]): Promise<T[]> {
    const before = await pending(model);
    const sent = send();
    await waitFor(`${n} queued`, async () => (await pending(model)) === before + n);
    return sent;
  }

  it('serves 20 concurrent single-row clients in two batches of 10', async () => {
    const before = await batchStats('batch_probe');
    const blocker = await hold('batch_probe');
    const sent = await queued('batch_probe', 20, () => Array.from({ length: 20 }, (_, i) => infer('batch_probe', { value: i })));
    blocker.release();
    const b = await blocker.done;
    const results = await Promise.all(sent);
    for (const [i, r] of results.entries()) {
      expect(r.status, r.error).toBe(200);
      expect(r.out.OUT).toEqual([i]);
      expect(r.out.BATCH_LEN).toEqual([10]);
      expect(r.out.BATCH_ROWS).toEqual([10]);
    }
    const execs = new Set(results.map((r) => first(r, 'EXEC_ID')));
    expect([...execs].sort((x, y) => x - y)).toEqual([first(b, 'EXEC_ID') + 1, first(b, 'EXEC_ID') + 2]);
    // Each execute() got its ten requests as one list: positions 0..9.
    for (const id of execs) {
      const pos = results.filter((r) => first(r, 'EXEC_ID') === id).map((r) => first(r, 'POSITION'));
      expect(pos.sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }
    expect(statsDelta(before, await batchStats('batch_probe'))).toEqual({ 1: 1, 10: 2 });
  });

  it('serves 102 concurrent requests as ten batches of 10 and a final batch of 2', async () => {
    const before = await batchStats('batch_probe');
    const blocker = await hold('batch_probe');
    const sent = await queued('batch_probe', 102, () => Array.from({ length: 102 }, () => infer('batch_probe')));
    blocker.release();
    await blocker.done;
    const results = await Promise.all(sent);
    for (const r of results) expect(r.status, r.error).toBe(200);
    const lens = results.map((r) => first(r, 'BATCH_LEN'));
    expect(lens.filter((n) => n === 10).length).toBe(100);
    const tail = results.filter((r) => first(r, 'BATCH_LEN') === 2);
    expect(tail.length).toBe(2);
    // FIFO: the two left over are the last execution.
    expect(first(tail[0]!, 'EXEC_ID')).toBe(Math.max(...results.map((r) => first(r, 'EXEC_ID'))));
    expect(statsDelta(before, await batchStats('batch_probe'))).toEqual({ 1: 1, 10: 10, 2: 1 });
  });

  it('releases a partial batch when max_queue_delay expires', async () => {
    // Nothing else is sent to this model meanwhile: a lone request waits the whole delay
    // for company, then leaves as a batch of 1.
    const r = await infer('batch_probe');
    expect(r.status, r.error).toBe(200);
    expect(r.out.BATCH_LEN).toEqual([1]);
    expect(r.ms).toBeGreaterThanOrEqual(195);
    const q = (await (await fetch(`${server.http}/v2/models/batch_probe/stats`)).json()).model_stats[0].inference_stats.queue;
    expect(q.ns / q.count).toBeGreaterThan(0);
  });

  it('counts requests with 1–6 rows by their rows and never exceeds 10 rows per batch', async () => {
    const sizes = Array.from({ length: 40 }, (_, i) => 1 + (i % 6));
    const before = await batchStats('batch_probe');
    const blocker = await hold('batch_probe');
    const sent = await queued('batch_probe', 40, () => sizes.map((rows, i) => infer('batch_probe', { rows, value: i })));
    blocker.release();
    await blocker.done;
    const results = await Promise.all(sent);
    const byExec = new Map<number, Array<{ rows: number; pos: number; r: InferResult }>>();
    for (const [i, r] of results.entries()) {
      expect(r.status, r.error).toBe(200);
      expect(r.shapes.OUT).toEqual([sizes[i], 1]);
      expect(r.shapes.BATCH_LEN).toEqual([sizes[i], 1]);
      expect(r.out.OUT).toEqual(Array<number>(sizes[i]!).fill(i));
      const id = first(r, 'EXEC_ID');
      if (!byExec.has(id)) byExec.set(id, []);
      byExec.get(id)!.push({ rows: sizes[i]!, pos: first(r, 'POSITION'), r });
    }
    const ids = [...byExec.keys()].sort((a, b) => a - b);
    for (const [k, id] of ids.entries()) {
      const members = byExec.get(id)!.sort((a, b) => a.pos - b.pos);
      const rows = members.reduce((a, m) => a + m.rows, 0);
      expect(rows).toBeLessThanOrEqual(10);
      for (const m of members) {
        expect(first(m.r, 'BATCH_ROWS')).toBe(rows);
        expect(first(m.r, 'BATCH_LEN')).toBe(members.length);
      }
      // Batches are cut where the next request in queue order would not fit.
      const next = byExec.get(ids[k + 1]!)?.sort((a, b) => a.pos - b.pos)[0];
      if (next) expect(rows + next.rows).toBeGreaterThan(10);
    }
    // Grouped: fewer executions than requests (a request of <= 4 rows always has company).
    expect(byExec.size).toBeLessThan(sizes.length);
    const delta = statsDelta(before, await batchStats('batch_probe'));
    delta[1] = (delta[1] ?? 0) - 1; // the held request
    if (delta[1] === 0) delete delta[1];
    expect(Object.values(delta).reduce((a, b) => a + b, 0)).toBe(byExec.size);
    expect(Math.max(...Object.keys(delta).map(Number))).toBeLessThanOrEqual(10);
    expect(Object.entries(delta).reduce((a, [size, n]) => a + Number(size) * n, 0)).toBe(sizes.reduce((a, b) => a + b, 0));
  });

  it('never batches requests whose variable dimension differs', async () => {
    const blocker = await hold('batch_probe');
    // Queue order: ten requests [1,2], then ten [1,3].
    const w2 = await queued('batch_probe', 10, () => Array.from({ length: 10 }, () => infer('batch_probe', { width: 2 })));
    const w3 = await queued('batch_probe', 10, () => Array.from({ length: 10 }, () => infer('batch_probe', { width: 3 })));
    blocker.release();
    const b = await blocker.done;
    const r2 = await Promise.all(w2);
    const r3 = await Promise.all(w3);
    for (const r of r2) {
      expect(r.status, r.error).toBe(200);
      expect(r.shapes.OUT).toEqual([1, 2]);
      expect(first(r, 'EXEC_ID')).toBe(first(b, 'EXEC_ID') + 1);
      expect(first(r, 'BATCH_LEN')).toBe(10);
    }
    for (const r of r3) {
      expect(r.status, r.error).toBe(200);
      expect(r.shapes.OUT).toEqual([1, 3]);
      expect(first(r, 'EXEC_ID')).toBe(first(b, 'EXEC_ID') + 2);
      expect(first(r, 'BATCH_LEN')).toBe(10);
    }
  });

  it('rejects a request larger than max_batch_size at validation', async () => {
    const r = await infer('batch_probe', { rows: 11 });
    expect(r.status).toBe(400);
    expect(r.error).toBe("inference request batch-size must be <= 10 for 'batch_probe'");
  });
});

describe('priorities and queue policies', () => {
  it('serves priority 1 before the default level 2, FIFO within a level', async () => {
    const blocker = await hold('var_prio');
    // FIFO is the order requests reach the core: each is sent once the one before it is queued
    // (concurrent connections have no order of their own, least of all across frontend threads).
    const queueInOrder = async (values: number[], params: (i: number) => Record<string, unknown>, before: number) => {
      const sent = [];
      for (const [k, i] of values.entries()) {
        sent.push(infer('var_prio', { value: i, params: params(i) }));
        await waitFor(`${before + k + 1} queued`, async () => (await pending('var_prio')) === before + k + 1);
      }
      return sent;
    };
    const low = await queueInOrder([0, 1, 2, 3], () => ({ priority: 2 }), 0);
    // priority 0 and out-of-range priorities mean the default level; a timeout is ignored
    // because the level's default timeout is 0.
    const dflt = [4, 5].map((i) => infer('var_prio', { value: i, params: i === 4 ? { priority: 0 } : { priority: 9, timeout: 1000 } }));
    await waitFor('6 queued', async () => (await pending('var_prio')) === 6);
    const high = await queueInOrder([6, 7, 8, 9], () => ({ priority: 1 }), 6);
    blocker.release();
    const b = await blocker.done;
    expect(b.status, b.error).toBe(200);
    const lowR = await Promise.all(low);
    const dfltR = await Promise.all(dflt);
    const highR = await Promise.all(high);
    for (const r of [...lowR, ...dfltR, ...highR]) expect(r.status, r.error).toBe(200);
    const exec0 = first(b, 'EXEC_ID');
    // max_batch_size 4: the four high-priority requests form the next batch, in order.
    for (const [k, r] of highR.entries()) {
      expect(first(r, 'EXEC_ID')).toBe(exec0 + 1);
      expect(first(r, 'POSITION')).toBe(k);
    }
    for (const [k, r] of lowR.entries()) {
      expect(first(r, 'EXEC_ID')).toBe(exec0 + 2);
      expect(first(r, 'POSITION')).toBe(k);
    }
    for (const r of dfltR) expect(first(r, 'EXEC_ID')).toBe(exec0 + 3);
  });

  it('answers a full priority queue at once with 503 "Exceeds maximum queue size"', async () => {
    const blocker = await hold('var_qfull');
    const queued = [infer('var_qfull'), infer('var_qfull')];
    await waitFor('2 queued', async () => (await pending('var_qfull')) === 2);
    const full = await infer('var_qfull');
    expect(full.status).toBe(503);
    expect(full.error).toBe('Exceeds maximum queue size');
    // gRPC: UNAVAILABLE with the same text, as tritonclient.grpc reports it.
    const grpc = await pythonAsync(`
import numpy as np
import tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${server.grpcPort}")
i = g.InferInput("IN", [1, 1], "FP32")
i.set_data_from_numpy(np.zeros((1, 1), dtype=np.float32))
try:
    c.infer("var_qfull", [i])
    print("no error")
except g.InferenceServerException as e:
    print(e.status(), "|", e.message())
`);
    expect(grpc.trim()).toBe('StatusCode.UNAVAILABLE | Exceeds maximum queue size');
    // Level 1 has its own policy (max_queue_size 1).
    queued.push(infer('var_qfull', { params: { priority: 1 } }));
    await waitFor('3 queued', async () => (await pending('var_qfull')) === 3);
    const fullHigh = await infer('var_qfull', { params: { priority: 1 } });
    expect(fullHigh.status).toBe(503);
    expect(fullHigh.error).toBe('Exceeds maximum queue size');
    blocker.release();
    for (const r of [await blocker.done, ...(await Promise.all(queued))]) expect(r.status, r.error).toBe(200);
    const m = await scrape(server.metricsPort!);
    expect(metricValue(m.samples, 'nv_inference_request_failure', { model: 'var_qfull', reason: 'REJECTED', version: '1' })).toBe(3);
    expect(metricValue(m.samples, 'nv_inference_request_success', { model: 'var_qfull', version: '1' })).toBe(4);
  });

  it('rejects queued requests whose timeout expires with 503 "Request timeout expired"', async () => {
    const blocker = await hold('var_timeout');
    const t0 = performance.now();
    // default_timeout 1 s; a smaller per-request timeout overrides it, a larger one does not.
    const dflt = infer('var_timeout');
    const short = infer('var_timeout', { params: { timeout: 100_000 } });
    const long = infer('var_timeout', { params: { timeout: 60_000_000 } });
    const [d, s, l] = await Promise.all([dflt, short, long]);
    for (const r of [d, s, l]) {
      expect(r.status).toBe(503);
      expect(r.error).toBe('Request timeout expired');
    }
    // All three were answered while the instance was still busy, and none before its deadline.
    expect(s.doneAt - t0).toBeGreaterThanOrEqual(95);
    expect(d.doneAt - t0).toBeGreaterThanOrEqual(995);
    expect(l.doneAt - t0).toBeGreaterThanOrEqual(995);
    expect(s.doneAt).toBeLessThan(d.doneAt);
    blocker.release();
    expect((await blocker.done).status).toBe(200);
    const stats = (await (await fetch(`${server.http}/v2/models/var_timeout/stats`)).json()).model_stats[0];
    expect(stats.inference_stats.fail.count).toBe(3);
    expect(stats.inference_stats.success.count).toBe(1);
  });

  it('moves expired requests behind the others with timeout_action DELAY and still serves them', async () => {
    const blocker = await hold('var_delay');
    const expired = infer('var_delay', { value: 1, params: { timeout: 100_000 } });
    await waitFor('1 queued', async () => (await pending('var_delay')) === 1);
    // It was queued before now, so its 100 ms deadline has passed 300 ms from now.
    const queuedBy = Date.now();
    await waitFor('the first deadline to pass', () => Date.now() - queuedBy > 300);
    const fresh = infer('var_delay', { value: 2 });
    await waitFor('2 queued', async () => (await pending('var_delay')) === 2);
    blocker.release();
    const b = await blocker.done;
    const [e, f] = await Promise.all([expired, fresh]);
    expect(e.status, e.error).toBe(200);
    expect(f.status, f.error).toBe(200);
    expect(e.out.OUT).toEqual([1]);
    expect(first(f, 'EXEC_ID')).toBe(first(b, 'EXEC_ID') + 1);
    expect(first(e, 'EXEC_ID')).toBe(first(b, 'EXEC_ID') + 2);
  });
});

describe('preserve_ordering', () => {
  it('holds a later response until earlier requests on another instance finished', async () => {
    const a = await hold('var_order');
    let bDone = false;
    const b = infer('var_order', { value: 2 }).then((r) => {
      bDone = true;
      return r;
    });
    // B runs on the second instance at once; its response must wait for A.
    await waitFor('B to execute', async () => {
      const s = (await (await fetch(`${server.http}/v2/models/var_order/stats`)).json()).model_stats[0];
      return s.execution_count === 1;
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(bDone).toBe(false);
    const releasedAt = performance.now();
    a.release();
    const [ra, rb] = await Promise.all([a.done, b]);
    expect(ra.status).toBe(200);
    expect(rb.status).toBe(200);
    // B was answered only after A could finish. (Which of the two arrives first at the client
    // is not observable: they are written back to back on two different connections.)
    expect(rb.doneAt).toBeGreaterThanOrEqual(releasedAt);
  });

  it('without preserve_ordering a later response overtakes a slow one', async () => {
    const a = await hold('var_noorder');
    const rb = await infer('var_noorder', { value: 2 });
    expect(rb.status).toBe(200);
    a.release();
    expect((await a.done).status).toBe(200);
  });
});
