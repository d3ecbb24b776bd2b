/**
 * End-to-end on a GPU host (skipped elsewhere, CI included): what docs/gpu.md lists as checked on
 * a real GPU. A KIND_GPU Python model computing with torch on the device its instances are given
 * and answering with GPU tensors through from_dlpack; a BLS call to it; an ONNX model asking for
 * the GPU without onnxruntime-node's CUDA provider, which runs on CPU and says why; and the
 * nv_gpu_* metrics read from the real nvidia-smi. Needs torch with CUDA in the stubs' Python.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectGpus } from '../../src/core/gpus.js';
import { makeRepo, PYTHON, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { metricValue, scrape, waitFor } from './infer-helpers.js';

function torchSeesGpu(): boolean {
  if (detectGpus().length === 0) return false;
  const r = spawnSync(PYTHON, ['-c', 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'], { timeout: 120_000 });
  return r.status === 0;
}

const RUN = torchSeesGpu();

async function infer(base: string, model: string, body: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(`${base}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

const input = (rows: number[][]) => ({
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [rows.length, 4], data: rows.flat() }],
});
const out = (json: any, name: string) => json.outputs.find((o: any) => o.name === name);

describe.skipIf(!RUN)('on a GPU host', () => {
  let server: Tritium;

  beforeAll(async () => {
    const repo = makeRepo(['torch_gpu', 'bls_probe', 'simple_onnx']);
    // simple_onnx (python_models/) again, as a model whose instances ask for the GPU.
    fs.cpSync(path.join(repo, 'simple_onnx'), path.join(repo, 'onnx_gpu'), { recursive: true });
    const onnx = fs.readFileSync(path.join(repo, 'simple_onnx', 'config.pbtxt'), 'utf8');
    fs.writeFileSync(
      path.join(repo, 'onnx_gpu', 'config.pbtxt'),
      onnx
        .replace('name: "simple_onnx"', 'name: "onnx_gpu"')
        .replace('instance_group [{ kind: KIND_CPU count: 1 }]', 'instance_group [{ kind: KIND_GPU count: 1 }]'),
    );
    server = await startTritium({ repos: [repo], args: ['--metrics-interval-ms=200'], timeoutMs: 180_000 });
  }, 240_000);

  afterAll(async () => {
    // The device check (docs/gpu.md) keeps the whole server log.
    if (process.env['TRITIUM_GPU_LOG']) console.log(server?.log());
    await stopAndExpectNoShm(server);
  });

  it('gives each KIND_GPU instance its device, and answers with tensors that were in GPU memory', async () => {
    const cfg = await (await fetch(`${server.http}/v2/models/torch_gpu/config`)).json();
    expect(cfg.instance_group[0]).toMatchObject({ kind: 'KIND_GPU', count: 2, gpus: [0] });
    const rows = [
      [1, 2, 3, 4],
      [-1, 0.25, 8, 100],
    ];
    const { status, json } = await infer(server.http, 'torch_gpu', input(rows));
    expect(status, JSON.stringify(json)).toBe(200);
    expect(out(json, 'OUTPUT0').data).toEqual(rows.flat().map((x) => x * 2 + 0.5));
    expect(out(json, 'OUTPUT1').data).toEqual(rows.flat().map((x) => Math.round((x * 2 + 0.5) * 10)));
    expect(out(json, 'DEVICE').data).toEqual(['cuda:0', 'cuda:0']);
  });

  it('serves concurrent requests on both GPU instances', async () => {
    const all = await Promise.all(Array.from({ length: 64 }, (_, i) => infer(server.http, 'torch_gpu', input([[i, i, i, i]]))));
    for (const [i, r] of all.entries()) {
      expect(r.status).toBe(200);
      expect(out(r.json, 'OUTPUT0').data).toEqual([i, i, i, i].map((x) => x * 2 + 0.5));
    }
    const stats = await (await fetch(`${server.http}/v2/models/torch_gpu/stats`)).json();
    expect(stats.model_stats[0].inference_stats.success.count).toBeGreaterThanOrEqual(65);
  });

  it('reaches the GPU model by BLS, whose outputs arrive as host tensors', async () => {
    const cmd = { op: 'call', model: 'torch_gpu', inputs: { INPUT0: ['FP32', [1, 4], [1, 2, 3, 4]] }, outputs: ['OUTPUT0', 'DEVICE'] };
    const r = await infer(server.http, 'bls_probe', { inputs: [{ name: 'CMD', datatype: 'BYTES', shape: [1], data: [JSON.stringify(cmd)] }] });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const [response] = JSON.parse(out(r.json, 'RESULT').data[0]).responses;
    expect(response.outputs.OUTPUT0).toEqual(['float32', [1, 4], [2.5, 4.5, 6.5, 8.5]]);
    expect(response.outputs.DEVICE).toEqual(['object', [1, 1], ['cuda:0']]);
  });

  it('runs an ONNX model that asks for the GPU on CPU when the CUDA provider is not installed, and says why', async () => {
    const log = server.log();
    expect(log).toMatch(/model 'onnx_gpu' runs on CPU instead of GPU: .*CUDA/);
    const r = await fetch(`${server.http}/v2/models/onnx_gpu/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'FEATURES', datatype: 'FP32', shape: [1, 16], data: Array(16).fill(0.5) }] }),
    });
    expect(r.status).toBe(200);
  });

  it('exports the nv_gpu_* families read from nvidia-smi', async () => {
    let text = '';
    await waitFor('nv_gpu_memory_total_bytes', async () => {
      text = (await scrape(server.metricsPort!)).raw;
      return text.includes('nv_gpu_memory_total_bytes{');
    });
    const { samples } = await scrape(server.metricsPort!);
    const uuid = /nv_gpu_memory_total_bytes\{gpu_uuid="(GPU-[0-9a-f-]+)"\}/.exec(text)?.[1];
    expect(uuid, text).toBeDefined();
    expect(metricValue(samples, 'nv_gpu_memory_total_bytes', { gpu_uuid: uuid! })).toBeGreaterThan(10 * 2 ** 30);
    // The two torch instances hold CUDA contexts and tensors on this GPU.
    expect(metricValue(samples, 'nv_gpu_memory_used_bytes', { gpu_uuid: uuid! })).toBeGreaterThan(0);
    const util = metricValue(samples, 'nv_gpu_utilization', { gpu_uuid: uuid! });
    expect(util).toBeGreaterThanOrEqual(0);
    expect(util).toBeLessThanOrEqual(1);
    console.log(
      text
        .split('\n')
        .filter((l) => l.startsWith('nv_gpu') || l.startsWith('nv_energy'))
        .join('\n'),
    );
  });
});
