#!/usr/bin/env node
/**
 * The server process's memory: starts the built server on python_models/ (as `npm start` does,
 * on free loopback ports), waits for `GET /v2/health/ready` = 200, and reads the Node process's
 * VmRSS from /proc/<pid>/status (the server process only, not its Python stubs) at three points:
 *
 *   idle   once ready, after --settle-ms
 *   http   after --infers JSON infers of add_sub over HTTP, then --settle-ms
 *   grpc   after one gRPC ModelInfer of add_sub (a fresh HTTP/2 session), then --settle-ms
 *
 * so that what the server loads only when a frontend is first used shows up where it is used.
 * Each of --starts starts is a fresh server; the figures are the median over the starts. The
 * time from spawn to ready is reported beside them.
 *
 *   npm run build && node bench/server-memory.mjs [--starts 5] [--infers 200] [--settle-ms 1000]
 *        [--repository python_models] [--root DIR]... [--json bench/.out/server-memory/result.json]
 *
 * --repository is resolved from each root (it must hold add_sub). V8 gives back a few MiB of
 * start-up garbage by itself after some 30 s of idling; --settle-ms 45000 reads after that.
 *
 * --root (repeatable) runs another checkout's bin/tritium.js instead of this one's (its dist/
 * built, its native/build/ and stub/ in place): with two, the starts alternate between them, so
 * a before/after comparison shares one run and one machine. The client (this process) encodes
 * the gRPC request with this checkout's dist/generated/.
 */
import fs from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { create, toBinary } from '@bufbuild/protobuf';
import { arg } from './grpc-common.mjs';
import { jsonClient } from './lib/json-client.mjs';
import { rssBytes } from './lib/proc-stats.mjs';
import { median } from './lib/report.mjs';
import { ROOT, startTritium } from './lib/server.mjs';
import { waitReady } from './lib/triton.mjs';

const { ModelInferRequestSchema } = await import(path.join(ROOT, 'dist', 'generated', 'grpc_service_pb.js'));

const starts = Number(arg('starts', 5));
const infers = Number(arg('infers', 200));
const settleMs = Number(arg('settle-ms', 1000));
const repository = arg('repository', 'python_models');
const jsonOut = arg('json', path.join(ROOT, 'bench', '.out', 'server-memory', 'result.json'));
const roots = process.argv.flatMap((a, i) =>
  a === '--root' ? [path.resolve(process.argv[i + 1])] : a.startsWith('--root=') ? [path.resolve(a.slice(7))] : [],
);
if (roots.length === 0) roots.push(ROOT);

const MiB = 2 ** 20;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const add = new Float32Array([1, 2, 3, 4]);
const sub = new Float32Array([4, 3, 2, 1]);
const HTTP_BODY = JSON.stringify({
  inputs: [
    { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [...add] },
    { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [...sub] },
  ],
});

/** One ModelInfer of add_sub on a new HTTP/2 session; resolves once the call closed with grpc-status 0. */
function grpcInfer(port) {
  const message = toBinary(
    ModelInferRequestSchema,
    create(ModelInferRequestSchema, {
      modelName: 'add_sub',
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4n] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4n] },
      ],
      rawInputContents: [new Uint8Array(add.buffer), new Uint8Array(sub.buffer)],
    }),
  );
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', reject);
    const stream = session.request({
      ':method': 'POST',
      ':path': '/inference.GRPCInferenceService/ModelInfer',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let status;
    const take = (h) => (status = h['grpc-status'] ?? status);
    stream.on('response', take);
    stream.on('trailers', take);
    stream.on('data', () => {});
    stream.on('error', reject);
    stream.on('close', () => {
      session.close();
      if (status === '0') resolve();
      else reject(new Error(`ModelInfer: grpc-status ${status}`));
    });
    stream.end(frame);
  });
}

/** One start of the server in `root`: ready time and the three RSS readings, in MiB. */
async function measure(root) {
  const t0 = performance.now();
  const server = await startTritium({ repos: repository, root });
  try {
    await waitReady(server.httpPort, { deadline: Date.now() + 60_000 });
    const readyMs = performance.now() - t0;
    const pid = server.proc.pid;
    await sleep(settleMs);
    const idle = rssBytes(pid) / MiB;
    const client = jsonClient(server.httpPort);
    for (let i = 0; i < infers; i++) await client.post('add_sub', HTTP_BODY);
    client.close();
    await sleep(settleMs);
    const afterHttp = rssBytes(pid) / MiB;
    await grpcInfer(server.grpcPort);
    await sleep(settleMs);
    const afterGrpc = rssBytes(pid) / MiB;
    return { readyMs, idle, afterHttp, afterGrpc };
  } finally {
    await server.stop();
  }
}

const runs = new Map(roots.map((r) => [r, []]));
for (let s = 0; s < starts; s++) {
  for (const root of roots) {
    const r = await measure(root);
    runs.get(root).push(r);
    console.error(
      `start ${s + 1}/${starts} ${path.relative(process.cwd(), root) || '.'}: ready ${r.readyMs.toFixed(0)} ms, RSS idle ${r.idle.toFixed(1)} / http ${r.afterHttp.toFixed(1)} / grpc ${r.afterGrpc.toFixed(1)} MiB`,
    );
  }
}

const cpus = os.cpus();
console.log(`# ${new Date().toISOString()}, ${cpus[0]?.model ?? 'unknown CPU'} x${cpus.length}, node ${process.version}, load ${os.loadavg()[0].toFixed(2)}`);
console.log(
  `# --repository ${repository}; median of ${starts} starts; ${infers} HTTP infers of add_sub, then one gRPC ModelInfer; ${settleMs} ms settle before each reading`,
);
console.log('| build | ready (ms) | RSS idle (MiB) | RSS after HTTP (MiB) | RSS after gRPC (MiB) |');
console.log('|---|---|---|---|---|');
const summary = [];
for (const [root, rs] of runs) {
  const row = {
    root,
    readyMs: median(rs.map((r) => r.readyMs)),
    idle: median(rs.map((r) => r.idle)),
    afterHttp: median(rs.map((r) => r.afterHttp)),
    afterGrpc: median(rs.map((r) => r.afterGrpc)),
  };
  summary.push({ ...row, runs: rs });
  console.log(`| ${root} | ${row.readyMs.toFixed(0)} | ${row.idle.toFixed(1)} | ${row.afterHttp.toFixed(1)} | ${row.afterGrpc.toFixed(1)} |`);
}
fs.mkdirSync(path.dirname(jsonOut), { recursive: true });
fs.writeFileSync(jsonOut, `${JSON.stringify({ repository, starts, infers, settleMs, summary }, null, 2)}\n`);
