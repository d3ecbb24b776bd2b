/**
 * System calls and context switches per request of the server and of its stubs
 * (docs/benchmarks.md, "Wake-ups and system calls per request"). Like allocation, these counts
 * barely move with the load of a shared machine, where CPU time does: a change to how the
 * processes wake each other can be judged from a short run.
 *
 *   node bench/wakeups.mjs [--before <checkout>] [--rounds 2] [--model add_sub] [--protocol http|grpc]
 *       [--concurrency 16] [--window-ms 4000]
 *
 * Each run starts a server on bench/models/vs-triton, warms it with one perf_analyzer window,
 * then counts during a second window, with `perf stat` on the syscalls:sys_enter_* tracepoints
 * (read, write, futex, epoll_pwait, epoll_wait) and context switches of every thread of the
 * server and of its stubs, divided by the successful requests the statistics extension counted
 * meanwhile. With --before, runs alternate between that checkout (dist/ and native/build built)
 * and this one. Needs perf with tracepoints (root, or kernel.perf_event_paranoid <= -1).
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { arg } from './grpc-common.mjs';
import { checkFlags, positive, showHelp } from './lib/options.mjs';
import { requirePerfAnalyzer, warmUpWindow } from './lib/perf-analyzer.mjs';
import { descendants } from './lib/proc-stats.mjs';
import { alternateBuilds } from './lib/builds.mjs';
import { fmt, median, table } from './lib/report.mjs';
import { ROOT, startTritium, successCount } from './lib/server.mjs';

const USAGE =
  'usage: node bench/wakeups.mjs [--before <checkout>] [--rounds N] [--model add_sub|identity_fp32] [--protocol http|grpc] [--concurrency C] [--window-ms MS]';
const argv = process.argv.slice(2);
checkFlags(argv, ['before', 'rounds', 'model', 'protocol', 'concurrency', 'window-ms', 'help'], ['help'], USAGE);
if (showHelp({ help: argv.includes('--help') }, USAGE)) process.exit(0);
const before = arg('before', '');
const rounds = Math.round(positive('rounds', arg('rounds', '2')));
const model = arg('model', 'add_sub');
const protocol = arg('protocol', 'http');
if (protocol !== 'http' && protocol !== 'grpc') throw new Error(`--protocol is http or grpc, not ${protocol}`);
const concurrency = Math.round(positive('concurrency', arg('concurrency', '16')));
const windowMs = Math.round(positive('window-ms', arg('window-ms', '4000')));
const repo = path.join(ROOT, 'bench', 'models', 'vs-triton');
const pa = requirePerfAnalyzer();

const SYSCALLS = ['read', 'write', 'futex', 'epoll_pwait', 'epoll_wait'];
const EVENTS = [...SYSCALLS.map((s) => `syscalls:sys_enter_${s}`), 'context-switches'];
try {
  execFileSync('perf', ['stat', '-x,', '-e', EVENTS.join(','), '--', 'true'], { stdio: 'ignore' });
} catch {
  console.error('bench/wakeups.mjs needs `perf stat` with the syscalls tracepoints (run as root, or lower kernel.perf_event_paranoid).');
  process.exit(2);
}

const cell = { model, protocol, concurrency };
const csvDir = path.join(ROOT, 'bench', '.out', 'wakeups');

/** Counts per event of every thread of `pids` while `ms` pass (perf stat -x, --per-thread). */
function perfStat(pids, ms) {
  const out = path.join(os.tmpdir(), `tritium-wakeups-${process.pid}-${Date.now()}.csv`);
  return new Promise((resolve, reject) => {
    const p = spawn('perf', ['stat', '-x,', '--per-thread', '-o', out, '-e', EVENTS.join(','), '-p', pids.join(','), '--', 'sleep', String(ms / 1000)], {
      stdio: 'ignore',
    });
    p.once('error', reject);
    p.once('exit', (code) => {
      try {
        if (code !== 0) throw new Error(`perf stat exited with ${code}`);
        // Lines: "<comm>-<tid>,<count>,,<event>,..."; keep the pid each thread belongs to.
        const byThread = [];
        for (const line of fs.readFileSync(out, 'utf8').split('\n')) {
          const f = line.split(',');
          if (f.length < 4 || line.startsWith('#')) continue;
          const tid = Number(/-(\d+)$/.exec(f[0])?.[1]);
          const count = Number(f[1]);
          if (!Number.isFinite(tid) || !Number.isFinite(count)) continue;
          byThread.push({ tid, event: f[3].replace('syscalls:sys_enter_', ''), count });
        }
        resolve(byThread);
      } catch (e) {
        reject(e);
      } finally {
        fs.rmSync(out, { force: true });
      }
    });
  });
}

