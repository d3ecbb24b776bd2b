#!/usr/bin/env node
/**
 * Per-call cost of a BLS `exec()` at concurrency 1, against the client calling the same model
 * directly. The target is bench/models/empty (an execute that only answers). Measured:
 *
 *   - BLS: a caller model (written by this script) runs N `pb_utils.InferenceRequest(...).exec()`
 *     calls to `empty` in one execute and times each one in the stub (perf_counter around exec);
 *   - client: N sequential HTTP/JSON infers of `empty` on one keep-alive connection, timed in
 *     this process from the request write to the parsed response.
 *
 * Both include the target's whole path (core, scheduler, stub round trip, its execute). The BLS
 * figure adds the caller's side (message to Node, copying the outputs into the caller's arena,
 * the answer back) and drops what the client path pays for HTTP and JSON. Prints p50/p90/p99
 * and the mean of each and their difference, and the BLS mean minus the target's own server time
 * per request (its statistics): what the call itself costs; and the CPU per BLS call (utime +
 * stime from /proc) of the server, the caller's stub and the target's stub. Nothing is asserted.
 *
 * With `--servers tritium,triton` the same repository and the same measurement run on the real
 * Triton too (installed on first use into bench/.venv-triton, bench/lib/triton.mjs), one server
 * after the other, `--rounds` times; the figures of each server are pooled over its rounds.
 *
 *   npm run build && node bench/bls-overhead.mjs [--calls 2000] [--warmup 3000] [--spin-mode adaptive|always|never] [--spin-us 50]
 *        [--servers tritium[,triton]] [--rounds 1]
 */
import { jsonClient } from './lib/json-client.mjs';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { arg, machine } from './grpc-common.mjs';
import { cmdline, cpuSeconds, descendants } from './lib/proc-stats.mjs';
import { ROOT, startTritium } from './lib/server.mjs';
import { ensureTriton, startTriton, stopServer } from './lib/triton.mjs';

const CALLS = Number(arg('calls', '2000'));
/** Untimed calls of each kind first: tritium's JavaScript is compiled during its first few thousand requests. */
const WARMUP = Number(arg('warmup', '3000'));
/** The stubs' and Node's wait policy (README, `spin-mode`): adaptive (default), always or never. */
const SPIN_MODE = arg('spin-mode', 'adaptive');
/** How long a waiting stub or the event loop may poll before it sleeps (README, `spin-us`). */
const SPIN_US = Number(arg('spin-us', '50'));
const SERVERS = arg('servers', 'tritium').split(',');
const ROUNDS = Number(arg('rounds', '1'));
for (const s of SERVERS) if (s !== 'tritium' && s !== 'triton') throw new Error(`--servers: unknown server '${s}' (tritium, triton)`);

const CALLER = `import time
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            n = int(pb_utils.get_input_tensor_by_name(request, "N").as_numpy()[0])
            x = pb_utils.Tensor("IN", np.array([1.0], dtype=np.float32))
            times = np.empty(n, dtype=np.float64)
            for i in range(n):
                t0 = time.perf_counter()
                answer = pb_utils.InferenceRequest(model_name="empty", inputs=[x], requested_output_names=["OUT"]).exec()
                times[i] = (time.perf_counter() - t0) * 1e6
                if answer.has_error():
                    raise pb_utils.TritonModelException(answer.error().message())
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("TIMES", times)]))
        return out
`;

function repo() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-bls-bench-'));
  fs.cpSync(path.join(ROOT, 'bench', 'models', 'empty'), path.join(dir, 'empty'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'bls_loop', '1'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'bls_loop', '1', 'model.py'), CALLER);
  fs.writeFileSync(
    path.join(dir, 'bls_loop', 'config.pbtxt'),
    [
      'backend: "python"',
      'max_batch_size: 0',
      'input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]',
      'output [ { name: "TIMES" data_type: TYPE_FP64 dims: [ -1 ] } ]',
      '',
    ].join('\n'),
  );
  return dir;
}

/** CPU seconds of the server, the caller's stub and the target's stub (found by their model file). */
function cpuOf(pid) {
  const stub = (model) => descendants(pid).find((p) => cmdline(p).some((a) => a.includes(`/${model}/1/model.py`)));
  const seconds = (p) => (p === undefined ? 0 : cpuSeconds(p));
  return { server: cpuSeconds(pid), caller: seconds(stub('bls_loop')), target: seconds(stub('empty')) };
}

const clients = new Map();
/** One keep-alive connection per port, as the measurement has always used. */
function post(port, model, body) {
  if (!clients.has(port)) clients.set(port, jsonClient(port));
  return clients.get(port).post(model, body);
}

function pct(values, p) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

function stats(values) {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return { p50: pct(values, 50), p90: pct(values, 90), p99: pct(values, 99), mean };
}

