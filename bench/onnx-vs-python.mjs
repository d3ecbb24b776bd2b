#!/usr/bin/env node
/**
 * ONNX served natively vs the same ONNX file run by Python onnxruntime inside a model.py, both
 * behind one tritium server, at concurrency 1 and 16.
 *
 *   npm run build && node bench/onnx-vs-python.mjs [--duration-ms 5000] [--concurrency 1,16]
 *                                                  [--client auto|perf_analyzer|builtin]
 *                                                  [--models mlp_native,mlp_python]
 *
 * Model: test/onnx/make_models.py's MLP (16 → 32 ReLU → 8, FP32, dynamic batch), generated into
 * bench/.out/onnx-vs-python/. Both models: max_batch_size 16, dynamic_batching with no delay,
 * one CPU instance, one intra-op thread; the Python model concatenates the batch's requests into
 * one onnxruntime run, as the native backend does, so the comparison is about the serving path.
 * Client: perf_analyzer over HTTP (batch 1, input [1,16]) when one is installed (PERF_ANALYZER,
 * .venv/bin/perf_analyzer or PATH; the pip placeholder without a binary does not count),
 * otherwise a built-in closed-loop HTTP client with the same shape of load (C requests always in
 * flight, JSON bodies, keep-alive). Prints the setup and a table; writes the figures as JSON
 * next to the models.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { findPerfAnalyzer, perfAnalyzer, readPerfCsv } from './lib/perf-analyzer.mjs';
import { ensureBuilt, modelStats, PYTHON, ROOT, startTritium } from './lib/server.mjs';

const OUT = path.join(ROOT, 'bench', '.out', 'onnx-vs-python');

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
}
const durationMs = Number(arg('duration-ms', '5000'));
const concurrencies = arg('concurrency', '1,16').split(',').map(Number);
const clientChoice = arg('client', 'auto');
const selected = arg('models', 'mlp_native,mlp_python').split(',');

const CONFIG_IO = `
max_batch_size: 16
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 8 ] } ]
dynamic_batching { max_queue_delay_microseconds: 0 }
instance_group [ { kind: KIND_CPU count: 1 } ]
`;

const MODEL_PY = `
import os

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        path = os.path.join(args["model_repository"], args["model_version"], "model.onnx")
        self.session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

    def execute(self, requests):
        xs = [pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy() for r in requests]
        y = self.session.run(["OUTPUT0"], {"INPUT0": np.concatenate(xs)})[0]
        responses, row = [], 0
        for x in xs:
            n = x.shape[0]
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", y[row:row + n])]))
            row += n
        return responses
`;

function makeRepo() {
  fs.rmSync(OUT, { recursive: true, force: true });
  const models = path.join(OUT, 'generated');
  execFileSync(PYTHON, [path.join(ROOT, 'fixtures', 'make_onnx_models.py'), models], { stdio: 'inherit' });
  const repo = path.join(OUT, 'repo');
  const onnx = path.join(models, 'mlp.onnx');
  fs.mkdirSync(repo, { recursive: true });
  if (selected.includes('mlp_native')) {
    fs.mkdirSync(path.join(repo, 'mlp_native', '1'), { recursive: true });
    fs.copyFileSync(onnx, path.join(repo, 'mlp_native', '1', 'model.onnx'));
    fs.writeFileSync(
      path.join(repo, 'mlp_native', 'config.pbtxt'),
      `backend: "onnxruntime"${CONFIG_IO}parameters { key: "intra_op_thread_count" value: { string_value: "1" } }\n`,
    );
  }
  if (selected.includes('mlp_python')) {
    fs.mkdirSync(path.join(repo, 'mlp_python', '1'), { recursive: true });
    fs.copyFileSync(onnx, path.join(repo, 'mlp_python', '1', 'model.onnx'));
    fs.writeFileSync(path.join(repo, 'mlp_python', '1', 'model.py'), MODEL_PY);
    fs.writeFileSync(path.join(repo, 'mlp_python', 'config.pbtxt'), `backend: "python"${CONFIG_IO}`);
  }
  return repo;
}

/** Extra server flags, e.g. --server-arg=--backend-config=onnxruntime,run-in=main */
const EXTRA_SERVER_ARGS = process.argv.filter((a) => a.startsWith('--server-arg=')).map((a) => a.slice('--server-arg='.length));

