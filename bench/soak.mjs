#!/usr/bin/env node
/**
 * Soak: N minutes of closed-loop load at concurrency C over three Python models, HTTP and gRPC
 * mixed, with one stub SIGKILLed every minute. Every successful response is checked against the
 * value it must have; every failure must be one the kill explains (the killed instance's
 * `Stub process '<instance>' is not healthy. The stub was killed by SIGKILL ...`, within a few
 * seconds of the kill). Reports requests served, errors, stub restarts, and the server's memory
 * and shared-memory bytes at the start (after a warm-up) and at the end.
 *
 *   npm run build && node bench/soak.mjs [--minutes 10] [--concurrency 32] [--kill-every-s 60]
 *                                        [--warmup-s 20] [--json bench/.out/soak/result.json]
 *
 * Models (generated into bench/.out/soak/repo):
 *   soak_add   FP32 [4] + [4] → sum and difference; max_batch_size 8, dynamic batching, 2 instances
 *   soak_text  BYTES [-1] → each string reversed and upper-cased; 1 instance (a kill leaves it
 *              without an instance until the restart: its requests wait, they must not fail)
 *   soak_sum   INT64 [-1] → [sum]; sleeps 1 ms per request so work overlaps; 2 instances
 * Clients: C workers, each picks a model and a protocol at random per request; HTTP/1.1 JSON
 * over keep-alive sockets, gRPC ModelInfer with raw_input_contents over one channel.
 * Kills: at 30 s, then every --kill-every-s, round-robin over the 5 instances, SIGKILL to the
 * stub found among the server's children by its instance-name argument.
 * Memory: VmRSS of the server (and the sum over its stubs) read from /proc, also after two full
 * garbage collections run through the server's inspector (loopback, ephemeral port), so heap
 * growth is told apart from garbage not yet collected; /dev/shm bytes = sizes of the server's
 * tritium_<pid>_* files.
 * Exit status 1 if a response had a wrong value, an error was not explained by a kill, or the
 * post-GC RSS or the shared-memory bytes grew by 5 % or more.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { ROOT, startTritium } from './lib/server.mjs';

const OUT = path.join(ROOT, 'bench', '.out', 'soak');
const { ModelInferRequestSchema, ModelInferResponseSchema } = await import(path.join(ROOT, 'dist', 'generated', 'grpc_service_pb.js'));

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
}
const minutes = Number(arg('minutes', '10'));
const concurrency = Number(arg('concurrency', '32'));
const killEveryS = Number(arg('kill-every-s', '60'));
const warmupS = Number(arg('warmup-s', '20'));
const jsonOut = arg('json', path.join(OUT, 'result.json'));
const durationMs = minutes * 60_000;

// ---------------------------------------------------------------------------------------------
// Models

const MODELS = {
  soak_add: {
    config: `backend: "python"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
dynamic_batching { max_queue_delay_microseconds: 200 }
instance_group [ { kind: KIND_CPU count: 2 } ]
`,
    code: `import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            a = pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(r, "INPUT1").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", a + b), pb_utils.Tensor("OUTPUT1", a - b)]))
        return out
`,
  },
  soak_text: {
    config: `backend: "python"
max_batch_size: 0
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_STRING dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`,
    code: `import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            t = pb_utils.get_input_tensor_by_name(r, "TEXT").as_numpy()
            res = np.array([s[::-1].upper() for s in t.reshape(-1)], dtype=object).reshape(t.shape)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", res)]))
        return out
`,
  },
  soak_sum: {
    config: `backend: "python"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_INT64 dims: [ -1 ] } ]
output [ { name: "SUM" data_type: TYPE_INT64 dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 2 } ]
`,
    code: `import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            time.sleep(0.001)
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("SUM", np.array([x.sum()], dtype=np.int64))]))
        return out
`,
  },
};
// Kill order: a different model each minute, so short runs cover all three.
const INSTANCES = ['soak_sum_0_0', 'soak_text_0_0', 'soak_add_0_0', 'soak_sum_0_1', 'soak_add_0_1'];

function writeRepo() {
  const repo = path.join(OUT, 'repo');
  fs.rmSync(repo, { recursive: true, force: true });
  for (const [name, m] of Object.entries(MODELS)) {
    fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
    fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), m.config);
    fs.writeFileSync(path.join(repo, name, '1', 'model.py'), m.code);
  }
  return repo;
}

// ---------------------------------------------------------------------------------------------
// Server (started by bench/lib/server.mjs with --inspect, for the GCs below)

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Children of `pid` with their argv (the stubs: `python stub/main.py <file> <region> ... <name> <mode> ...`). */
function children(pid) {
  const out = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== pid) continue;
      out.push({ pid: Number(e), argv: fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0') });
    } catch {
      // gone
    }
  }
  return out;
}

