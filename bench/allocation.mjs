/**
 * Bytes the server allocates per request, and where (docs/benchmarks.md, "Garbage collection and
 * the young generation"). Unlike CPU time, allocation does not move with the load of a shared
 * machine, so a change to the request path can be judged from one short run.
 *
 *   node bench/allocation.mjs [--before <checkout>] [--rounds 3] [--protocol http|grpc] [--concurrency 16]
 *       [--window-ms 4000] [--node-options "<flags>"] [--sites] [--promoted]
 *
 * Each run starts a server on bench/models/vs-triton with V8's GCProfiler preloaded
 * (bench/lib/gc-profiler.cjs), warms it with one perf_analyzer window on add_sub, then measures
 * one window: the bytes scavenges freed from the young generation (what was allocated and died
 * young; objects that survive are a small part, see the promotion figures in the doc) divided by
 * the successful requests. With --before, runs alternate between that checkout (dist/ built) and
 * this one. --sites adds one run of this checkout under the inspector's sampling heap profiler
 * (objects collected by GC included) and prints the functions that allocate most per request;
 * --promoted the same for what outlived the young generation only (objects a scavenge collected
 * left out): the sites that make scavenges long and the old generation grow. Each run also
 * counts the bytes scavenges moved to the old generation per request. --node-options adds Node
 * or V8 flags to this checkout's server only (its NODE_OPTIONS): with --before naming this same
 * checkout, a run measures what a flag such as --max-semi-space-size does.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { arg } from './grpc-common.mjs';
import { checkFlags, positive, showHelp } from './lib/options.mjs';
import { requirePerfAnalyzer, warmUpWindow } from './lib/perf-analyzer.mjs';
import { alternateBuilds } from './lib/builds.mjs';
import { fmt, median, table } from './lib/report.mjs';
import { ROOT, startTritium, successCount } from './lib/server.mjs';

const USAGE = `usage: node bench/allocation.mjs [--before <checkout>] [--rounds N] [--protocol http|grpc] [--concurrency C] [--window-ms MS] [--node-options "<flags>"] [--sites] [--promoted]`;
const argv = process.argv.slice(2);
if ((argv.includes('--sites') || argv.includes('--promoted')) && typeof globalThis.WebSocket !== 'function') {
  // The inspector client needs WebSocket, global from Node 22; Node 20 has it behind a flag.
  const r = spawnSync(process.execPath, ['--experimental-websocket', '--no-warnings', fileURLToPath(import.meta.url), ...argv], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
checkFlags(
  argv,
  ['before', 'rounds', 'protocol', 'concurrency', 'window-ms', 'node-options', 'sites', 'promoted', 'help'],
  ['sites', 'promoted', 'help'],
  USAGE,
);
if (showHelp({ help: argv.includes('--help') }, USAGE)) process.exit(0);
const before = arg('before', '');
const rounds = Math.round(positive('rounds', arg('rounds', '3')));
const protocol = arg('protocol', 'http');
if (protocol !== 'http' && protocol !== 'grpc') throw new Error(`--protocol is http or grpc, not ${protocol}`);
const concurrency = Math.round(positive('concurrency', arg('concurrency', '16')));
const windowMs = Math.round(positive('window-ms', arg('window-ms', '4000')));
const nodeOptions = arg('node-options', '');
const repo = path.join(ROOT, 'bench', 'models', 'vs-triton');
const preload = path.join(ROOT, 'bench', 'lib', 'gc-profiler.cjs');
const pa = requirePerfAnalyzer();

const cell = { model: 'add_sub', protocol, concurrency };
const csvDir = path.join(ROOT, 'bench', '.out', 'allocation');
/** One perf_analyzer window of `ms` on add_sub (its figures are not used: the server counts). */
const load = (server, ms) =>
  warmUpWindow(pa, { cell, port: protocol === 'grpc' ? server.grpcPort : server.httpPort, dir: csvDir, windowMs: ms, stability: 1e6 });

