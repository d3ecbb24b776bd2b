/**
 * IPC round-trip benchmark: Node -> Python stub -> Node over the shared-memory channel
 * (empty `exec` answered by `exec_done`), side by side with a Node <-> Python pipe line echo.
 *
 *   npx vite-node bench/ipc-roundtrip.ts -- [--n 100000] [--warmup 20000] [--spin-stub 50]
 *                                          [--spin-mode adaptive|always|never] [--no-pipe]
 *
 * Python comes from $TRITIUM_PYTHON (default .venv/bin/python). Results go to stdout; the figures
 * recorded in docs/benchmarks.md ("IPC round trip") come from this script.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { StubChannel, newRegionName } from '../src/backends/python/ipc/channel.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const python = path.resolve(root, process.env.TRITIUM_PYTHON ?? '.venv/bin/python');
const echo = path.join(root, 'fixtures', 'ipc_echo_peer.py');

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const N = arg('n', 100_000);
const WARMUP = arg('warmup', 20_000);
const SPIN_STUB = arg('spin-stub', 50);
const modeAt = process.argv.indexOf('--spin-mode');
const SPIN_MODE = (modeAt >= 0 ? process.argv[modeAt + 1] : 'adaptive') as 'adaptive' | 'always' | 'never';
if (!['adaptive', 'always', 'never'].includes(SPIN_MODE)) throw new Error(`--spin-mode: ${SPIN_MODE}`);
const YIELD_STUB = arg('yield-stub', 0);

interface Stats {
  median: number;
  p90: number;
  p99: number;
  mean: number;
  /** Node's CPU time (user + system, every thread) per round trip, warm-up included. */
  cpu?: number;
}

function stats(samplesNs: Float64Array): Stats {
  const s = Float64Array.from(samplesNs).sort();
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]! / 1000;
  return { median: q(0.5), p90: q(0.9), p99: q(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length / 1000 };
}

/** Runs `total` sequential round trips with `once(done)`; records the last N. */
function loop(total: number, once: (done: () => void) => void): Promise<Float64Array> {
  const out = new Float64Array(N);
  return new Promise((resolve) => {
    let i = 0;
    let t0 = 0n;
    const next = () => {
      t0 = process.hrtime.bigint();
      once(done);
    };
    const done = () => {
      const dt = Number(process.hrtime.bigint() - t0);
      if (i >= total - N) out[i - (total - N)] = dt;
      if (++i < total) next();
      else resolve(out);
    };
    next();
  });
}

async function benchShm(): Promise<Stats> {
  const ch = StubChannel.create({
    region: newRegionName('bench'),
    defaultByteSize: 1 << 20,
    growthByteSize: 1 << 20,
    wait: { spinUs: SPIN_STUB, spinMode: SPIN_MODE },
  });
  const child = spawn(python, [echo, ch.region, String(1 << 20), String(SPIN_STUB), String(YIELD_STUB), SPIN_MODE], {
    stdio: ['ignore', 'inherit', 'inherit', ch.wakeFd, ...(ch.segmentFds ?? [])],
    env: { ...process.env, TRITIUM_STUB_WAKE_FD: '3', TRITIUM_STUB_SEGMENT_FDS: ch.segmentFds ? '4,5' : undefined },
  });
  ch.stubSpawned();
  let onReply: () => void = () => {};
  const hello = new Promise<void>((res) => {
    ch.onMessage((m) => {
      if (m.t === 'hello') res();
      else if (m.t === 'exec_done') onReply();
    });
  });
  await hello;
  let id = 0;
  const cpu0 = process.cpuUsage();
  const samples = await loop(WARMUP + N, (done) => {
    onReply = done;
    ch.send({ t: 'exec', id: id++, reqs: [] });
  });
  const cpu = process.cpuUsage(cpu0);
  ch.send({ t: 'fin' });
  await new Promise((res) => child.once('exit', res));
  ch.close();
  return { ...stats(samples), cpu: (cpu.user + cpu.system) / (WARMUP + N) };
}

async function benchPipe(): Promise<Stats> {
  const child: ChildProcess = spawn(python, ['-u', echo, '--pipe'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let onReply: () => void = () => {};
  child.stdout!.on('data', () => onReply()); // one short line per round trip: one chunk each
  const line = Buffer.from('{"t":"exec","id":0,"reqs":[]}\n');
  const samples = await loop(WARMUP + N, (done) => {
    onReply = done;
    child.stdin!.write(line);
  });
  child.stdin!.end();
  await new Promise((res) => child.once('exit', res));
  return stats(samples);
}

const fmt = (s: Stats) =>
  `median ${s.median.toFixed(1)} µs   p90 ${s.p90.toFixed(1)} µs   p99 ${s.p99.toFixed(1)} µs   mean ${s.mean.toFixed(1)} µs` +
  (s.cpu === undefined ? '' : `   Node CPU ${s.cpu.toFixed(1)} µs/round trip`);

console.log(`setup: ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), Node ${process.version}, ${python}`);
console.log(
  `       ${N} timed round trips after ${WARMUP} warm-up; spin-mode ${SPIN_MODE}, ${SPIN_STUB} µs on both ends (Node's event loop is woken through the eventfd)${YIELD_STUB ? ' (yield)' : ''}`,
);
const shm = await benchShm();
console.log(`shm  : ${fmt(shm)}`);
if (!process.argv.includes('--no-pipe')) {
  const pipe = await benchPipe();
  console.log(`pipe : ${fmt(pipe)}`);
  console.log(`ratio pipe/shm (median): ${(pipe.median / shm.median).toFixed(2)}x`);
}