function rssOf(pid) {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
  } catch {
    return 0;
  }
}

function shmBytes(pid) {
  let n = 0;
  for (const f of fs.readdirSync('/dev/shm')) {
    if (!f.startsWith(`tritium_${pid}_`)) continue;
    try {
      n += fs.statSync(path.join('/dev/shm', f)).size;
    } catch {
      // removed meanwhile (a restart)
    }
  }
  return n;
}

/** Two full GCs in the server through its inspector, then process.memoryUsage(). */
async function memoryAfterGc(url) {
  const script = `
    const ws = new WebSocket(process.argv[1]);
    const pending = new Map();
    let id = 0;
    const call = (method, params = {}) => new Promise((resolve) => {
      pending.set(++id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
    ws.onmessage = (e) => { const m = JSON.parse(e.data); pending.get(m.id)?.(m); };
    ws.onopen = async () => {
      await call('HeapProfiler.collectGarbage');
      await call('HeapProfiler.collectGarbage');
      const r = await call('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true });
      console.log(r.result.result.value);
      ws.close();
    };`;
  const text = await new Promise((resolve, reject) => {
    const flags = typeof globalThis.WebSocket === 'function' ? [] : ['--experimental-websocket']; // global from Node 22
    const p = spawn(process.execPath, [...flags, '--no-warnings', '-e', script, url]);
    let t = '';
    p.stdout.on('data', (d) => (t += d));
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(t) : reject(new Error(`inspector helper exited ${code}`))));
  });
  return JSON.parse(text);
}

async function snapshot(server) {
  const pid = server.proc.pid;
  const gc = await memoryAfterGc(server.inspector);
  const stubs = children(pid).filter((c) => c.argv.includes('instance'));
  return {
    serverRss: rssOf(pid),
    serverRssAfterGc: gc.rss,
    heapUsedAfterGc: gc.heapUsed,
    stubsRss: stubs.reduce((n, c) => n + rssOf(c.pid), 0),
    stubs: stubs.length,
    shmBytes: shmBytes(pid),
  };
}

// ---------------------------------------------------------------------------------------------
// Requests: each builder returns { model, http: body+headers, grpc: message, check(outputs) }.

const rnd = (n) => Math.floor(Math.random() * n);
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789 ';

function makeCase() {
  const which = rnd(3);
  if (which === 0) {
    const a = Array.from({ length: 4 }, () => rnd(2001) - 1000);
    const b = Array.from({ length: 4 }, () => rnd(2001) - 1000);
    return {
      model: 'soak_add',
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: a, raw: Buffer.from(new Float32Array(a).buffer) },
        { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], data: b, raw: Buffer.from(new Float32Array(b).buffer) },
      ],
      expected: { OUTPUT0: a.map((x, i) => x + b[i]), OUTPUT1: a.map((x, i) => x - b[i]) },
      decode: { OUTPUT0: 'FP32', OUTPUT1: 'FP32' },
    };
  }
  if (which === 1) {
    const words = Array.from({ length: 1 + rnd(4) }, () => Array.from({ length: 1 + rnd(12) }, () => ALPHABET[rnd(ALPHABET.length)]).join(''));
    const raw = Buffer.concat(words.flatMap((w) => [u32(Buffer.byteLength(w)), Buffer.from(w)]));
    return {
      model: 'soak_text',
      inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [words.length], data: words, raw }],
      expected: { OUT: words.map((w) => [...w].reverse().join('').toUpperCase()) },
      decode: { OUT: 'BYTES' },
    };
  }
  const x = Array.from({ length: 1 + rnd(16) }, () => rnd(2_000_001) - 1_000_000);
  return {
    model: 'soak_sum',
    inputs: [{ name: 'X', datatype: 'INT64', shape: [x.length], data: x, raw: Buffer.from(new BigInt64Array(x.map(BigInt)).buffer) }],
    expected: { SUM: [x.reduce((s, v) => s + v, 0)] },
    decode: { SUM: 'INT64' },
  };
}

