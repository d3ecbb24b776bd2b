/**
 * End-to-end statistics extension and Prometheus metrics (docs/protocol-notes.md, "Statistics", "Metrics"):
 * a known mix of requests (single and multi-row, one forced batch, model errors, a request
 * refused by validation) against a batching Python model, then `/v2/models/.../stats` checked
 * for Triton's exact JSON shape and accounting, and `/metrics` scraped, parsed and matched to
 * the same counts. Also tritium's own series: stub restarts and shared-memory bytes.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { stubPidsOf } from '../helpers/processes.js';
import { inferJson, markPath, metricValue, scrape, waitFor, waitForMark, writeVariant } from './infer-helpers.js';

const CONFIG = `backend: "python"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [
  { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] },
  { name: "BATCH_LEN" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "BATCH_ROWS" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "EXEC_ID" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "POSITION" data_type: TYPE_INT32 dims: [ 1 ] }
]
dynamic_batching { }
instance_group [ { kind: KIND_CPU, count: 1 } ]
`;

let server: Tritium;
const release = markPath('hold');

// What the test sends (see beforeAll), and what Triton's accounting makes of it.
const EXPECT = {
  success: 10,
  fail: 2,
  inferences: 16,
  executions: 10,
  batches: { 1: 7, 2: 1, 3: 1, 6: 1 } as Record<number, number>,
};

beforeAll(async () => {
  const repo = makeRepo([]);
  writeVariant(repo, 'batch_probe', 'var_stats', CONFIG);
  writeVariant(repo, 'batch_probe', 'var_idle', CONFIG);
  server = await startTritium({ repos: [repo] });
  const infer = (o: Parameters<typeof inferJson>[2]) => inferJson(server.http, 'var_stats', o);
  const ok = async (o: Parameters<typeof inferJson>[2]) => {
    const r = await infer(o);
    expect(r.status, r.error).toBe(200);
    return r;
  };
  // One execution each: 4 × 1 row, 3 rows, 2 rows.
  for (const rows of [1, 1, 1, 1, 3, 2]) await ok({ rows });
  // One batch of 1 + 2 + 3 rows, queued behind a held request (1 row).
  const mark = markPath('mark');
  const blocker = ok({ params: { mark, hold: release } });
  await waitForMark(mark);
  const queued = [1, 2, 3].map((rows) => ok({ rows }));
  await waitFor('3 queued', async () => {
    const m = await scrape(server.metricsPort!);
    return metricValue(m.samples, 'nv_inference_pending_request_count', { model: 'var_stats', version: '1' }) === 3;
  });
  fs.writeFileSync(release, '');
  await blocker;
  const batch = await Promise.all(queued);
  for (const r of batch) expect(r.out.BATCH_LEN![0]).toBe(3);
  // Two model errors (each its own execution), one request refused by validation.
  for (let i = 0; i < 2; i++) {
    const r = await infer({ params: { fail: true } });
    expect(r.status).toBe(500);
    expect(r.error).toBe('failed on request');
  }
  expect((await infer({ rows: 9 })).status).toBe(400);
}, 120_000);

afterAll(async () => {
  fs.rmSync(release, { force: true });
  await stopAndExpectNoShm(server);
});

interface Duration {
  count: number;
  ns: number;
}
const DURATION_KEYS = ['count', 'ns'];

async function stats(path: string) {
  const res = await fetch(`${server.http}${path}`);
  const raw = await res.text();
  return { status: res.status, raw, body: JSON.parse(raw) };
}

describe('statistics extension', () => {
  it('answers the three forms of the endpoint with the same entry', async () => {
    const all = await stats('/v2/models/stats');
    const one = await stats('/v2/models/var_stats/stats');
    const ver = await stats('/v2/models/var_stats/versions/1/stats');
    for (const r of [all, one, ver]) expect(r.status).toBe(200);
    expect(all.body.model_stats.map((m: { name: string }) => m.name).sort()).toEqual(['var_idle', 'var_stats']);
    const fromAll = all.body.model_stats.find((m: { name: string }) => m.name === 'var_stats');
    expect(one.body.model_stats).toHaveLength(1);
    expect(ver.body.model_stats).toHaveLength(1);
    // last_inference is identical: nothing ran in between.
    expect(one.body.model_stats[0]).toEqual(fromAll);
    expect(ver.body.model_stats[0]).toEqual(fromAll);
  });

  it('has exactly the JSON shape perf_analyzer parses, with integers only', async () => {
    const { raw, body } = await stats('/v2/models/var_stats/stats');
    expect(Object.keys(body)).toEqual(['model_stats']);
    const m = body.model_stats[0];
    expect(Object.keys(m).sort()).toEqual(
      ['batch_stats', 'execution_count', 'inference_count', 'inference_stats', 'last_inference', 'memory_usage', 'name', 'response_stats', 'version'].sort(),
    );
    expect(m.name).toBe('var_stats');
    expect(m.version).toBe('1');
    for (const k of ['last_inference', 'inference_count', 'execution_count']) expect(Number.isInteger(m[k]), k).toBe(true);
    expect(Object.keys(m.inference_stats).sort()).toEqual(
      ['cache_hit', 'cache_miss', 'compute_infer', 'compute_input', 'compute_output', 'fail', 'queue', 'success'].sort(),
    );
    for (const [k, d] of Object.entries(m.inference_stats as Record<string, Duration>)) {
      expect(Object.keys(d).sort(), k).toEqual(DURATION_KEYS);
      expect(Number.isInteger(d.count) && Number.isInteger(d.ns) && d.count >= 0 && d.ns >= 0, k).toBe(true);
    }
    for (const b of m.batch_stats as Array<Record<string, unknown>>) {
      expect(Object.keys(b).sort()).toEqual(['batch_size', 'compute_infer', 'compute_input', 'compute_output']);
      expect(Number.isInteger(b.batch_size)).toBe(true);
      for (const k of ['compute_infer', 'compute_input', 'compute_output']) expect(Object.keys(b[k] as object).sort()).toEqual(DURATION_KEYS);
    }
    expect(m.response_stats).toEqual({});
    expect(Array.isArray(m.memory_usage)).toBe(true);
    // Integers on the wire, never strings or floats.
    expect(raw).toMatch(new RegExp(`"inference_count":${EXPECT.inferences}[,}]`));
    expect(raw).not.toMatch(/"(count|ns|batch_size|inference_count|execution_count|last_inference)":("|\d+\.)/);
  });

  it('counts requests, inferences, executions and batches as Triton does', async () => {
    const m = (await stats('/v2/models/var_stats/stats')).body.model_stats[0];
    const s = m.inference_stats;
    expect(s.success.count).toBe(EXPECT.success);
    expect(s.fail.count).toBe(EXPECT.fail);
    expect(s.queue.count).toBe(EXPECT.success);
    for (const k of ['compute_input', 'compute_infer', 'compute_output']) expect(s[k].count, k).toBe(EXPECT.success);
    expect(s.cache_hit.count).toBe(0);
    expect(s.cache_miss.count).toBe(0);
    expect(m.inference_count).toBe(EXPECT.inferences);
    expect(m.execution_count).toBe(EXPECT.executions);
    const batches = Object.fromEntries(m.batch_stats.map((b: { batch_size: number; compute_infer: Duration }) => [b.batch_size, b.compute_infer.count]));
    expect(batches).toEqual(EXPECT.batches);
    // A request ends no earlier than the execution that ran it (as in Triton), so the request
    // time covers queue + compute and perf_analyzer's "overhead" is never negative.
    expect(s.success.ns).toBeGreaterThanOrEqual(s.queue.ns + s.compute_input.ns + s.compute_infer.ns + s.compute_output.ns);
    // The request that waited behind the held one spent real time queued.
    expect(s.success.ns).toBeGreaterThan(s.queue.ns);
    expect(s.queue.ns).toBeGreaterThan(0);
    expect(s.compute_infer.ns).toBeGreaterThan(0);
    expect(m.last_inference).toBeGreaterThan(Date.now() - 600_000);
    expect(m.last_inference).toBeLessThanOrEqual(Date.now());
  });

  it('reports a loaded model that served nothing with zeros', async () => {
    const m = (await stats('/v2/models/var_idle/stats')).body.model_stats[0];
    expect(m.inference_count).toBe(0);
    expect(m.execution_count).toBe(0);
    expect(m.last_inference).toBe(0);
    expect(m.batch_stats).toEqual([]);
    expect(m.inference_stats.success).toEqual({ count: 0, ns: 0 });
  });

  it('answers unknown models and versions with 400', async () => {
    const unknown = await stats('/v2/models/nope/stats');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe("requested model 'nope' is not available");
    expect((await stats('/v2/models/var_stats/versions/7/stats')).status).toBe(400);
  });
});

describe('Prometheus metrics', () => {
  it('serves Triton families with HELP/TYPE lines and sorted labels', async () => {
    const res = await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const m = await scrape(server.metricsPort!);
    const families: Array<[string, string]> = [
      ['nv_inference_request_success', 'counter'],
      ['nv_inference_request_failure', 'counter'],
      ['nv_inference_count', 'counter'],
      ['nv_inference_exec_count', 'counter'],
      ['nv_inference_pending_request_count', 'gauge'],
      ['nv_inference_request_duration_us', 'counter'],
      ['nv_inference_queue_duration_us', 'counter'],
      ['nv_inference_compute_input_duration_us', 'counter'],
      ['nv_inference_compute_infer_duration_us', 'counter'],
      ['nv_inference_compute_output_duration_us', 'counter'],
      ['nv_model_load_duration_secs', 'gauge'],
      ['tritium_stub_restarts_total', 'counter'],
      ['tritium_shm_bytes', 'gauge'],
      ['nv_cpu_utilization', 'gauge'],
      ['nv_cpu_memory_total_bytes', 'gauge'],
      ['nv_cpu_memory_used_bytes', 'gauge'],
    ];
    for (const [name, type] of families) {
      expect(m.type.get(name), name).toBe(type);
      expect(m.help.get(name), name).toBeTruthy();
    }
    expect(m.raw).toContain(`nv_inference_request_failure{model="var_stats",reason="BACKEND",version="1"} ${EXPECT.fail}\n`);
    expect(m.raw).toContain(`nv_inference_request_success{model="var_stats",version="1"} ${EXPECT.success}\n`);
    // Server-wide CPU series carry no labels.
    const cpu = metricValue(m.samples, 'nv_cpu_utilization', {})!;
    expect(cpu).toBeGreaterThanOrEqual(0);
    expect(cpu).toBeLessThanOrEqual(1);
    const total = metricValue(m.samples, 'nv_cpu_memory_total_bytes', {})!;
    const used = metricValue(m.samples, 'nv_cpu_memory_used_bytes', {})!;
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThan(total);
    expect(m.raw).toMatch(/\nnv_cpu_memory_total_bytes \d+\n/);
    // No exponents anywhere (perf_analyzer's parser reads \d+\.?\d*).
    for (const s of m.samples) expect(String(s.value), s.name).not.toMatch(/e/i);
  });

  it('counts what statistics count', async () => {
    const st = (await stats('/v2/models/var_stats/stats')).body.model_stats[0];
    const m = await scrape(server.metricsPort!);
    const v = (name: string, extra: Record<string, string> = {}) => metricValue(m.samples, name, { model: 'var_stats', version: '1', ...extra });
    expect(v('nv_inference_request_success')).toBe(EXPECT.success);
    expect(v('nv_inference_request_failure', { reason: 'BACKEND' })).toBe(EXPECT.fail);
    expect(v('nv_inference_request_failure', { reason: 'REJECTED' })).toBe(0);
    expect(v('nv_inference_request_failure', { reason: 'CANCELED' })).toBe(0);
    expect(v('nv_inference_request_failure', { reason: 'OTHER' })).toBe(0);
    expect(v('nv_inference_count')).toBe(EXPECT.inferences);
    expect(v('nv_inference_exec_count')).toBe(EXPECT.executions);
    expect(v('nv_inference_pending_request_count')).toBe(0);
    // µs counters: the statistics' ns, truncated per request.
    const us: Array<[string, number]> = [
      ['nv_inference_request_duration_us', st.inference_stats.success.ns],
      ['nv_inference_queue_duration_us', st.inference_stats.queue.ns],
      ['nv_inference_compute_input_duration_us', st.inference_stats.compute_input.ns],
      ['nv_inference_compute_infer_duration_us', st.inference_stats.compute_infer.ns],
      ['nv_inference_compute_output_duration_us', st.inference_stats.compute_output.ns],
    ];
    for (const [name, ns] of us) {
      const got = v(name)!;
      expect(got, name).toBeLessThanOrEqual(ns / 1000);
      // At most two truncations per request (the request duration is added in two parts).
      expect(got, name).toBeGreaterThanOrEqual(ns / 1000 - 2 * EXPECT.success - 1);
    }
    expect(v('nv_model_load_duration_secs')).toBeGreaterThan(0);
    // The idle model's series exist from load, zero-valued.
    expect(metricValue(m.samples, 'nv_inference_request_success', { model: 'var_idle', version: '1' })).toBe(0);
    expect(metricValue(m.samples, 'nv_inference_request_failure', { model: 'var_idle', reason: 'REJECTED', version: '1' })).toBe(0);
  });

  it('reports shared-memory bytes per stub instance', async () => {
    const m = await scrape(server.metricsPort!);
    for (const model of ['var_stats', 'var_idle']) {
      const bytes = metricValue(m.samples, 'tritium_shm_bytes', { instance: `${model}_0_0`, model });
      expect(bytes, model).toBeGreaterThan(0);
    }
  });

  it('counts a stub restart after the stub is killed', async () => {
    const m0 = await scrape(server.metricsPort!);
    expect(metricValue(m0.samples, 'tritium_stub_restarts_total', { instance: 'var_idle_0_0', model: 'var_idle' }) ?? 0).toBe(0);
    const stub = stubPid(server.proc.pid!, 'var_idle');
    process.kill(stub, 'SIGKILL');
    await waitFor('the restart', async () => {
      const m = await scrape(server.metricsPort!);
      return metricValue(m.samples, 'tritium_stub_restarts_total', { instance: 'var_idle_0_0', model: 'var_idle' }) === 1;
    });
    await waitFor('ready again', async () => (await fetch(`${server.http}/v2/models/var_idle/ready`)).status === 200);
    const r = await inferJson(server.http, 'var_idle', {});
    expect(r.status, r.error).toBe(200);
    expect(stubPid(server.proc.pid!, 'var_idle')).not.toBe(stub);
  });
});

/** The pid of the stub process of `model` among the server's (Linux /proc). */
function stubPid(serverPid: number, model: string): number {
  const found = stubPidsOf(serverPid, `/${model}/`);
  if (found.length !== 1) throw new Error(`expected one stub of ${model}, found ${found.length}`);
  return found[0]!;
}
