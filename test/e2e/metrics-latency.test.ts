/**
 * The optional metric families on a running server (docs/protocol-notes.md, "Metrics"), with real
 * Python stubs and `/metrics` parsed as Prometheus text:
 *
 *  - `--metrics-config summary_latencies=true` (+ `summary_quantiles`): the five `_summary_us`
 *    families, `_count` = requests sent, `_sum` = the matching `_duration_us` counter, the
 *    configured quantile labels;
 *  - `--metrics-config histogram_latencies=true`: `nv_inference_first_response_histogram_ms` for the
 *    decoupled models only, with Triton's default buckets or a config's `model_metrics` ones;
 *  - the nv_gpu_* families read with nvidia-smi. A real GPU was not available here: a small fake
 *    `nvidia-smi` script, put first on the server's PATH, prints two GPUs' CSV lines the way the
 *    real one answers the query; without nvidia-smi, and with `--allow-gpu-metrics=false`, no
 *    GPU family is printed at all.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, TEST_MODELS, type Tritium } from '../helpers/server.js';
import { metricValue, scrape, waitFor } from './infer-helpers.js';

const UUID_A = 'GPU-0b7d2e4f-1111-2222-3333-444455556666';
const UUID_B = 'GPU-9c8d7e6f-aaaa-bbbb-cccc-ddddeeeeffff';
const GPU_FAMILIES = ['nv_gpu_utilization', 'nv_gpu_memory_total_bytes', 'nv_gpu_memory_used_bytes', 'nv_gpu_power_usage', 'nv_gpu_power_limit'];
const SUMMARIES = ['request', 'queue', 'compute_input', 'compute_infer', 'compute_output'];

let repo: string;
let smiDir: string;
let server: Tritium;

const addSub = { inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] })) };

async function infer(model: string): Promise<void> {
  const res = await fetch(`${server.http}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify(addSub) });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

/** A decoupled request through generate_stream: `n` responses. */
async function stream(model: string, n: number): Promise<void> {
  const res = await fetch(`${server.http}/v2/models/${model}/generate_stream`, { method: 'POST', body: JSON.stringify({ N: [n] }) });
  expect(res.status).toBe(200);
  expect((await res.text()).match(/^data: /gm)).toHaveLength(n);
}

beforeAll(async () => {
  repo = makeRepo(['add_sub', 'count_up', { from: path.join(TEST_MODELS, 'count_up'), name: 'count_up_buckets' }]);
  fs.appendFileSync(
    path.join(repo, 'count_up_buckets', 'config.pbtxt'),
    `model_metrics { metric_control [ {
  metric_identifier { family: "nv_inference_first_response_histogram_ms" }
  histogram_options { buckets: [ -1, 0, 1, 2.5 ] }
} ] }
`,
  );
  // The fake nvidia-smi: what the real one prints for --query-gpu=<fields> --format=csv,noheader,nounits.
  smiDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-nvidia-smi-'));
  fs.writeFileSync(
    path.join(smiDir, 'nvidia-smi'),
    `#!/bin/sh
case "$1" in --query-gpu=uuid,utilization.gpu,memory.used,memory.total,power.draw,power.limit*) ;; *) echo "unexpected $1" >&2; exit 2;; esac
echo "${UUID_A}, 37, 4096, 81920, 69.87, 700.00, 123456789"
echo "${UUID_B}, 0, 1, 16384, [N/A], [N/A], [N/A]"
`,
    { mode: 0o755 },
  );
  server = await startTritium({
    repos: [repo],
    args: [
      '--metrics-config=summary_latencies=true',
      '--metrics-config=summary_quantiles=0.5:0.05,0.9:0.01',
      '--metrics-config=histogram_latencies=true',
      '--metrics-interval-ms=100',
    ],
    env: { PATH: `${smiDir}:${process.env.PATH ?? ''}` },
  });
  for (let i = 0; i < 5; i++) await infer('add_sub');
  for (let i = 0; i < 3; i++) await stream('count_up', 2);
  await stream('count_up_buckets', 1);
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(repo, { recursive: true, force: true });
  fs.rmSync(smiDir, { recursive: true, force: true });
});

describe('summary_latencies', () => {
  it('prints the five summaries per model, counted per request, sums equal to the counters, the configured quantiles', async () => {
    const m = await scrape(server.metricsPort!);
    for (const [model, requests] of [
      ['add_sub', 5],
      ['count_up', 3],
    ] as const) {
      const l = { model, version: '1' };
      expect(metricValue(m.samples, 'nv_inference_request_success', l)).toBe(requests);
      for (const family of SUMMARIES) {
        const name = `nv_inference_${family}_summary_us`;
        expect(m.type.get(name)).toBe('summary');
        expect(metricValue(m.samples, `${name}_count`, l)).toBe(requests);
        expect(metricValue(m.samples, `${name}_sum`, l)).toBe(metricValue(m.samples, `nv_inference_${family}_duration_us`, l));
        const quantiles = m.samples.filter((s) => s.name === name && s.labels.model === model);
        expect(quantiles.map((s) => s.labels.quantile)).toEqual(['0.5', '0.9']);
        for (const q of quantiles) expect(Number.isFinite(q.value)).toBe(true);
      }
    }
    // Triton's layout: count, sum, then the quantiles with `quantile` after model and version.
    expect(m.raw).toMatch(
      /\nnv_inference_request_summary_us_count\{model="add_sub",version="1"\} 5\nnv_inference_request_summary_us_sum\{model="add_sub",version="1"\} \d+\nnv_inference_request_summary_us\{model="add_sub",version="1",quantile="0.5"\} \d+\n/,
    );
  });
});

