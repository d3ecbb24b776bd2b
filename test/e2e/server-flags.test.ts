/**
 * tritonserver flags that change what the server does, checked on a running server:
 * `--model-load-thread-count` (how many models initialise at once), `--model-config-name`,
 * `--http-header-forward-pattern` / `--grpc-header-forward-pattern`, `--model-load-retry-count`, `--allow-cpu-metrics`,
 * `--metrics-interval-ms` and `--metrics-config=counter_latencies` on `/metrics` (parsed as
 * Prometheus text), and the GPU families' absence on a host without GPUs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, makeRepo, python, startTritium, stopAndExpectNoShm, TEST_MODELS, type Tritium } from '../helpers/server.js';
import { INSTANCE_PROBE_IO, scrape, writeVariant } from './infer-helpers.js';

const PROBE = (sleepS: number) => `${INSTANCE_PROBE_IO}instance_group [ { count: 1, kind: KIND_CPU } ]
parameters { key: "INIT_SLEEP_S" value: { string_value: "${sleepS}" } }
`;

/** [initialize start, initialize end] of each model's one instance, from the probe's TIMES output. */
async function initWindows(s: Tritium, models: string[]): Promise<Array<[number, number]>> {
  const out: Array<[number, number]> = [];
  for (const m of models) {
    const res = await fetch(`${s.http}/v2/models/${m}/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'IN', shape: [1], datatype: 'FP32', data: [0] }] }),
    });
    const json = await res.json();
    const times = json.outputs.find((o: { name: string }) => o.name === 'TIMES').data as number[];
    out.push([times[0]!, times[1]!]);
  }
  return out;
}

const overlap = ([a0, a1]: [number, number], [b0, b1]: [number, number]) => a0 < b1 && b0 < a1;

beforeAll(() => ensureBuilt());

describe('--model-load-thread-count', () => {
  it('initialises one model at a time with 1', async () => {
    const repo = makeRepo([]);
    writeVariant(repo, 'instance_probe', 'probe_a', PROBE(1));
    writeVariant(repo, 'instance_probe', 'probe_b', PROBE(1));
    const s = await startTritium({ repos: [repo], args: ['--model-load-thread-count=1'] });
    try {
      const [a, b] = await initWindows(s, ['probe_a', 'probe_b']);
      expect(overlap(a!, b!)).toBe(false);
    } finally {
      await stopAndExpectNoShm(s);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });

  it('initialises models side by side with 2', async () => {
    const repo = makeRepo([]);
    // Long enough that the second stub starts within the first one's initialize().
    writeVariant(repo, 'instance_probe', 'probe_a', PROBE(4));
    writeVariant(repo, 'instance_probe', 'probe_b', PROBE(4));
    const s = await startTritium({ repos: [repo], args: ['--model-load-thread-count=2'] });
    try {
      const [a, b] = await initWindows(s, ['probe_a', 'probe_b']);
      expect(overlap(a!, b!)).toBe(true);
    } finally {
      await stopAndExpectNoShm(s);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
});

describe('--model-load-retry-count', () => {
  it.each([
    [0, 1],
    [2, 3],
  ])('=%i tries to load a failing version %i time(s), logging each failure as tritonserver does', async (retries, tries) => {
    const repo = makeRepo(['init_fails']);
    const s = await startTritium({ repos: [repo], args: ['--exit-on-error=false', `--model-load-retry-count=${retries}`] });
    try {
      expect(s.log().match(/failed to load 'init_fails' version 1: /g)).toHaveLength(tries);
      const res = await fetch(`${s.http}/v2/models/init_fails/ready`);
      expect(res.status).not.toBe(200);
    } finally {
      await stopAndExpectNoShm(s);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
});

describe('--model-config-name', () => {
  it("loads a model's configs/<name>.pbtxt where it has one, else its config.pbtxt", async () => {
    const repo = makeRepo([
      { from: path.join(TEST_MODELS, 'label_classes'), name: 'custom' },
      { from: path.join(TEST_MODELS, 'label_classes'), name: 'plain' },
    ]);
    const base = fs.readFileSync(path.join(repo, 'custom', 'config.pbtxt'), 'utf8');
    fs.mkdirSync(path.join(repo, 'custom', 'configs'));
    fs.writeFileSync(path.join(repo, 'custom', 'configs', 'h100.pbtxt'), base.replace('max_batch_size: 4', 'max_batch_size: 2'));
    const s = await startTritium({ repos: [repo], args: ['--model-config-name=h100'] });
    try {
      const batch = async (m: string) => (await (await fetch(`${s.http}/v2/models/${m}/config`)).json()).max_batch_size;
      expect([await batch('custom'), await batch('plain')]).toEqual([2, 4]);
    } finally {
      await stopAndExpectNoShm(s);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
});

describe('header forwarding', () => {
  it('forwards headers and gRPC metadata whose name matches the pattern as request parameters', async () => {
    const repo = makeRepo(['request_params']);
    const s = await startTritium({ repos: [repo], args: ['--http-header-forward-pattern=x-.*', '--grpc-header-forward-pattern=x-.*'] });
    try {
      const res = await fetch(`${s.http}/v2/models/request_params/infer`, {
        method: 'POST',
        headers: { 'X-Trace-Tag': 'abc', 'my-x-thing': '1', Xavier: '2' },
        body: JSON.stringify({ parameters: { p: 1 }, inputs: [{ name: 'IN', shape: [1], datatype: 'FP32', data: [1] }] }),
      });
      const http = JSON.parse((await res.json()).outputs[0].data[0]);
      // Any part of the name, any case (tritonserver 2.51); names as the server reads them, in lower case.
      expect(http).toEqual({ p: 1, 'x-trace-tag': 'abc', 'my-x-thing': '1' });
      const grpc = python(`
import numpy as np, tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${s.grpcPort}")
i = g.InferInput("IN", [1], "FP32"); i.set_data_from_numpy(np.array([1], dtype=np.float32))
r = c.infer("request_params", [i], headers={"x-trace-tag": "abc", "other": "1", "my-x-thing": "2"})
print(r.as_numpy("PARAMS")[0].decode())
`);
      expect(JSON.parse(grpc)).toEqual({ 'x-trace-tag': 'abc', 'my-x-thing': '2' });
    } finally {
      await stopAndExpectNoShm(s);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });

  it('forwards nothing without a pattern', async () => {
    const repo = makeRepo(['request_params']);
    const s = await startTritium({ repos: [repo] });
    try {
      const res = await fetch(`${s.http}/v2/models/request_params/infer`, {
        method: 'POST',
        headers: { 'X-Trace-Tag': 'abc' },
        body: JSON.stringify({ inputs: [{ name: 'IN', shape: [1], datatype: 'FP32', data: [1] }] }),
      });
      expect(JSON.parse((await res.json()).outputs[0].data[0])).toEqual({});
    } finally {
      await stopAndExpectNoShm(s);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
});

describe('request parameters', () => {
  it('hands a parameter named __proto__ to the model like any other, over HTTP and gRPC', async () => {
    // A key the frontends and the core must set as an own property: assigned, it would call
    // the prototype setter and vanish before the model saw it.
    const repo = makeRepo(['request_params']);
    const s = await startTritium({ repos: [repo] });
    try {
      const res = await fetch(`${s.http}/v2/models/request_params/infer`, {
        method: 'POST',
        body: '{"parameters": {"__proto__": "x", "p": 1}, "inputs": [{"name": "IN", "shape": [1], "datatype": "FP32", "data": [1]}]}',
      });
      const http = (await res.json()).outputs[0].data[0];
      expect(JSON.parse(http)).toEqual(JSON.parse('{"__proto__": "x", "p": 1}'));
      const grpc = python(`
import numpy as np, tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${s.grpcPort}")
i = g.InferInput("IN", [1], "FP32"); i.set_data_from_numpy(np.array([1], dtype=np.float32))
r = c.infer("request_params", [i], parameters={"__proto__": "y", "q": True})
print(r.as_numpy("PARAMS")[0].decode())
`);
      expect(JSON.parse(grpc)).toEqual(JSON.parse('{"__proto__": "y", "q": true}'));
    } finally {
      await stopAndExpectNoShm(s);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
});

describe('metrics flags', () => {
  const repo = makeRepo(['add_sub']);
  afterAll(() => fs.rmSync(repo, { recursive: true, force: true }));

  it('has no nv_gpu_* family on a host without GPUs, and the nv_cpu_* ones by default', async () => {
    const s = await startTritium({ repos: [repo] });
    try {
      const m = await scrape(s.metricsPort!);
      expect([...m.type.keys()].filter((n) => n.startsWith('nv_gpu_'))).toEqual([]);
      expect(m.type.get('nv_cpu_utilization')).toBe('gauge');
      expect(m.type.get('nv_inference_request_duration_us')).toBe('counter');
    } finally {
      await stopAndExpectNoShm(s);
    }
  });

  it('drops the nv_cpu_* families with --allow-cpu-metrics=false and the latency counters with counter_latencies=false', async () => {
    const s = await startTritium({ repos: [repo], args: ['--allow-cpu-metrics=false', '--metrics-config=counter_latencies=false'] });
    try {
      const m = await scrape(s.metricsPort!);
      const names = [...m.type.keys()];
      expect(names.filter((n) => n.startsWith('nv_cpu_'))).toEqual([]);
      expect(names.filter((n) => n.endsWith('_duration_us'))).toEqual([]);
      expect(m.type.get('nv_inference_count')).toBe('counter');
    } finally {
      await stopAndExpectNoShm(s);
    }
  });

  it('reads the CPU figures once per --metrics-interval-ms, not per scrape', async () => {
    const s = await startTritium({ repos: [repo], args: ['--metrics-interval-ms=3600000'] });
    try {
      const cpu = async () => (await scrape(s.metricsPort!)).samples.filter((x) => x.name.startsWith('nv_cpu_')).map((x) => `${x.name} ${x.value}`);
      const first = await cpu();
      // Memory in use moves by the page between readings; with an hour's interval nothing is read again.
      const garbage = Array.from({ length: 200_000 }, (_, i) => ({ i }));
      await new Promise((r) => setTimeout(r, 1500));
      expect(await cpu()).toEqual(first);
      expect(first).toHaveLength(3);
      void garbage;
    } finally {
      await stopAndExpectNoShm(s);
    }
  });
});