function u32(n) {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

function decodeRaw(datatype, buf) {
  if (datatype === 'FP32') return Array.from(new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength)));
  if (datatype === 'INT64') return Array.from(new BigInt64Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength)), Number);
  const out = [];
  for (let off = 0; off + 4 <= buf.length; ) {
    const len = buf.readUInt32LE(off);
    out.push(buf.toString('utf8', off + 4, off + 4 + len));
    off += 4 + len;
  }
  return out;
}

function mismatch(c, got) {
  for (const [name, want] of Object.entries(c.expected)) {
    const have = got[name];
    if (!have || have.length !== want.length || have.some((v, i) => v !== want[i])) {
      return `${c.model} ${name}: expected ${JSON.stringify(want)}, got ${JSON.stringify(have)}`;
    }
  }
  return undefined;
}

let agent;
function viaHttp(server, c) {
  const body = Buffer.from(JSON.stringify({ inputs: c.inputs.map(({ name, datatype, shape, data }) => ({ name, datatype, shape, data })) }));
  return new Promise((resolve) => {
    const req = http.request(
      { host: '127.0.0.1', port: server.httpPort, method: 'POST', path: `/v2/models/${c.model}/infer`, agent, headers: { 'Content-Length': body.length } },
      (res) => {
        const chunks = [];
        res.on('data', (d) => chunks.push(d));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let doc;
          try {
            doc = JSON.parse(text);
          } catch {
            return resolve({ error: `HTTP ${res.statusCode}: not JSON: ${text.slice(0, 200)}` });
          }
          if (res.statusCode !== 200) return resolve({ error: doc.error ?? text });
          const got = {};
          for (const o of doc.outputs) got[o.name] = o.data;
          resolve({ got });
        });
      },
    );
    req.setTimeout(60_000, () => req.destroy(new Error('no answer in 60 s')));
    req.on('error', (e) => resolve({ error: `transport: ${e.message}` }));
    req.end(body);
  });
}

let grpcClient;
function viaGrpc(c) {
  const msg = create(ModelInferRequestSchema, {
    modelName: c.model,
    inputs: c.inputs.map(({ name, datatype, shape }) => ({ name, datatype, shape: shape.map(BigInt) })),
    rawInputContents: c.inputs.map((i) => i.raw),
  });
  return new Promise((resolve) => {
    grpcClient.makeUnaryRequest(
      '/inference.GRPCInferenceService/ModelInfer',
      (m) => Buffer.from(toBinary(ModelInferRequestSchema, m)),
      (b) => fromBinary(ModelInferResponseSchema, b),
      msg,
      { deadline: Date.now() + 60_000 },
      (err, res) => {
        if (err) return resolve({ error: err.details || err.message });
        const got = {};
        res.outputs.forEach((o, i) => (got[o.name] = decodeRaw(c.decode[o.name], Buffer.from(res.rawOutputContents[i]))));
        resolve({ got });
      },
    );
  });
}

// ---------------------------------------------------------------------------------------------