describe('histogram_latencies', () => {
  it('times the first response of decoupled models only, with default or model_metrics buckets', async () => {
    const m = await scrape(server.metricsPort!);
    const name = 'nv_inference_first_response_histogram_ms';
    expect(m.type.get(name)).toBe('histogram');
    expect(m.samples.filter((s) => s.name.startsWith(name) && s.labels.model === 'add_sub')).toEqual([]);
    const l = { model: 'count_up', version: '1' };
    expect(metricValue(m.samples, `${name}_count`, l)).toBe(3);
    const buckets = m.samples.filter((s) => s.name === `${name}_bucket` && s.labels.model === 'count_up');
    expect(buckets.map((s) => s.labels.le)).toEqual(['100', '500', '2000', '5000', '+Inf']);
    expect(buckets.at(-1)!.value).toBe(3);
    const custom = m.samples.filter((s) => s.name === `${name}_bucket` && s.labels.model === 'count_up_buckets');
    expect(custom.map((s) => s.labels.le)).toEqual(['-1', '0', '1', '2.5', '+Inf']);
    expect(metricValue(m.samples, `${name}_count`, { model: 'count_up_buckets', version: '1' })).toBe(1);
  });
});

describe('GPU metrics', () => {
  it('prints each GPU family with one gpu_uuid label per GPU, in Triton units, as perf_analyzer parses them', async () => {
    await waitFor('GPU families', async () => (await scrape(server.metricsPort!)).type.has('nv_gpu_utilization'));
    const m = await scrape(server.metricsPort!);
    for (const name of [...GPU_FAMILIES, 'nv_energy_consumption']) {
      expect(m.help.has(name)).toBe(true);
      for (const s of m.samples.filter((x) => x.name === name)) expect(Object.keys(s.labels)).toEqual(['gpu_uuid']);
    }
    const a = { gpu_uuid: UUID_A };
    const b = { gpu_uuid: UUID_B };
    expect(metricValue(m.samples, 'nv_gpu_utilization', a)).toBe(0.37);
    expect(metricValue(m.samples, 'nv_gpu_utilization', b)).toBe(0);
    expect(metricValue(m.samples, 'nv_gpu_memory_total_bytes', a)).toBe(81920 * 2 ** 20);
    expect(metricValue(m.samples, 'nv_gpu_memory_used_bytes', b)).toBe(2 ** 20);
    expect(metricValue(m.samples, 'nv_gpu_power_usage', a)).toBe(69.87);
    expect(metricValue(m.samples, 'nv_gpu_power_limit', a)).toBe(700);
    // "[N/A]" fields are left out, not printed as 0.
    expect(metricValue(m.samples, 'nv_gpu_power_usage', b)).toBeUndefined();
    // The same energy every reading: nothing consumed since the server started.
    expect(metricValue(m.samples, 'nv_energy_consumption', a)).toBe(0);
    // perf_analyzer --collect-metrics: `\n<name>{gpu_uuid="<uuid>"} <digits>[.<digits>]`, no exponent.
    expect(m.raw).toContain(`\nnv_gpu_memory_total_bytes{gpu_uuid="${UUID_A}"} 85899345920\n`);
    for (const name of GPU_FAMILIES) expect(m.raw).toMatch(new RegExp(`\\n${name}\\{gpu_uuid="${UUID_A}"\\} \\d+\\.?\\d*\\n`));
    expect(server.log()).toContain(`Collecting metrics for GPU 0: ${UUID_A}`);
    expect(server.log()).toContain(`Collecting metrics for GPU 1: ${UUID_B}`);
  });

  it('has no GPU family with --allow-gpu-metrics=false, nor summaries or histogram without their settings', async () => {
    const s = await startTritium({
      repos: [repo],
      args: ['--allow-gpu-metrics=false', '--metrics-interval-ms=100'],
      env: { PATH: `${smiDir}:${process.env.PATH ?? ''}` },
    });
    try {
      // Several --metrics-interval-ms later: a reading would have registered the GPU families by now.
      await new Promise((r) => setTimeout(r, 300));
      const names = [...(await scrape(s.metricsPort!)).type.keys()];
      expect(names.filter((n) => n.startsWith('nv_gpu_') || n === 'nv_energy_consumption' || n.includes('_summary_') || n.includes('histogram'))).toEqual([]);
      expect(s.log()).not.toContain('Collecting metrics for GPU');
    } finally {
      await stopAndExpectNoShm(s);
    }
  });

  it('has no GPU family without nvidia-smi, and says why at verbose level', async () => {
    const onPath = spawnSync('sh', ['-c', 'command -v nvidia-smi']).status === 0;
    if (onPath) return; // a host with a real nvidia-smi: nothing to show here
    const s = await startTritium({ repos: [repo], args: ['--log-verbose=1', '--metrics-interval-ms=100'] });
    try {
      await waitFor('the GPU line', () => s.log().includes('GPU metrics:'));
      expect(s.log()).toContain('GPU metrics: no nvidia-smi on PATH; the nv_gpu_* families are absent');
      const names = [...(await scrape(s.metricsPort!)).type.keys()];
      expect(names.filter((n) => n.startsWith('nv_gpu_') || n === 'nv_energy_consumption')).toEqual([]);
    } finally {
      await stopAndExpectNoShm(s);
    }
  });
});
