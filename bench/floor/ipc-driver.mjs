#!/usr/bin/env node
/**
 * Node's side of the Python floor: creates a region with tritium's own channel
 * (`StubChannel` from dist/, as built by `npm run build`: the same rings, arena, doorbells and
 * wake eventfd as the server), starts bench/floor/stub_floor.py on it, and keeps `depth` exec
 * messages in flight, each one request shaped like those tritium sends for perf_analyzer's
 * (the cancel flag and the inputs copied into one block of Node's arena, the requested output
 * names; output blocks released on the next exec, the input block freed when answered; small
 * outputs come inside the answer, as from the stub, and have no block).
 *
 *   node bench/floor/ipc-driver.mjs <add_sub|identity_fp32>
 *
 * Started by bench/floor.mjs with an IPC channel: sends { ready, stubPid } once the stub said
 * hello; { op: 'run', depth, rate, warmupMs, ms } runs a warm-up then a measured window (paced
 * at `rate` requests per second, or as fast as the stub answers without one) and answers
 * { requests, wallS, driverCpuS, stubCpuS, stubSwitches } (CPU from /proc, utime + stime;
 * switches: the stub's voluntary context switches, i.e. how often it slept); { op: 'exit' }
 * stops the stub and removes the region.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { StubChannel, newRegionName } from '../../dist/backends/python/ipc/channel.js';
import { cpuSeconds, voluntarySwitches } from '../lib/proc-stats.mjs';
import { PYTHON, ROOT } from '../lib/server.mjs';

const MODELS = {
  add_sub: { inputs: ['INPUT0', 'INPUT1'], elements: 4, outs: ['OUTPUT0', 'OUTPUT1'] },
  identity_fp32: { inputs: ['INPUT0'], elements: 1, outs: ['OUTPUT0'] },
};
/** tritium's defaults: --backend-config=python,shm-default-byte-size / shm-growth-byte-size (1 MiB). */
const MIB = 1 << 20;

const model = process.argv[2];
const spec = MODELS[model];
if (!spec) throw new Error(`usage: node bench/floor/ipc-driver.mjs <${Object.keys(MODELS).join('|')}>`);
const data = spec.inputs.map(() => {
  const b = Buffer.alloc(spec.elements * 4);
  for (let i = 0; i < spec.elements; i++) b.writeFloatLE(Math.random(), i * 4);
  return b;
});

let stopping = false;
// Segments as /dev/shm files, which stub_floor.py maps by name: where tritium passes memfds
// instead, only the set-up differs, not what a request costs (the same shared pages).
const channel = StubChannel.create({ region: newRegionName(`floor_${model}`), defaultByteSize: MIB, growthByteSize: MIB, backing: 'dev-shm' });
const stub = spawn(PYTHON, [path.join(ROOT, 'bench', 'floor', 'stub_floor.py'), channel.region, model], {
  stdio: ['ignore', 'inherit', 'inherit', channel.wakeFd],
  env: { ...process.env, TRITIUM_STUB_WAKE_FD: '3' },
});
const stubExited = new Promise((resolve) => stub.once('exit', resolve));
stubExited.then(() => {
  if (!stopping) {
    channel.close();
    process.stderr.write('ipc-driver: the stub floor exited\n');
    process.exit(1);
  }
});

/** For sleeping the event loop until a paced request is due (Atomics.wait takes fractional ms). */
const pause = new Int32Array(new SharedArrayBuffer(4));

/** Exec id → the input block to free when it is answered. */
const inFlight = new Map();
let nextId = 1;
let nextRid = 1;
let answered = 0;
let depth = 1;
let running = false;
let onIdle;
/** Paced runs: ms between requests (0: as fast as the stub answers) and when the next is due. */
let gapMs = 0;
let dueMs = 0;

/** Where parts of a request's block start (BLOCK_ALIGN of docs/ipc.md, as tritium places them). */
const PART_ALIGN = 64;
const partBytes = (n) => Math.ceil(Math.max(n, 1) / PART_ALIGN) * PART_ALIGN;