async function clientCalls(port, n) {
  const body = JSON.stringify({ inputs: [{ name: 'IN', datatype: 'FP32', shape: [1], data: [1] }] });
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await post(port, 'empty', body);
    times.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  return times;
}

/** Count and total ns of the target's successful requests (statistics extension). */
async function targetServerTime(port) {
  const res = await fetch(`http://127.0.0.1:${port}/v2/models/empty/stats`);
  const s = (await res.json()).model_stats[0].inference_stats.success;
  return { count: s.count, ns: s.ns };
}

async function blsCalls(port, n) {
  const body = JSON.stringify({ inputs: [{ name: 'N', datatype: 'INT32', shape: [1], data: [n] }] });
  const json = await post(port, 'bls_loop', body);
  return json.outputs[0].data;
}

/** One server's run: client and BLS call times (µs), the target's server time and CPU per BLS call. */
async function measure(server) {
  await clientCalls(server.httpPort, WARMUP);
  await blsCalls(server.httpPort, WARMUP);
  // Interleaved halves, so a change in machine load during the run touches both paths.
  const client = [...(await clientCalls(server.httpPort, CALLS / 2))];
  const before = await targetServerTime(server.httpPort);
  const cpuBefore = cpuOf(server.proc.pid);
  const bls = [...(await blsCalls(server.httpPort, CALLS / 2))];
  const cpuAfter = cpuOf(server.proc.pid);
  const after = await targetServerTime(server.httpPort);
  client.push(...(await clientCalls(server.httpPort, CALLS / 2)));
  bls.push(...(await blsCalls(server.httpPort, CALLS / 2)));
  const cpu = {};
  for (const k of Object.keys(cpuAfter)) cpu[k] = ((cpuAfter[k] - cpuBefore[k]) * 1e6) / (CALLS / 2);
  // The target's own time per BLS request in the server (queue + compute, from its statistics).
  return { client, bls, targetNs: after.ns - before.ns, targetCount: after.count - before.count, cpu };
}

async function run(kind, repoDir) {
  const server =
    kind === 'triton'
      ? await startTriton(triton, { repo: repoDir })
      : await startTritium({ repos: [repoDir], args: [`--backend-config=python,spin-mode=${SPIN_MODE}`, `--backend-config=python,spin-us=${SPIN_US}`] });
  try {
    return await measure(server);
  } finally {
    for (const c of clients.values()) c.close();
    clients.clear();
    await stopServer(server);
  }
}

/** Checked (and installed on first use) once, before any round. */
const triton = SERVERS.includes('triton') ? ensureTriton() : undefined;
const repoDir = repo();
const pooled = new Map(SERVERS.map((k) => [k, { client: [], bls: [], targetNs: 0, targetCount: 0, cpu: [] }]));
for (let round = 0; round < ROUNDS; round++) {
  for (const kind of SERVERS) {
    process.stderr.write(`bls-overhead: round ${round + 1}/${ROUNDS}, ${kind}\n`);
    const r = await run(kind, repoDir);
    const p = pooled.get(kind);
    p.client.push(...r.client);
    p.bls.push(...r.bls);
    p.targetNs += r.targetNs;
    p.targetCount += r.targetCount;
    p.cpu.push(r.cpu);
  }
}
fs.rmSync(repoDir, { recursive: true, force: true });

const f = (v) => v.toFixed(0).padStart(6);
console.log(
  `machine: ${machine()}; load average ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
console.log(
  `${CALLS} calls each at concurrency 1 per round, ${ROUNDS} round(s), target bench/models/empty, tritium spin-mode=${SPIN_MODE} spin-us=${SPIN_US} (µs)`,
);
for (const [kind, p] of pooled) {
  const c = stats(p.client);
  const b = stats(p.bls);
  const targetUs = p.targetNs / p.targetCount / 1e3;
  const cpu = (k) => (p.cpu.reduce((a, x) => a + x[k], 0) / p.cpu.length).toFixed(0);
  console.log(`--- ${kind === 'triton' ? 'Triton' : 'tritium'}`);
  console.log('                          p50    p90    p99   mean');
  console.log(`client HTTP infer     ${f(c.p50)} ${f(c.p90)} ${f(c.p99)} ${f(c.mean)}`);
  console.log(`BLS exec() in model   ${f(b.p50)} ${f(b.p90)} ${f(b.p99)} ${f(b.mean)}`);
  console.log(`BLS - client          ${f(b.p50 - c.p50)} ${f(b.p90 - c.p90)} ${f(b.p99 - c.p99)} ${f(b.mean - c.mean)}`);
  console.log(`target's server time per BLS request (statistics): ${targetUs.toFixed(0)} µs; BLS mean minus it: ${(b.mean - targetUs).toFixed(0)} µs`);
  console.log(`CPU per BLS call (µs): server ${cpu('server')}, caller stub ${cpu('caller')}, target stub ${cpu('target')}`);
}