async function runPerfAnalyzer(bin, port, model, concurrency) {
  const csv = path.join(OUT, `${model}-c${concurrency}.csv`);
  await perfAnalyzer(
    bin,
    [
      '-m',
      model,
      '-u',
      `127.0.0.1:${port}`,
      '-i',
      'http',
      '-b',
      '1',
      '--concurrency-range',
      `${concurrency}:${concurrency}`,
      '-p',
      String(durationMs),
      '-f',
      csv,
    ],
    { echoStderr: true },
  );
  const get = readPerfCsv(csv);
  return { throughput: get('Inferences/Second'), p50us: get('p50 latency'), p99us: get('p99 latency') };
}

/** Closed loop: `concurrency` requests always in flight for `durationMs` (after a short warm-up). */
async function runBuiltin(port, model, concurrency) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const data = Array.from({ length: 16 }, (_, i) => Math.sin(i));
  const body = JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data }] });
  const once = () =>
    new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          path: `/v2/models/${model}/infer`,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}: ${Buffer.concat(chunks)}`))));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const loop = async (until, lat) => {
    while (performance.now() < until) {
      const t0 = performance.now();
      await once();
      lat?.push((performance.now() - t0) * 1000);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, () => loop(performance.now() + Math.min(1000, durationMs / 4))));
  const lat = [];
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, () => loop(start + durationMs, lat)));
  const secs = (performance.now() - start) / 1000;
  agent.destroy();
  lat.sort((a, b) => a - b);
  const pct = (p) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))];
  return { throughput: lat.length / secs, p50us: pct(50), p99us: pct(99) };
}

async function main() {
  ensureBuilt();
  const repo = makeRepo();
  const perf = clientChoice === 'builtin' ? undefined : findPerfAnalyzer();
  if (clientChoice === 'perf_analyzer' && !perf) throw new Error('no perf_analyzer binary found (set PERF_ANALYZER)');
  const client = perf ? `perf_analyzer (${perf}), HTTP, batch 1` : 'built-in closed-loop HTTP client (JSON, keep-alive), batch 1';
  const ortPy = spawnSync(PYTHON, ['-c', 'import onnxruntime; print(onnxruntime.__version__)'], { encoding: 'utf8' }).stdout.trim();
  const ortNode = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', 'onnxruntime-node', 'package.json'), 'utf8')).version;
  console.log('setup:');
  console.log(
    `  machine: ${os.cpus()[0]?.model ?? 'unknown CPU'} x${os.cpus().length}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.platform()} ${os.release()}`,
  );
  console.log(`  node ${process.version}, onnxruntime-node ${ortNode}, python onnxruntime ${ortPy}`);
  console.log('  model: MLP 16→32→8 FP32 (test/onnx/make_models.py), input [1,16] per request');
  console.log('  both: max_batch_size 16, dynamic_batching (no delay), 1 CPU instance, 1 intra-op thread');
  console.log(`  client: ${client}; ${durationMs} ms per point`);
  const server = await startTritium({ repos: repo, args: EXTRA_SERVER_ARGS, timeoutMs: 120_000 });
  const results = [];
  try {
    for (const model of ['mlp_native', 'mlp_python'].filter((m) => selected.includes(m))) {
      for (const c of concurrencies) {
        const before = await modelStats(server, model);
        const r = perf ? await runPerfAnalyzer(perf, server.httpPort, model, c) : await runBuiltin(server.httpPort, model, c);
        const after = await modelStats(server, model);
        const avgBatch = (after.inferences - before.inferences) / Math.max(1, after.executions - before.executions);
        results.push({ model, concurrency: c, ...r, avgBatch });
      }
    }
  } finally {
    await server.stop();
  }
  console.log('\nmodel        conc   infer/s   p50 µs   p99 µs   avg batch');
  for (const r of results) {
    console.log(
      `${r.model.padEnd(12)} ${String(r.concurrency).padStart(4)} ${r.throughput.toFixed(0).padStart(9)} ${r.p50us.toFixed(0).padStart(8)} ${r.p99us.toFixed(0).padStart(8)} ${r.avgBatch.toFixed(2).padStart(11)}`,
    );
  }
  for (const c of concurrencies) {
    const n = results.find((r) => r.model === 'mlp_native' && r.concurrency === c);
    const p = results.find((r) => r.model === 'mlp_python' && r.concurrency === c);
    if (n && p)
      console.log(
        `concurrency ${c}: native/python throughput ${(n.throughput / p.throughput).toFixed(2)}x, p50 latency ${(p.p50us / n.p50us).toFixed(2)}x lower`,
      );
  }
  fs.writeFileSync(path.join(OUT, 'results.json'), JSON.stringify({ client, durationMs, results }, null, 2));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