async function main() {
  fs.mkdirSync(OUT, { recursive: true });
  const repo = writeRepo();
  const server = await startTritium({ repos: repo, inspect: true, timeoutMs: 120_000 });
  const pid = server.proc.pid;
  agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  grpcClient = new grpc.Client(`127.0.0.1:${server.grpcPort}`, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': -1,
  });
  console.log(`soak: ${minutes} min, concurrency ${concurrency}, a stub killed every ${killEveryS} s; server pid ${pid}`);

  const stats = { requests: 0, ok: 0, http: 0, grpc: 0, wrong: [], expectedErrors: 0, unexpected: [], byModel: {}, latencyMs: [] };
  const kills = []; // { at, instance, pid }
  const t0 = Date.now();
  const endAt = t0 + durationMs;
  let running = true;

  const explain = (error, at) => {
    const m = /^Stub process '([^']+)' is not healthy\. The stub was killed by SIGKILL/.exec(error);
    return m !== null && kills.some((k) => k.instance === m[1] && at >= k.at && at - k.at < 5000);
  };

  const worker = async () => {
    while (running && Date.now() < endAt) {
      const c = makeCase();
      const useGrpc = Math.random() < 0.5;
      const start = performance.now();
      const r = useGrpc ? await viaGrpc(c) : await viaHttp(server, c);
      const at = Date.now();
      stats.requests++;
      stats[useGrpc ? 'grpc' : 'http']++;
      const per = (stats.byModel[c.model] ??= { ok: 0, errors: 0 });
      if (r.error !== undefined) {
        per.errors++;
        if (explain(r.error, at)) stats.expectedErrors++;
        else if (stats.unexpected.length < 50) stats.unexpected.push({ t: (at - t0) / 1000, model: c.model, via: useGrpc ? 'grpc' : 'http', error: r.error });
        else stats.unexpected.push(null);
        continue;
      }
      const bad = mismatch(c, r.got);
      if (bad) {
        stats.wrong.push(bad);
        continue;
      }
      per.ok++;
      stats.ok++;
      if (stats.latencyMs.length < 2_000_000) stats.latencyMs.push(performance.now() - start);
    }
  };

  const killer = (async () => {
    let next = t0 + Math.min(30_000, killEveryS * 1000);
    let k = 0;
    while (running) {
      const wait = next - Date.now();
      if (Date.now() + Math.max(0, wait) >= endAt - 5000) break; // leave time to restart before the end
      await sleep(Math.max(0, wait));
      if (!running) break;
      const instance = INSTANCES[k++ % INSTANCES.length];
      const stub = children(pid).find((c) => c.argv.includes(instance) && c.argv.includes('instance'));
      if (stub) {
        kills.push({ at: Date.now(), instance, pid: stub.pid });
        process.kill(stub.pid, 'SIGKILL');
        console.log(`  ${((Date.now() - t0) / 1000).toFixed(0)} s: SIGKILL ${instance} (pid ${stub.pid})`);
      } else {
        console.log(`  ${((Date.now() - t0) / 1000).toFixed(0)} s: no running stub for ${instance}`);
      }
      next += killEveryS * 1000;
    }
  })();

  const progress = setInterval(() => {
    const s = (Date.now() - t0) / 1000;
    console.log(
      `  ${s.toFixed(0)} s: ${stats.requests} requests, ${stats.ok} ok, ${stats.expectedErrors} killed-stub errors, ${stats.unexpected.length} unexpected, ${stats.wrong.length} wrong`,
    );
  }, 30_000);

  const workers = Array.from({ length: concurrency }, worker);
  await sleep(warmupS * 1000);
  const start = await snapshot(server);
  const startReq = stats.requests;
  const startAt = Date.now();
  await Promise.all(workers);
  running = false;
  await killer;
  clearInterval(progress);
  const seconds = (Date.now() - startAt) / 1000;
  await sleep(1000);
  const end = await snapshot(server);

  const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  const restarts = {};
  for (const line of metrics.split('\n')) {
    const m = /^tritium_stub_restarts_total\{.*instance="([^"]+)".*\} (\d+)/.exec(line);
    if (m) restarts[m[1]] = Number(m[2]);
  }
  grpcClient.close();
  agent.destroy();
  const { code } = await server.stop();
  const leftover = fs.readdirSync('/dev/shm').filter((f) => f.startsWith(`tritium_${pid}_`));

  const lat = stats.latencyMs.sort((a, b) => a - b);
  const pct = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))].toFixed(2) : 'n/a');
  const growth = (a, b) => (a ? (100 * (b - a)) / a : 0);
  const mib = (n) => (n / 2 ** 20).toFixed(1);
  const result = {
    setup: {
      minutes,
      concurrency,
      killEveryS,
      warmupS,
      models: Object.keys(MODELS),
      machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}, ${mib(os.totalmem())} MiB`,
      node: process.version,
    },
    requests: stats.requests,
    ok: stats.ok,
    viaHttp: stats.http,
    viaGrpc: stats.grpc,
    throughputAfterWarmup: (stats.requests - startReq) / seconds,
    latencyMs: { p50: pct(50), p90: pct(90), p99: pct(99), max: lat.length ? lat[lat.length - 1].toFixed(1) : 'n/a' },
    byModel: stats.byModel,
    kills: kills.map((k) => ({ t: (k.at - t0) / 1000, instance: k.instance })),
    restarts,
    killedStubErrors: stats.expectedErrors,
    unexpectedErrors: stats.unexpected.length,
    unexpectedSamples: stats.unexpected.filter(Boolean).slice(0, 10),
    wrongValues: stats.wrong.length,
    wrongSamples: stats.wrong.slice(0, 10),
    memory: {
      start,
      end,
      serverRssGrowthPct: growth(start.serverRss, end.serverRss),
      serverRssAfterGcGrowthPct: growth(start.serverRssAfterGc, end.serverRssAfterGc),
      heapAfterGcGrowthPct: growth(start.heapUsedAfterGc, end.heapUsedAfterGc),
      stubsRssGrowthPct: growth(start.stubsRss, end.stubsRss),
      shmGrowthPct: growth(start.shmBytes, end.shmBytes),
    },
    exitCode: code,
    shmLeftAfterExit: leftover,
  };
  fs.mkdirSync(path.dirname(jsonOut), { recursive: true });
  fs.writeFileSync(jsonOut, JSON.stringify(result, null, 2));

  console.log(`
requests served      ${result.ok} ok of ${result.requests} (${result.viaHttp} HTTP, ${result.viaGrpc} gRPC), ${result.throughputAfterWarmup.toFixed(0)} req/s
latency (ok, ms)     p50 ${result.latencyMs.p50}  p90 ${result.latencyMs.p90}  p99 ${result.latencyMs.p99}  max ${result.latencyMs.max}
kills / restarts     ${kills.length} / ${Object.values(restarts).reduce((a, b) => a + b, 0)} ${JSON.stringify(restarts)}
errors               ${result.killedStubErrors} from killed stubs, ${result.unexpectedErrors} unexpected, ${result.wrongValues} wrong values
server RSS           ${mib(start.serverRss)} → ${mib(end.serverRss)} MiB (${result.memory.serverRssGrowthPct.toFixed(1)} %); after GC ${mib(start.serverRssAfterGc)} → ${mib(end.serverRssAfterGc)} MiB (${result.memory.serverRssAfterGcGrowthPct.toFixed(1)} %), heap ${mib(start.heapUsedAfterGc)} → ${mib(end.heapUsedAfterGc)} MiB
stubs RSS (sum)      ${mib(start.stubsRss)} → ${mib(end.stubsRss)} MiB over ${start.stubs} → ${end.stubs} stubs (${result.memory.stubsRssGrowthPct.toFixed(1)} %)
/dev/shm             ${start.shmBytes} → ${end.shmBytes} bytes (${result.memory.shmGrowthPct.toFixed(1)} %); after exit (code ${code}): ${leftover.length} files
written              ${path.relative(ROOT, jsonOut)}`);
  for (const u of result.unexpectedSamples) console.log(`  unexpected: ${JSON.stringify(u)}`);
  for (const w of result.wrongSamples) console.log(`  wrong: ${w}`);

  const failed =
    result.wrongValues > 0 ||
    result.unexpectedErrors > 0 ||
    result.memory.serverRssAfterGcGrowthPct >= 5 ||
    result.memory.shmGrowthPct >= 5 ||
    leftover.length > 0 ||
    code !== 0;
  process.exit(failed ? 1 : 0);
}

await main();
