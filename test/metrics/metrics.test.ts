import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { ModelConfigSchema } from '../../src/core/config/schema.js';
import { Errors } from '../../src/core/errors.js';
import type { ExecutionTimes } from '../../src/core/scheduling/types.js';
import { Metrics } from '../../src/frontends/metrics/metrics.js';
import { metricsObserver } from '../../src/frontends/metrics/observer.js';
import { ModelStats } from '../../src/core/stats/model-stats.js';
import { startMetricsServer } from '../../src/frontends/metrics/server.js';
import { FakeRequest, okResponse } from '../scheduling/helpers.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  labelText: string;
  value: string;
}

/** Parses the exposition back; checks every family has HELP and TYPE. */
function parse(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const helps = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let m = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (m) {
      types.set(m[1]!, m[2]!);
      continue;
    }
    m = /^# HELP (\S+) .+$/.exec(line);
    if (m) {
      helps.add(m[1]!);
      continue;
    }
    // perf_analyzer's number shape: digits, optional dot, digits — never an exponent.
    m = /^([a-z_]+)(?:\{([^}]*)\})? (\d+\.?\d*|Nan)$/.exec(line);
    if (!m) throw new Error(`unparsable line: ${line}`);
    const labels: Record<string, string> = {};
    for (const kv of (m[2] ?? '').split(',').filter(Boolean)) {
      const [k, v] = kv.split('=');
      labels[k!] = JSON.parse(v!) as string;
    }
    samples.push({ name: m[1]!, labels, labelText: m[2] ?? '', value: m[3]! });
  }
  for (const t of types.keys()) expect(helps.has(t)).toBe(true);
  return { samples, types };
}

function value(samples: Sample[], name: string, labels: Record<string, string>): string | undefined {
  return samples.find(
    (s) => s.name === name && Object.keys(labels).length === Object.keys(s.labels).length && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )?.value;
}

const PER_MODEL = [
  ['nv_inference_request_success', 'counter'],
  ['nv_inference_count', 'counter'],
  ['nv_inference_exec_count', 'counter'],
  ['nv_inference_pending_request_count', 'gauge'],
  ['nv_inference_request_duration_us', 'counter'],
  ['nv_inference_queue_duration_us', 'counter'],
  ['nv_inference_compute_input_duration_us', 'counter'],
  ['nv_inference_compute_infer_duration_us', 'counter'],
  ['nv_inference_compute_output_duration_us', 'counter'],
  ['nv_model_load_duration_secs', 'gauge'],
] as const;

