/**
 * Custom metrics from model.py (pb_utils.MetricFamily, docs/protocol-notes.md, "Custom
 * metrics"): the custom_metrics model's counter, gauge and histogram, used by two instances,
 * reach `/metrics` (parsed as Prometheus text) with their labels and Triton's layout, share one
 * value per label set across instances, refuse misuse with Triton's texts, and leave `/metrics`
 * with the model.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { metricValue, scrape, waitFor } from './infer-helpers.js';

let s: Tritium;
const repo = makeRepo(['custom_metrics']);
const counts: number[] = [];
let errors: string[] = [];

async function infer(x: number): Promise<{ count: number; errors: string[] }> {
  const res = await fetch(`${s.http}/v2/models/custom_metrics/infer`, {
    method: 'POST',
    body: JSON.stringify({ inputs: [{ name: 'IN', shape: [1], datatype: 'FP32', data: [x] }] }),
  });
  const json = await res.json();
  expect(res.status, JSON.stringify(json)).toBe(200);
  const out = (name: string) => json.outputs.find((o: { name: string }) => o.name === name).data[0];
  return { count: out('COUNT'), errors: JSON.parse(out('ERRORS')) };
}

beforeAll(async () => {
  s = await startTritium({ repos: [repo], args: ['--model-control-mode=explicit', '--load-model=custom_metrics'] });
  for (const x of [0.5, 3, 20]) {
    const r = await infer(x);
    counts.push(r.count);
    errors = r.errors;
  }
});

afterAll(async () => {
  await stopAndExpectNoShm(s);
  fs.rmSync(repo, { recursive: true, force: true });
});

describe('pb_utils.MetricFamily on /metrics', () => {
  it('shares one value per label set between the instances (value() sees every increment)', () => {
    expect(counts).toEqual([1, 2, 3]);
  });

  it('exports the counter, gauge and histogram with their labels, help and type', async () => {
    const m = await scrape(s.metricsPort!);
    expect(m.type.get('cm_requests')).toBe('counter');
    expect(m.help.get('cm_requests')).toBe('Requests seen');
    expect(metricValue(m.samples, 'cm_requests', { b: 'x', model: 'custom_metrics' })).toBe(3);
    expect(m.type.get('cm_level')).toBe('gauge');
    // Each instance set -3.5 (a set replaces), then 0.5 + 3 + 20 was added.
    expect(metricValue(m.samples, 'cm_level', { k: 'v' })).toBe(20);
    expect(m.type.get('cm_sizes')).toBe('histogram');
    expect(metricValue(m.samples, 'cm_sizes_count', { k: 'v' })).toBe(3);
    expect(metricValue(m.samples, 'cm_sizes_sum', { k: 'v' })).toBe(23.5);
    const buckets = m.samples.filter((x) => x.name === 'cm_sizes_bucket').map((x) => [x.labels.le, x.value]);
    expect(buckets).toEqual([
      ['1', 1],
      ['2.5', 1],
      ['10', 2],
      ['+Inf', 3],
    ]);
  });

  it('lays the families out as tritonserver 2.51 prints them', async () => {
    const { raw } = await scrape(s.metricsPort!);
    expect(raw).toContain('# HELP cm_requests Requests seen\n# TYPE cm_requests counter\ncm_requests{b="x",model="custom_metrics"} 3\n');
    expect(raw).toContain(
      [
        '# HELP cm_sizes Sizes',
        '# TYPE cm_sizes histogram',
        'cm_sizes_count{k="v"} 3',
        'cm_sizes_sum{k="v"} 23.5',
        'cm_sizes_bucket{k="v",le="1"} 1',
        'cm_sizes_bucket{k="v",le="2.5"} 1',
        'cm_sizes_bucket{k="v",le="10"} 2',
        'cm_sizes_bucket{k="v",le="+Inf"} 3',
      ].join('\n'),
    );
  });

  it('drops a family whose MetricFamily objects are all deleted', async () => {
    const m = await scrape(s.metricsPort!);
    expect(m.type.has('cm_gone')).toBe(false);
  });

  it('refuses misuse with Triton’s texts', () => {
    const instance = "model 'custom_metrics_0_[01]'";
    const core = (prefix: string, message: string) => new RegExp(`^${prefix}: Failed to process the request for ${instance}, message: ${message}$`);
    const expected: Array<RegExp | string> = [
      core('Failed to increment metric value', 'TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by non-negative values\\.'),
      core('Failed to set metric value', 'TRITONSERVER_METRIC_KIND_COUNTER does not support Set'),
      core('Failed to observe metric value', 'TRITONSERVER_METRIC_KIND_COUNTER does not support Observe'),
      core('Failed to get metric value', 'TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Value'),
      core('Failed to increment metric value', 'TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Increment'),
      core('Failed to observe metric value', 'TRITONSERVER_METRIC_KIND_GAUGE does not support Observe'),
      'Failed to create metric. Missing required buckets.',
      'Failed to create metric. Unexpected buckets found.',
      'Failed to create metric. Labels must be a dictionary.',
      core('Error when creating MetricFamily', 'Family name already exists with different type'),
      core('Error when creating MetricFamily', 'Invalid metric name'),
      core('Error when creating Metric', 'Bucket Boundaries must be strictly sorted'),
      core('Error when creating Metric', 'attempt to access JSON non-string as string'),
      "Failed to set metric value: Invalid metric operation as the corresponding 'MetricFamily' has been deleted. The 'MetricFamily' object should be deleted AFTER its corresponding 'Metric' objects have been deleted.",
    ];
    expect(errors).toHaveLength(expected.length);
    expected.forEach((e, i) => {
      if (typeof e === 'string') expect(errors[i]).toBe(e);
      else expect(errors[i]).toMatch(e);
    });
  });

  it('removes the families when the model is unloaded', async () => {
    const res = await fetch(`${s.http}/v2/repository/models/custom_metrics/unload`, { method: 'POST' });
    expect(res.status).toBe(200);
    await waitFor('custom families gone', async () => !(await scrape(s.metricsPort!)).type.has('cm_requests'));
    const m = await scrape(s.metricsPort!);
    expect([...m.type.keys()].filter((n) => n.startsWith('cm_'))).toEqual([]);
  });
});