function sendExec() {
  // As tritium does: one block per request, the cancel flag first, then each input.
  let size = PART_ALIGN;
  for (const d of data) size += partBytes(d.length);
  const { seg, off, view } = channel.allocInput(size);
  view.writeUInt32LE(0, 0);
  let at = PART_ALIGN;
  const inputs = spec.inputs.map((name, i) => {
    data[i].copy(view, at);
    const d = [name, 'FP32', [spec.elements], seg, off + at, data[i].length];
    at += partBytes(data[i].length);
    return d;
  });
  const id = nextId++;
  inFlight.set(id, [[seg, off]]);
  const req = { rid: nextRid++, id: '', corr: 0, flags: 0, params: '{}', timeout: 0, outs: spec.outs, inputs, cflag: [seg, off] };
  channel.send({ t: 'exec', id, reqs: [req] });
}

/**
 * Sends execs while fewer than `depth` are in flight. Paced, each waits for its due time, the
 * event loop asleep meanwhile (as tritium's is between a client's requests), so the stub sees
 * requests arrive at the given rate instead of back to back.
 */
function pump() {
  while (running && inFlight.size < depth) {
    if (gapMs > 0) {
      const now = performance.now();
      if (dueMs > now) Atomics.wait(pause, 0, 0, dueMs - now);
      // Behind by more than a gap (a descheduled driver): no burst to catch up.
      dueMs = Math.max(dueMs, performance.now() - gapMs) + gapMs;
    }
    sendExec();
  }
}

function execDone(m) {
  const blocks = inFlight.get(m.id);
  if (!blocks) return;
  inFlight.delete(m.id);
  answered++;
  // As tritium does: the next exec goes out first, then this one's answer is read and its
  // output blocks handed back (they ride on a later exec).
  pump();
  const outs = [];
  for (const resp of m.resps) {
    for (const d of resp?.outs ?? []) {
      if (d.length === 4) continue; // inline: its bytes were copied out as the answer was read
      channel.view(d[3], d[4], d[5]);
      outs.push([d[3], d[4]]);
    }
  }
  channel.releaseOutputs(outs);
  for (const [seg, off] of blocks) channel.freeInput(seg, off);
  if (!running && inFlight.size === 0) onIdle?.();
}

const hello = new Promise((resolve) => {
  channel.onMessage((m) => {
    if (m.t === 'exec_done') execDone(m);
    else if (m.t === 'hello') resolve(m.pid);
  });
});

/** Keeps `depth` execs in flight for `ms`, then waits for the last answers. */
async function window(ms) {
  running = true;
  dueMs = performance.now();
  pump();
  await new Promise((r) => setTimeout(r, ms));
  running = false;
  if (inFlight.size > 0) await new Promise((r) => (onIdle = r));
  onIdle = undefined;
}

async function run({ depth: d, rate = 0, warmupMs, ms }) {
  depth = d;
  gapMs = rate > 0 ? 1000 / rate : 0;
  await window(warmupMs);
  const before = { n: answered, t: performance.now(), driver: cpuSeconds(process.pid), stub: cpuSeconds(stub.pid), sw: voluntarySwitches(stub.pid) };
  await window(ms);
  const after = { n: answered, t: performance.now(), driver: cpuSeconds(process.pid), stub: cpuSeconds(stub.pid), sw: voluntarySwitches(stub.pid) };
  return {
    requests: after.n - before.n,
    wallS: (after.t - before.t) / 1000,
    driverCpuS: after.driver - before.driver,
    stubCpuS: after.stub - before.stub,
    stubSwitches: after.sw - before.sw,
  };
}

async function exit() {
  if (stopping) return;
  stopping = true;
  channel.send({ t: 'fin' });
  const timer = setTimeout(() => stub.kill('SIGKILL'), 5000);
  await stubExited;
  clearTimeout(timer);
  channel.close();
  process.exit(0);
}

process.on('message', (m) => {
  if (m.op === 'run') run(m).then((r) => process.send(r));
  else if (m.op === 'exit') exit();
});
process.on('disconnect', () => exit());

const stubPid = await hello;
process.send({ ready: true, stubPid });
