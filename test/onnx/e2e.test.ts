/**
 * ONNX models through the whole server: HTTP and gRPC frontends, the two-step
 * preprocess → simple_onnx client flow, statistics and metrics. Runs once src/start-server.ts
 * registers the onnxruntime backend (skipped before that), and the gRPC cases once the server
 * starts its gRPC frontend.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODELS, ROOT, pythonAsync, startTritium, type Tritium } from '../helpers/server.js';
import { loadMlpWeights, makeModels, mlpRef, type MlpWeights } from './helpers.js';

const wired = fs.readFileSync(path.join(ROOT, 'src', 'start-server.ts'), 'utf8').includes('OnnxBackend');

describe.skipIf(!wired)('onnxruntime models behind the server', () => {
  let models: string;
  let repo: string;
  let weights: MlpWeights;
  let server: Tritium;

  beforeAll(async () => {
    models = makeModels();
    weights = loadMlpWeights(models);
    repo = fs.mkdtempSync(path.join(models, 'repo-'));
    // mlp: no config.pbtxt at all, auto-completed from the graph.
    fs.mkdirSync(path.join(repo, 'mlp', '1'), { recursive: true });
    fs.copyFileSync(path.join(models, 'mlp.onnx'), path.join(repo, 'mlp', '1', 'model.onnx'));
    // The same graph under a name that byte order and a locale's order place differently.
    fs.cpSync(path.join(repo, 'mlp'), path.join(repo, 'MLP_copy'), { recursive: true });
    for (const m of ['simple_onnx', 'preprocess']) fs.cpSync(path.join(MODELS, m), path.join(repo, m), { recursive: true });
    server = await startTritium({ repos: [repo] });
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    if (models) fs.rmSync(models, { recursive: true, force: true });
  });

  it('shows the auto-completed config over HTTP', async () => {
    const cfg = (await (await fetch(`${server.http}/v2/models/mlp/config`)).json()) as Record<string, any>;
    expect(cfg['backend']).toBe('onnxruntime');
    expect(cfg['platform']).toBe('onnxruntime_onnx');
    expect(cfg['max_batch_size']).toBe(4);
    expect(cfg['dynamic_batching']).toBeDefined();
    const meta = (await (await fetch(`${server.http}/v2/models/mlp`)).json()) as Record<string, any>;
    expect(meta['platform']).toBe('onnxruntime_onnx');
    expect(meta['inputs']).toEqual([{ name: 'INPUT0', datatype: 'FP32', shape: [-1, 16] }]);
  });

  it("lists models in their names' byte order, as Triton does", async () => {
    // Triton 2.51 keeps models under std::string keys: Bmod, Zmod, _cmod, amod, zeta.
    const want = ['MLP_copy', 'mlp', 'preprocess', 'simple_onnx'];
    const stats = (await (await fetch(`${server.http}/v2/models/stats`)).json()) as { model_stats: Array<{ name: string }> };
    expect(stats.model_stats.map((m) => m.name)).toEqual(want);
    const index = (await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as Array<{ name: string }>;
    expect(index.map((m) => m.name)).toEqual(want);
  });

  it('infers over HTTP (JSON) and counts it in the statistics', async () => {
    const x = Array.from({ length: 32 }, (_, i) => Math.sin(i));
    const body = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2, 16], data: x }] };
    const res = await fetch(`${server.http}/v2/models/mlp/infer`, { method: 'POST', body: JSON.stringify(body) });
    expect(res.status).toBe(200);
    const out = (await res.json()) as { outputs: Array<{ name: string; shape: number[]; data: number[] }> };
    expect(out.outputs[0]!.name).toBe('OUTPUT0');
    expect(out.outputs[0]!.shape).toEqual([2, 8]);
    const want = [...mlpRef(weights, x.slice(0, 16)), ...mlpRef(weights, x.slice(16))];
    out.outputs[0]!.data.forEach((v, i) => expect(v).toBeCloseTo(want[i]!, 4));
    const stats = (await (await fetch(`${server.http}/v2/models/mlp/stats`)).json()) as { model_stats: Array<Record<string, any>> };
    const s = stats.model_stats[0]!;
    expect(Number(s['inference_count'])).toBeGreaterThanOrEqual(2);
    expect(Number(s['inference_stats'].success.count)).toBeGreaterThanOrEqual(1);
    expect(Number(s['inference_stats'].compute_infer.count)).toBe(Number(s['inference_stats'].success.count));
  });

  it('runs the two-step preprocess → simple_onnx flow with tritonclient over HTTP and gRPC', async () => {
    const grpc = server.grpcPort !== undefined;
    const out = await pythonAsync(`
import json, numpy as np
import tritonclient.http as httpclient
raw = np.arange(32, dtype=np.uint8).reshape(2, 16) * 7
def two_step(mod, client):
    a = mod.InferInput("RAW", list(raw.shape), "UINT8"); a.set_data_from_numpy(raw)
    f = client.infer("preprocess", [a]).as_numpy("FEATURES")
    x = mod.InferInput("FEATURES", list(f.shape), "FP32"); x.set_data_from_numpy(f)
    r = client.infer("simple_onnx", [x])
    return r.as_numpy("PROBABILITIES").tolist(), r.as_numpy("CLASS").tolist()
res = {"http": two_step(httpclient, httpclient.InferenceServerClient("127.0.0.1:${server.httpPort}"))}
if ${grpc ? 'True' : 'False'}:
    import tritonclient.grpc as grpcclient
    res["grpc"] = two_step(grpcclient, grpcclient.InferenceServerClient("127.0.0.1:${server.grpcPort ?? 0}"))
import onnxruntime as ort
feat = raw.astype(np.float32) / 255.0
feat = (feat - feat.mean(axis=1, keepdims=True)) / feat.std(axis=1, keepdims=True)
sess = ort.InferenceSession("${path.join(MODELS, 'simple_onnx', '1', 'model.onnx')}")
p, c = sess.run(None, {"FEATURES": feat})
res["reference"] = (p.tolist(), c.tolist())
print(json.dumps(res))
`);
    const res = JSON.parse(out) as Record<string, [number[][], number[][]]>;
    const [refP, refC] = res['reference']!;
    for (const via of grpc ? ['http', 'grpc'] : ['http']) {
      const [p, c] = res[via]!;
      expect(c).toEqual(refC);
      p.flat().forEach((v, i) => expect(v).toBeCloseTo(refP.flat()[i]!, 5));
    }
  }, 60_000);

  it('exports inference metrics for ONNX models', async () => {
    const body = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data: Array(16).fill(0.5) }] };
    expect((await fetch(`${server.http}/v2/models/mlp/infer`, { method: 'POST', body: JSON.stringify(body) })).status).toBe(200);
    const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    expect(text).toMatch(/nv_inference_request_success\{[^}]*model="mlp"[^}]*\} [1-9]/);
  });
});
