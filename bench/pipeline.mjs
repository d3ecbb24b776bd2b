#!/usr/bin/env node
/**
 * The three-step pipeline of python_models (preprocess in Python → simple_onnx in onnxruntime →
 * postprocess in Python) served three ways, side by side on one server:
 *
 *   - ensemble: one request to `classify_pipeline` (the steps run inside the server);
 *   - BLS:      one request to `classify_bls` (a Python model calling the steps with exec());
 *   - client:   three requests, preprocess then simple_onnx then postprocess, the client
 *               carrying the tensors between them (what a client does without either).
 *
 * An in-process client (HTTP/1.1 keep-alive, JSON bodies, one connection per worker) runs
 * `--concurrency` workers (default "1,16") for `--seconds` per measurement, each sending one
 * item (RAW: UINT8 [1, 16]) at a time; modes alternate over `--rounds` rounds so a change in
 * machine load touches all of them. Printed per mode and concurrency: items/s, p50 and p99 of an
 * item's latency (all its requests), server CPU per item (utime + stime of tritium and its stubs
 * from /proc, bench/lib/proc-stats.mjs), client CPU per item, and the ensemble's throughput as a
 * multiple of the client chain's. Nothing is asserted.
 *
 *   npm run build && node bench/pipeline.mjs [--seconds 5] [--rounds 2] [--concurrency 1,16]
 */
import { jsonClient } from './lib/json-client.mjs';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { arg, machine } from './grpc-common.mjs';
import { treeCpu } from './lib/proc-stats.mjs';
import { ROOT, startTritium } from './lib/server.mjs';

if (process.argv.includes('--help')) {
  console.log('node bench/pipeline.mjs [--seconds 5] [--rounds 2] [--concurrency 1,16]');
  process.exit(0);
}

const SECONDS = Number(arg('seconds', '5'));
const ROUNDS = Number(arg('rounds', '2'));
const CONCURRENCY = arg('concurrency', '1,16').split(',').map(Number);
const MODELS = ['preprocess', 'simple_onnx', 'postprocess', 'classify_pipeline', 'classify_bls'];

function repo() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-pipeline-bench-'));
  for (const m of MODELS) fs.cpSync(path.join(ROOT, 'python_models', m), path.join(dir, m), { recursive: true });
  return dir;
}

const client = (port) => jsonClient(port);

const tensor = (name, datatype, shape, data) => ({ name, datatype, shape, data });
const output = (json, name) => json.outputs.find((o) => o.name === name);

function rawItem() {
  return Array.from({ length: 16 }, () => Math.floor(Math.random() * 256));
}

/** One item through `mode`; resolves with the label (checked against the other modes once). */
async function item(c, mode, raw) {
  const input = { inputs: [tensor('RAW', 'UINT8', [1, 16], raw)] };
  if (mode === 'ensemble') return output(await c.post('classify_pipeline', input), 'LABEL').data[0];
  if (mode === 'BLS') return output(await c.post('classify_bls', input), 'LABEL').data[0];
  const f = output(await c.post('preprocess', input), 'FEATURES');
  const o = await c.post('simple_onnx', { inputs: [tensor('FEATURES', 'FP32', f.shape, f.data)] });
  const p = output(o, 'PROBABILITIES');
  const k = output(o, 'CLASS');
  const r = await c.post('postprocess', { inputs: [tensor('PROBABILITIES', 'FP32', p.shape, p.data), tensor('CLASS', 'INT64', k.shape, k.data)] });
  return output(r, 'LABEL').data[0];
}

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** `concurrency` workers for `seconds`: latencies (ms), items, server and client CPU seconds. */
async function measure(server, mode, concurrency, seconds) {
  const clients = Array.from({ length: concurrency }, () => client(server.httpPort));
  const latencies = [];
  const cpu0 = treeCpu(server.proc.pid);
  const own0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    clients.map(async (c) => {
      while (performance.now() < end) {
        const s = performance.now();
        await item(c, mode, rawItem());
        latencies.push(performance.now() - s);
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const cpu1 = treeCpu(server.proc.pid);
  const own = process.cpuUsage(own0);
  for (const c of clients) c.close();
  return {
    latencies,
    elapsed,
    serverCpu: cpu1.server + cpu1.children - (cpu0.server + cpu0.children),
    clientCpu: (own.user + own.system) / 1e6,
  };
}

const MODES = ['ensemble', 'BLS', 'client'];
const server = await startTritium({ repos: [repo()] });
try {
  // The three ways must agree before they are timed.
  const check = client(server.httpPort);
  const raw = rawItem();
  const labels = await Promise.all(MODES.map((m) => item(check, m, raw)));
  check.close();
  if (new Set(labels).size !== 1) throw new Error(`the modes disagree: ${MODES.map((m, i) => `${m}=${labels[i]}`).join(', ')}`);

  console.log(
    `machine: ${machine()}; load average ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  console.log(`pipeline: preprocess (Python) → simple_onnx (onnxruntime) → postprocess (Python), one item RAW UINT8 [1,16] per request`);
  console.log(`${SECONDS} s per measurement, ${ROUNDS} rounds alternating the modes; HTTP/JSON, one keep-alive connection per worker\n`);
  for (const concurrency of CONCURRENCY) {
    const totals = Object.fromEntries(MODES.map((m) => [m, { latencies: [], elapsed: 0, serverCpu: 0, clientCpu: 0 }]));
    for (const m of MODES) await measure(server, m, concurrency, 1); // warm-up
    for (let r = 0; r < ROUNDS; r++) {
      for (const m of MODES) {
        const res = await measure(server, m, concurrency, SECONDS);
        const t = totals[m];
        t.latencies.push(...res.latencies);
        t.elapsed += res.elapsed;
        t.serverCpu += res.serverCpu;
        t.clientCpu += res.clientCpu;
      }
    }
    console.log(`concurrency ${concurrency}`);
    console.log('mode        items/s   p50 ms   p99 ms   server CPU µs/item   client CPU µs/item');
    const rate = {};
    for (const m of MODES) {
      const t = totals[m];
      const sorted = [...t.latencies].sort((a, b) => a - b);
      const n = sorted.length;
      rate[m] = n / t.elapsed;
      console.log(
        `${m.padEnd(10)} ${rate[m].toFixed(0).padStart(8)} ${pct(sorted, 50).toFixed(2).padStart(8)} ${pct(sorted, 99).toFixed(2).padStart(8)} ${(
          (t.serverCpu / n) *
          1e6
        )
          .toFixed(0)
          .padStart(20)} ${((t.clientCpu / n) * 1e6).toFixed(0).padStart(20)}`,
      );
    }
    console.log(
      `ensemble / client chain: ${(rate.ensemble / rate.client).toFixed(2)}x items/s; BLS / client chain: ${(rate.BLS / rate.client).toFixed(2)}x; ensemble / BLS: ${(rate.ensemble / rate.BLS).toFixed(2)}x\n`,
    );
  }
} finally {
  await server.stop();
}