/** Signals the server's GC profiler and waits for the record it writes. */
async function gcRecord(server, file, count) {
  server.proc.kill('SIGUSR2');
  for (let i = 0; i < 100; i++) {
    try {
      const records = JSON.parse(fs.readFileSync(file, 'utf8'));
      if (records.length >= count) return records[count - 1];
    } catch {
      /* not written yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the server wrote no GC profile (was bench/lib/gc-profiler.cjs preloaded?)');
}

const spaceUsed = (stats, space) => stats.heapSpaceStatistics.find((s) => s.spaceName === space)?.spaceUsedSize ?? 0;
const young = (stats) => spaceUsed(stats, 'new_space') + spaceUsed(stats, 'new_large_object_space');
const old = (stats) => spaceUsed(stats, 'old_space');

async function measure(root, build) {
  const file = path.join(os.tmpdir(), `tritium-gc-${process.pid}-${Date.now()}.json`);
  const flags = build === 'after' && nodeOptions ? ` ${nodeOptions}` : '';
  const server = await startTritium({ root, repos: repo, env: { NODE_OPTIONS: `--require ${preload}${flags}`, GCPROF_OUT: file } });
  try {
    await load(server, 3000);
    await gcRecord(server, file, 1);
    const ok0 = await successCount(server, 'add_sub');
    await load(server, windowMs);
    const requests = (await successCount(server, 'add_sub')) - ok0;
    const record = await gcRecord(server, file, 2);
    let freed = 0;
    let promoted = 0;
    let scavengeUs = 0;
    let scavenges = 0;
    let others = 0;
    for (const gc of record.statistics) {
      if (gc.gcType === 'Scavenge') {
        scavenges++;
        freed += young(gc.beforeGC) - young(gc.afterGC);
        promoted += old(gc.afterGC) - old(gc.beforeGC);
        scavengeUs += gc.cost;
      } else others++;
    }
    return { requests, bytesPerRequest: freed / requests, promotedPerRequest: promoted / requests, scavengeUs: scavengeUs / requests, scavenges, others };
  } finally {
    await server.stop();
    fs.rmSync(file, { force: true });
  }
}

/** The functions allocating most per request, from the inspector's sampling heap profiler. */
async function sites(root, { survivorsOnly = false } = {}) {
  const server = await startTritium({ root, repos: repo, inspect: true });
  try {
    await load(server, 3000);
    const ws = new WebSocket(server.inspector);
    await new Promise((resolve, reject) => {
      ws.addEventListener('open', resolve);
      ws.addEventListener('error', reject);
    });
    let next = 0;
    const waiting = new Map();
    ws.addEventListener('message', (e) => {
      const m = JSON.parse(e.data);
      waiting.get(m.id)?.(m);
      waiting.delete(m.id);
    });
    const call = (method, params = {}) =>
      new Promise((resolve) => {
        const id = ++next;
        waiting.set(id, resolve);
        ws.send(JSON.stringify({ id, method, params }));
      });
    await call('HeapProfiler.enable');
    const ok0 = await successCount(server, 'add_sub');
    await call('HeapProfiler.startSampling', {
      samplingInterval: 256,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: !survivorsOnly,
    });
    await load(server, windowMs);
    const profile = (await call('HeapProfiler.stopSampling')).result.profile;
    const requests = (await successCount(server, 'add_sub')) - ok0;
    ws.close();
    const bySite = new Map();
    let total = 0;
    const walk = (node) => {
      const f = node.callFrame;
      const site = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;
      total += node.selfSize;
      if (node.selfSize > 0) bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      for (const c of node.children) walk(c);
    };
    walk(profile.head);
    const top = [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 15);
    return { perRequest: total / requests, top: top.map(([site, bytes]) => [site, bytes / requests]) };
  } finally {
    await server.stop();
  }
}

const { runs, header } = await alternateBuilds({
  script: 'bench/allocation.mjs',
  before,
  rounds,
  measure,
  progress: (round, name, r) =>
    process.stderr.write(
      `round ${round + 1}/${rounds} ${name}: ${fmt(r.bytesPerRequest)} bytes/request (${fmt(r.promotedPerRequest)} promoted) over ${r.requests} requests, ${r.scavenges} scavenges\n`,
    ),
});
const lines = [
  '```',
  ...header,
  `add_sub over ${protocol} at concurrency ${concurrency}, perf_analyzer; one 3000 ms warm-up window, then one of ${windowMs} ms per run`,
  '```',
  '',
  table(
    ['build', 'bytes per request (median)', 'runs', 'promoted bytes per request', 'scavenges per 1000 requests', 'scavenge µs per request'],
    Object.entries(runs).map(([name, rs]) => [
      name,
      fmt(median(rs.map((r) => r.bytesPerRequest))),
      rs.map((r) => fmt(r.bytesPerRequest)).join(', '),
      fmt(median(rs.map((r) => r.promotedPerRequest))),
      fmt(median(rs.map((r) => (r.scavenges / r.requests) * 1000)), 2),
      fmt(median(rs.map((r) => r.scavengeUs)), 2),
    ]),
  ),
];
for (const [flag, survivorsOnly, what] of [
  ['--sites', false, 'Where this checkout allocates'],
  ['--promoted', true, 'What of it outlived the young generation'],
]) {
  if (!argv.includes(flag)) continue;
  const s = await sites(ROOT, { survivorsOnly });
  lines.push('', `${what} (sampling heap profiler, ${fmt(s.perRequest)} bytes per request sampled):`, '');
  lines.push(
    table(
      ['bytes per request', 'function'],
      s.top.map(([site, bytes]) => [fmt(bytes), site]),
    ),
  );
}
console.log(lines.join('\n'));