/** Thread ids of `pid` (its /proc/<pid>/task). */
const threadsOf = (pid) => fs.readdirSync(`/proc/${pid}/task`).map(Number);

async function measure(root) {
  const server = await startTritium({ root, repos: repo });
  const port = protocol === 'grpc' ? server.grpcPort : server.httpPort;
  try {
    await warmUpWindow(pa, { cell, port, dir: csvDir, windowMs: 3000, stability: 1e6 });
    const stubs = descendants(server.proc.pid);
    const serverThreads = new Set(threadsOf(server.proc.pid));
    const stubThreads = new Set(stubs.flatMap(threadsOf));
    // The counted window sits inside a longer load window, away from its start and end.
    const loading = warmUpWindow(pa, { cell, port, dir: csvDir, windowMs: windowMs + 3000, stability: 1e6 });
    await new Promise((r) => setTimeout(r, 1000));
    const ok0 = await successCount(server, model);
    const counts = await perfStat([server.proc.pid, ...stubs], windowMs);
    const requests = (await successCount(server, model)) - ok0;
    await loading;
    const sum = (threads, event) => counts.filter((c) => threads.has(c.tid) && c.event === event).reduce((a, c) => a + c.count, 0) / requests;
    const side = (threads) => ({
      read: sum(threads, 'read'),
      write: sum(threads, 'write'),
      futex: sum(threads, 'futex'),
      epoll: sum(threads, 'epoll_pwait') + sum(threads, 'epoll_wait'),
      switches: sum(threads, 'context-switches'),
    });
    return { requests, server: side(serverThreads), stub: side(stubThreads) };
  } finally {
    await server.stop();
  }
}

const { runs, header } = await alternateBuilds({
  script: 'bench/wakeups.mjs',
  before,
  rounds,
  measure,
  progress: (round, name, r) =>
    process.stderr.write(
      `round ${round + 1}/${rounds} ${name}: ${r.requests} requests; server read ${fmt(r.server.read, 2)} write ${fmt(r.server.write, 2)} futex ${fmt(r.server.futex, 2)} epoll ${fmt(r.server.epoll, 2)}; stub write ${fmt(r.stub.write, 2)} futex ${fmt(r.stub.futex, 2)} per request\n`,
    ),
});
const med = (rs, pick) => fmt(median(rs.map(pick)), 2);
console.log(
  [
    '```',
    ...header,
    `${model} over ${protocol} at concurrency ${concurrency}, perf_analyzer; one 3000 ms warm-up window, then ${windowMs} ms counted per run (perf stat, every thread)`,
    '```',
    '',
    table(
      [
        'build',
        'requests (runs)',
        'server read',
        'server write',
        'server futex',
        'server epoll',
        'server context switches',
        'stub write',
        'stub futex',
        'stub context switches',
      ],
      Object.entries(runs).map(([name, rs]) => [
        name,
        rs.map((r) => r.requests).join(', '),
        med(rs, (r) => r.server.read),
        med(rs, (r) => r.server.write),
        med(rs, (r) => r.server.futex),
        med(rs, (r) => r.server.epoll),
        med(rs, (r) => r.server.switches),
        med(rs, (r) => r.stub.write),
        med(rs, (r) => r.stub.futex),
        med(rs, (r) => r.stub.switches),
      ]),
    ),
    '',
    'Per request, medians over the runs; read/write/futex/epoll: calls of each system call.',
  ].join('\n'),
);