describe('Metrics', () => {
  it('creates zero-valued series at registration, failure reasons included, labels sorted', async () => {
    const m = new Metrics();
    m.registerModel('simple', '1', () => 0);
    const { samples, types } = parse(await m.render());
    for (const [name, type] of PER_MODEL) {
      expect(types.get(name)).toBe(type);
      expect(value(samples, name, { model: 'simple', version: '1' })).toBe('0');
    }
    expect(types.get('nv_inference_request_failure')).toBe('counter');
    for (const reason of ['REJECTED', 'CANCELED', 'BACKEND', 'OTHER']) {
      expect(value(samples, 'nv_inference_request_failure', { model: 'simple', reason, version: '1' })).toBe('0');
    }
    expect(samples.find((s) => s.name === 'nv_inference_request_failure')!.labelText).toBe('model="simple",reason="REJECTED",version="1"');
    expect(samples.find((s) => s.name === 'nv_inference_count')!.labelText).toBe('model="simple",version="1"');
  });

  it('counts what the observer reports, matching the statistics in µs', async () => {
    const m = new Metrics();
    const obs = metricsObserver(m);
    let pending = 7;
    obs.modelLoaded('simple', '1', () => pending, 1.25);
    // The core's per-version statistics feed the listener the observer hands out.
    const stats = new ModelStats(obs.statsListener('simple', '1'));
    const t0 = 1_000_000_000n;
    const times: ExecutionTimes = { startNs: t0, inputEndNs: t0 + 2_000n, inferEndNs: t0 + 12_000n, endNs: t0 + 15_000n };
    const reqs = [3, 2].map((n, i) => {
      const r = new FakeRequest(`r${i}`, { batchSize: n });
      (r as { arrivalNs: bigint }).arrivalNs = t0 - 5_000n;
      r.queueEndNs = t0;
      return r;
    });
    for (const r of reqs) {
      r.respond(okResponse(r.id));
      stats.recordSuccess(r, t0 + 20_000n);
    }
    stats.recordExecution(reqs, times, 5);
    const failed = new FakeRequest('f');
    stats.recordFailure(failed, failed.arrivalNs + 1n, Errors.queueFull().reason);
    stats.recordFailure(failed, failed.arrivalNs + 1n, Errors.cancelled().reason);
    stats.recordFailure(failed, failed.arrivalNs + 1n, Errors.stubUnhealthy('x').reason);
    obs.stubRestart('simple', 'simple_0');
    obs.stubRestart('simple', 'simple_0');
    m.setShmBytesSource(() => [{ model: 'simple', instance: 'simple_0', bytes: 85_899_345_920 }]);

    const { samples, types } = parse(await m.render());
    const l = { model: 'simple', version: '1' };
    expect(value(samples, 'nv_inference_request_success', l)).toBe('2');
    expect(value(samples, 'nv_inference_count', l)).toBe('5');
    expect(value(samples, 'nv_inference_exec_count', l)).toBe('1');
    expect(value(samples, 'nv_inference_pending_request_count', l)).toBe('7');
    expect(value(samples, 'nv_inference_request_duration_us', l)).toBe('50'); // 2 × 25 µs
    expect(value(samples, 'nv_inference_queue_duration_us', l)).toBe('10');
    expect(value(samples, 'nv_inference_compute_input_duration_us', l)).toBe('4');
    expect(value(samples, 'nv_inference_compute_infer_duration_us', l)).toBe('20');
    expect(value(samples, 'nv_inference_compute_output_duration_us', l)).toBe('6');
    expect(value(samples, 'nv_model_load_duration_secs', l)).toBe('1.25');
    expect(value(samples, 'nv_inference_request_failure', { ...l, reason: 'REJECTED' })).toBe('1');
    expect(value(samples, 'nv_inference_request_failure', { ...l, reason: 'CANCELED' })).toBe('1');
    expect(value(samples, 'nv_inference_request_failure', { ...l, reason: 'BACKEND' })).toBe('1');
    expect(value(samples, 'nv_inference_request_failure', { ...l, reason: 'OTHER' })).toBe('0');
    expect(types.get('tritium_stub_restarts_total')).toBe('counter');
    expect(value(samples, 'tritium_stub_restarts_total', { instance: 'simple_0', model: 'simple' })).toBe('2');
    expect(types.get('tritium_shm_bytes')).toBe('gauge');
    expect(value(samples, 'tritium_shm_bytes', { instance: 'simple_0', model: 'simple' })).toBe('85899345920');

    pending = 0;
    const again = parse(await m.render()).samples;
    expect(value(again, 'nv_inference_pending_request_count', l)).toBe('0');
  });

  it('prints large values without an exponent and drops series on unregistration', async () => {
    const m = new Metrics();
    m.registerModel('a', '1', () => 0);
    m.registerModel('b', '2', () => 0);
    m.setLoadDuration('a', '1', 1e-9);
    for (let i = 0; i < 3; i++) m.onSuccess('a', '1', 1, 10n ** 20n, 0n);
    const text = await m.render();
    expect(text).not.toMatch(/e[+-]\d/);
    const { samples } = parse(text);
    expect(value(samples, 'nv_inference_request_duration_us', { model: 'a', version: '1' })).toBe('300000000000000000');
    expect(value(samples, 'nv_model_load_duration_secs', { model: 'a', version: '1' })).toBe('0');
    m.unregisterModel('a', '1');
    const after = parse(await m.render()).samples;
    expect(after.some((s) => s.labels.model === 'a')).toBe(false);
    expect(value(after, 'nv_inference_count', { model: 'b', version: '2' })).toBe('0');
  });

  it('omits the duration counters with counterLatencies: false', async () => {
    const m = new Metrics({ counterLatencies: false });
    m.registerModel('a', '1', () => 0);
    const text = await m.render();
    expect(text).not.toContain('_duration_us');
    expect(text).toContain('nv_inference_request_success{model="a",version="1"} 0');
  });

  it("prints the latency summaries only with summaryLatencies, fed the counters' own µs values", async () => {
    expect(await render({})).not.toContain('_summary_us');
    const m = new Metrics({
      summaryLatencies: true,
      summaryQuantiles: [
        { quantile: 0.5, error: 0.05 },
        { quantile: 0.99, error: 0.001 },
      ],
    });
    const obs = metricsObserver(m);
    obs.modelLoaded('simple', '1', () => 0, 1);
    const text = await m.render();
    // Before any request, as tritonserver 2.51: zero count and sum, `Nan` quantiles (quantile last).
    expect(text).toContain(
      [
        'nv_inference_queue_summary_us_count{model="simple",version="1"} 0',
        'nv_inference_queue_summary_us_sum{model="simple",version="1"} 0',
        'nv_inference_queue_summary_us{model="simple",version="1",quantile="0.5"} Nan',
        'nv_inference_queue_summary_us{model="simple",version="1",quantile="0.99"} Nan',
      ].join('\n'),
    );
    const stats = new ModelStats(obs.statsListener('simple', '1'));
    const t0 = 1_000_000_000n;
    const reqs = [0, 1, 2].map((i) => {
      const r = new FakeRequest(`r${i}`);
      (r as { arrivalNs: bigint }).arrivalNs = t0 - 5_000n;
      r.queueEndNs = t0;
      return r;
    });
    // Two answered before their execution ended (the request duration grows), one after.
    for (const r of reqs.slice(0, 2)) {
      r.respond(okResponse(r.id));
      stats.recordSuccess(r, t0 + 20_000n);
    }
    stats.recordExecution(reqs, { startNs: t0, inputEndNs: t0 + 2_000n, inferEndNs: t0 + 12_000n, endNs: t0 + 30_000n }, 3);
    reqs[2]!.respond(okResponse('r2'));
    stats.recordSuccess(reqs[2]!, t0 + 40_000n);
    const { samples, types } = parse(await m.render());
    const l = { model: 'simple', version: '1' };
    for (const [family, counter] of [
      ['request', 'request_duration'],
      ['queue', 'queue_duration'],
      ['compute_input', 'compute_input_duration'],
      ['compute_infer', 'compute_infer_duration'],
      ['compute_output', 'compute_output_duration'],
    ]) {
      const name = `nv_inference_${family}_summary_us`;
      expect(types.get(name)).toBe('summary');
      expect(value(samples, `${name}_count`, l)).toBe('3');
      expect(value(samples, `${name}_sum`, l)).toBe(value(samples, `nv_inference_${counter}_us`, l));
    }
    expect(value(samples, 'nv_inference_request_summary_us', { ...l, quantile: '0.5' })).toBe('35');
    expect(value(samples, 'nv_inference_request_summary_us', { ...l, quantile: '0.99' })).toBe('45');
    expect(value(samples, 'nv_inference_compute_infer_summary_us', { ...l, quantile: '0.99' })).toBe('10');
    expect(samples.filter((s) => s.name === 'nv_inference_queue_summary_us').map((s) => s.labels.quantile)).toEqual(['0.5', '0.99']);
    m.close();
  });

  it('keeps a first-response histogram only with histogramLatencies, only for decoupled models, buckets from model_metrics', async () => {
    const decoupled = create(ModelConfigSchema, { name: 'stream', modelTransactionPolicy: { decoupled: true } });
    const custom = create(ModelConfigSchema, {
      name: 'custom',
      modelTransactionPolicy: { decoupled: true },
      modelMetrics: {
        metricControl: [
          {
            metricIdentifier: { family: 'nv_inference_first_response_histogram_ms' },
            metricOptions: { case: 'histogramOptions', value: { buckets: [2.5, -1, 0, 1] } },
          },
        ],
      },
    });
    const plainConfig = create(ModelConfigSchema, { name: 'plain' });
    const off = new Metrics();
    off.registerModel('stream', '1', () => 0, decoupled);
    expect(off.statsListener('stream', '1').onFirstResponse).toBeUndefined();
    expect(await off.render()).not.toContain('histogram');

    const m = new Metrics({ histogramLatencies: true });
    m.registerModel('stream', '1', () => 0, decoupled);
    m.registerModel('custom', '1', () => 0, custom);
    m.registerModel('plain', '1', () => 0, plainConfig);
    expect(m.statsListener('plain', '1').onFirstResponse).toBeUndefined();
    for (const ms of [50, 150, 150, 9_000]) m.statsListener('stream', '1').onFirstResponse!(BigInt(ms) * 1_000_000n + 999_999n);
    m.statsListener('custom', '1').onFirstResponse!(1_500_000n);
    const text = await m.render();
    expect(text).toContain('# TYPE nv_inference_first_response_histogram_ms histogram');
    expect(text).not.toMatch(/histogram_ms\w*\{model="plain"/);
    expect(text).toContain(
      [
        'nv_inference_first_response_histogram_ms_count{model="stream",version="1"} 4',
        'nv_inference_first_response_histogram_ms_sum{model="stream",version="1"} 9350',
        'nv_inference_first_response_histogram_ms_bucket{model="stream",version="1",le="100"} 1',
        'nv_inference_first_response_histogram_ms_bucket{model="stream",version="1",le="500"} 3',
        'nv_inference_first_response_histogram_ms_bucket{model="stream",version="1",le="2000"} 3',
        'nv_inference_first_response_histogram_ms_bucket{model="stream",version="1",le="5000"} 3',
        'nv_inference_first_response_histogram_ms_bucket{model="stream",version="1",le="+Inf"} 4',
      ].join('\n'),
    );
    const les = parse(text)
      .samples.filter((s) => s.name === 'nv_inference_first_response_histogram_ms_bucket' && s.labels.model === 'custom')
      .map((s) => `${s.labels.le}:${s.value}`);
    expect(les).toEqual(['-1:0', '0:0', '1:1', '2.5:1', '+Inf:1']);
  });

  it('uses its own registry, so two instances do not collide', async () => {
    const a = new Metrics();
    const b = new Metrics();
    a.registerModel('x', '1', () => 0);
    expect(await b.render()).not.toContain('model="x"');
  });
});

async function render(options: ConstructorParameters<typeof Metrics>[0]): Promise<string> {
  const m = new Metrics(options);
  m.registerModel('a', '1', () => 0);
  return m.render();
}

function get(port: number, path: string, method = 'GET'): Promise<{ status: number; type?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const r = request({ host: '127.0.0.1', port, path, method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'], body }));
    });
    r.on('error', reject);
    r.end();
  });
}

describe('metrics server', () => {
  it('serves /metrics and /metrics/, answers other paths empty and other methods 405', async () => {
    const m = new Metrics();
    m.registerModel('simple', '1', () => 3);
    const srv = await startMetricsServer(m, { port: 0, address: '127.0.0.1' });
    try {
      for (const path of ['/metrics', '/metrics/']) {
        const res = await get(srv.port, path);
        expect(res.status).toBe(200);
        expect(res.type).toBe('text/plain; charset=utf-8');
        expect(res.body).toContain('nv_inference_pending_request_count{model="simple",version="1"} 3');
      }
      const other = await get(srv.port, '/v2/health/ready');
      expect(other).toMatchObject({ status: 200, body: '' });
      expect((await get(srv.port, '/metrics', 'POST')).status).toBe(405);
    } finally {
      await srv.close();
    }
  });
});
