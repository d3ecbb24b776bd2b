#!/usr/bin/env node
/**
 * tritium against the real NVIDIA Triton (2.51, from PyPI's nvidia-pytriton) on the same model
 * repository, bench/models/vs-triton, with the same client (the project's perf_analyzer).
 *
 *   npm run build && node bench/vs-triton.mjs [--rounds 2] [--quick] [--only add_sub,startup]
 *        [--servers tritium,triton] [--tritium-args "..."] [--before <checkout>] [--sequential]
 *        [--json file] [--help]
 *
 * Each round starts every server, then measures each cell on one server right after the other
 * (the others idle meanwhile), so the runs that are compared see the machine seconds apart, not
 * minutes: on a shared VM the hypervisor's share of the cores drifts over minutes. The order of
 * the servers flips every round. --sequential runs one server at a time instead. Per cell:
 * perf_analyzer's throughput and p50/p99 latency, and the CPU the server process and its stub
 * processes spent per request (/proc, over the measured run); after a round's cells, each
 * server's resident memory and its stubs' (grown by the load), as RSS and as PSS (which counts
 * the pages tritium's forked stubs share once). A separate section times
 * start-to-ready and sums resident memory on a repository of 4 models × 2 instances. The report
 * (Markdown, medians over rounds, ratios tritium/Triton) goes to stdout at the end; progress
 * goes to stderr as it happens.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { arg, machine } from './grpc-common.mjs';
import { cellDir, cellGrid, cellPort, selected } from './lib/cells.mjs';
import { checkFlags, list, positive, showHelp, windowOptions } from './lib/options.mjs';
import { measuredWindows, requirePerfAnalyzer, warmUpServer as warmUpServerWindows, warmUpWindow } from './lib/perf-analyzer.mjs';
import { cpuPerRequest, killDescendants, rssBytes, treeCpu, treeRss } from './lib/proc-stats.mjs';
import { commandLine, fmt, gitCommit, loadAverage, median, publishReport, table, toolVersion } from './lib/report.mjs';
import { modelStats, PYTHON, ROOT, startTritium, successCount } from './lib/server.mjs';
import { ensureTriton, freePorts, killNow, startTriton, stopServer, waitReady } from './lib/triton.mjs';

const REPO = path.join(ROOT, 'bench', 'models', 'vs-triton');
const OUT = path.join(ROOT, 'bench', '.out', 'vs-triton');
const SERVERS = ['tritium', 'before', 'triton'];
const LABEL = { tritium: 'tritium', before: 'tritium --before', triton: 'Triton' };
const STARTUP = 'startup';
const IDEAL_BATCH = 32;
const IDEAL_PER_SEC = IDEAL_BATCH / ((2 + 0.1 * IDEAL_BATCH) / 1000);

const USAGE = `usage: node bench/vs-triton.mjs [options]

Runs tritium and the real Triton (installed on first use into bench/.venv-triton) on
bench/models/vs-triton, each cell on one server right after the other, and prints Markdown tables: throughput, p50/p99 latency and CPU
per request of each server and its stubs, dynamic batching against its ideal, resident memory
after the cells, start-to-ready time and resident memory at start. Medians over rounds; ratio
columns are tritium / Triton.

  --rounds N            rounds, each measuring every cell on every server (default 2); the
                        servers' order flips from one round to the next
  --quick               short windows for development (warm-up 300 ms, windows 500 ms)
  --warmup-ms MS        length of the single warm-up window before each measured run (default 1000)
  --server-warmup-ms MS after each server starts, one window of this length per model and
                        protocol at concurrency 4 before any cell (default 3000): both servers
                        are measured warm (tritium's JavaScript is compiled by then)
  --measure-ms MS       perf_analyzer --measurement-interval: each measured run is exactly 3
                        windows of MS ms (default 2000)
  --stability PCT       a run whose 3 windows differ from their mean by more than PCT % in
                        throughput or average latency is marked † (default 10, perf_analyzer's
                        default --stability-percentage)
  --only A,B            run only the cells whose name contains one of these substrings
                        (cell names: add_sub/http/c1 ... identity_fp32/grpc/c16,
                        batch_sleep/http/c32, ${STARTUP})
  --servers LIST        tritium,triton (default both); with one, ratio columns read —
  --tritium-args "..."  extra command-line arguments for tritium (split on spaces)
  --before DIR          also measure tritium built in another checkout (its dist/ and native/build
                        built), in turn with the others in every round; a table compares it
  --sequential          one server at a time (every cell on it, then the next server) instead
                        of all servers up at once and each cell run on one after the other
  --json FILE           also write every raw figure, per round, to FILE
  --help                this text

Needs: npm run build (dist/), a real perf_analyzer (npm install puts one in .venv/bin), Linux
(/proc), and for Triton network access on the first run (pip install nvidia-pytriton numpy).
perf_analyzer's CSVs and logs go to bench/.out/vs-triton/.`;

const KNOWN_FLAGS = [
  'rounds',
  'quick',
  'warmup-ms',
  'server-warmup-ms',
  'measure-ms',
  'stability',
  'only',
  'servers',
  'tritium-args',
  'before',
  'json',
  'sequential',
  'help',
];
const BOOLEAN_FLAGS = ['quick', 'sequential', 'help'];

// ---------------------------------------------------------------- options and cells

function parseOptions() {
  checkFlags(process.argv.slice(2), KNOWN_FLAGS, BOOLEAN_FLAGS, USAGE);
  const quick = process.argv.includes('--quick');
  const servers = list(arg('servers', 'tritium,triton')).map((s) => s.toLowerCase());
  for (const s of servers) if (!SERVERS.includes(s) || s === 'before') throw new Error(`--servers: unknown server ${s} (tritium, triton)`);
  const before = arg('before', undefined);
  if (before !== undefined) {
    if (!fs.existsSync(path.join(before, 'dist', 'cli', 'main.js'))) throw new Error(`--before ${before}: no dist/ there (npm run build in it)`);
    servers.splice(1, 0, 'before');
  }
  return {
    help: process.argv.includes('--help'),
    quick,
    rounds: Math.round(positive('rounds', arg('rounds', '2'))),
    ...windowOptions(quick),
    only: list(arg('only', '')),
    servers: SERVERS.filter((s) => servers.includes(s)),
    tritiumArgs: arg('tritium-args', '').split(/\s+/).filter(Boolean),
    before: before === undefined ? undefined : path.resolve(before),
    json: arg('json', undefined),
    sequential: process.argv.includes('--sequential'),
  };
}

/** Every measured cell: the two small models over both protocols at three concurrencies, then batching. */
function allCells() {
  return [...cellGrid(), { name: 'batch_sleep/http/c32', model: 'batch_sleep', protocol: 'http', concurrency: 32, batching: true }];
}

// ---------------------------------------------------------------- servers

/** Servers started and not yet stopped, so that nothing outlives this process. */
const live = new Set();

function installExitGuards() {
  process.on('exit', () => {
    for (const s of live) killNow(s);
    // A perf_analyzer still measuring would otherwise load the machine until its windows end.
    killDescendants(process.pid);
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(sig, async () => {
      process.stderr.write(`\nvs-triton: ${sig}, stopping ${live.size} server(s)\n`);
      await Promise.all([...live].map((s) => stopServer(s, 5000)));
      process.exit(130);
    });
  }
}

async function launch(kind, repo, ctx, extraTritiumArgs = []) {
  const args = [...ctx.opts.tritiumArgs, ...extraTritiumArgs];
  const server =
    kind === 'tritium'
      ? await startTritium({ repos: repo, args })
      : kind === 'before'
        ? await startTritium({ repos: repo, args, root: ctx.opts.before })
        : await startTriton(ctx.triton, { repo });
  live.add(server);
  return server;
}

async function shutdown(server) {
  try {
    return await stopServer(server);
  } finally {
    live.delete(server);
  }
}

/** Like launch(), but times spawn → first 200 from /v2/health/ready and returns that with the server. */
async function launchTimed(kind, repo, ctx) {
  if (kind === 'triton') {
    const server = await launch(kind, repo, ctx);
    return { server, readyMs: server.readyAt - server.spawnedAt };
  }
  // startTritium() learns its ports from the log; a port chosen here can be polled from the spawn on.
  const [port] = await freePorts(1);
  const failed = new AbortController();
  const spawnedAt = performance.now();
  const starting = launch(kind, repo, ctx, [`--http-port=${port}`]);
  starting.catch((e) => failed.abort(e));
  let readyAt;
  try {
    readyAt = await waitReady(port, { deadline: Date.now() + 180_000, signal: failed.signal });
  } catch (err) {
    const late = await starting.catch(() => undefined);
    if (late) await shutdown(late);
    throw err;
  }
  return { server: await starting, readyMs: readyAt - spawnedAt };
}

// ---------------------------------------------------------------- one cell

/** Counters at one edge of a measured run: requests answered, batches executed, CPU seconds. */
async function snapshot(server, model, edge) {
  const take = async () => ({ success: await successCount(server, model), ...(await modelStats(server, model)) });
  // The stats requests cost the server CPU too: keep them outside the CPU window.
  if (edge === 'before') {
    const counts = await take();
    return { ...counts, cpu: treeCpu(server.proc.pid) };
  }
  const cpu = treeCpu(server.proc.pid);
  return { ...(await take()), cpu };
}

/** One window whose figures are thrown away: connections, threads and the model's first calls. */
function warmUp(ctx, cell, server, dir) {
  return warmUpWindow(ctx.pa, { cell, port: cellPort(server, cell), dir, windowMs: ctx.opts.warmupMs, stability: ctx.opts.stability });
}

/** The measured run: exactly 3 windows, whatever their spread, flagged beyond --stability (bench/lib/perf-analyzer.mjs). */
function measure(ctx, cell, server, dir) {
  const columns = { throughput: 'Inferences/Second', p50Us: 'p50 latency', p99Us: 'p99 latency' };
  return measuredWindows(ctx.pa, { cell, port: cellPort(server, cell), dir, windowMs: ctx.opts.measureMs, stability: ctx.opts.stability, columns });
}

/**
 * Right after a server starts: one window per model and protocol of the selected cells, so no
 * cell measures a cold server (tritium's JavaScript is compiled on first use, and its first few
 * thousand requests cost more CPU than the rest). Both servers get the same.
 */
function warmUpServer(ctx, cells, server, kind, round) {
  const dir = path.join(OUT, `round${round}`, kind);
  const portOf = (cell) => cellPort(server, cell);
  return warmUpServerWindows(ctx.pa, { cells, portOf, dir, windowMs: ctx.opts.serverWarmupMs, stability: ctx.opts.stability });
}

async function runCell(ctx, cell, server, kind, round) {
  const dir = path.join(OUT, `round${round}`, kind, cellDir(cell));
  await warmUp(ctx, cell, server, dir);
  const before = await snapshot(server, cell.model, 'before');
  const figures = await measure(ctx, cell, server, dir);
  const after = await snapshot(server, cell.model, 'after');
  const requests = after.success - before.success;
  if (requests <= 0) throw new Error(`the server counted no successful request of ${cell.model}`);
  return {
    ...figures,
    requests,
    ...cpuPerRequest(before.cpu, after.cpu, requests),
    stubProcesses: after.cpu.processes,
    meanBatch: (after.inferences - before.inferences) / Math.max(1, after.executions - before.executions),
  };
}

// ---------------------------------------------------------------- rounds

/** Runs one cell on a running server, logs it and files the figures (or the error) under `kind`. */
async function benchCell(ctx, cell, server, kind, round) {
  let r;
  try {
    r = await runCell(ctx, cell, server, kind, round);
    progress(
      round,
      kind,
      `${cell.name}: ${fmt(r.throughput)} infer/s, p50 ${fmt(r.p50Us)} µs, p99 ${fmt(r.p99Us)} µs, CPU/request server ${fmt(r.serverCpuUs)} µs + stubs ${fmt(r.stubCpuUs)} µs, window spread ${fmt(r.spreadPct)} %${r.unstable ? ' †' : ''}${cell.batching ? `, mean batch ${r.meanBatch.toFixed(1)}` : ''}`,
    );
  } catch (err) {
    r = { error: firstLine(err) };
    progress(round, kind, `${cell.name}: ERROR ${err instanceof Error ? err.message : err}`);
  }
  ctx.results.cells[cell.name][kind].push(r);
}

/** Starts a server of `kind` and warms it; undefined (its cells marked) when it does not start. */
async function startWarm(ctx, kind, round, cells) {
  let server;
  try {
    server = await launch(kind, REPO, ctx);
  } catch (err) {
    // The other servers' figures are still worth having: mark this round's cells and go on.
    progress(round, kind, `did not start: ${err instanceof Error ? err.message : err}`);
    for (const cell of cells) ctx.results.cells[cell.name][kind].push({ error: `server did not start: ${firstLine(err)}` });
    return undefined;
  }
  try {
    if (kind === 'triton') ctx.tritonVersion ??= await serverVersion(server);
    await warmUpServer(ctx, cells, server, kind, round);
  } catch (err) {
    await shutdown(server);
    throw err;
  }
  return server;
}

/**
 * --sequential: one server at a time, every cell on it, then the next server. Each server's
 * cells then see the machine minutes apart from the other's, which a shared VM's slow swings
 * (its hypervisor's steal time) turn into differences between the servers.
 */
async function benchServer(ctx, kind, round, cells) {
  const server = await startWarm(ctx, kind, round, cells);
  if (!server) return;
  try {
    for (const cell of cells) await benchCell(ctx, cell, server, kind, round);
    recordLoaded(ctx, kind, round, server);
  } finally {
    await shutdown(server);
  }
}

/**
 * The default: every server of the round up at once (one idle while another is measured), and
 * each cell measured on one server right after the other, so that the two runs of a cell are
 * seconds apart rather than minutes. The servers' order flips every round, so neither always
 * runs first.
 */
async function benchInterleaved(ctx, round, cells) {
  const order = round % 2 === 1 ? ctx.opts.servers : [...ctx.opts.servers].reverse();
  const running = [];
  try {
    for (const kind of order) {
      const server = await startWarm(ctx, kind, round, cells);
      if (server) running.push({ kind, server });
    }
    for (const cell of cells) for (const { kind, server } of running) await benchCell(ctx, cell, server, kind, round);
    for (const { kind, server } of running) recordLoaded(ctx, kind, round, server);
  } finally {
    for (const { server } of running) await shutdown(server);
  }
}

/** A repository of 4 copies of add_sub, each with 2 CPU instances: 8 stubs to start. */
function writeStartupRepo() {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'vs-triton-startup-'));
  const config = fs.readFileSync(path.join(REPO, 'add_sub', 'config.pbtxt'), 'utf8');
  for (let i = 1; i <= 4; i++) {
    const name = `add_sub_${i}`;
    fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
    fs.copyFileSync(path.join(REPO, 'add_sub', '1', 'model.py'), path.join(repo, name, '1', 'model.py'));
    const text = config.replace(/^name:.*$/m, `name: "${name}"`).replace(/^instance_group.*$/m, 'instance_group [{ count: 2, kind: KIND_CPU }]');
    if (!text.includes('count: 2')) throw new Error('add_sub/config.pbtxt has no one-line instance_group to replace');
    fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), text);
  }
  return repo;
}

async function measureStartup(ctx, kind, round) {
  let r;
  try {
    const { server, readyMs } = await launchTimed(kind, ctx.startupRepo, ctx);
    try {
      if (kind === 'triton') ctx.tritonVersion ??= await serverVersion(server);
      r = { readyMs, ...memoryOf(server) };
    } finally {
      await shutdown(server);
    }
    progress(round, kind, `${STARTUP}: ready in ${fmt(r.readyMs)} ms, RSS ${r.totalRssMiB.toFixed(0)} MiB over ${r.processes} processes`);
  } catch (err) {
    r = { error: firstLine(err) };
    progress(round, kind, `${STARTUP}: ERROR ${err instanceof Error ? err.message : err}`);
  }
  ctx.results.startup[kind].push(r);
}

/** The resident memory of a server process and of the processes below it (its stubs), MiB. */
function memoryOf(server) {
  const serverRss = rssBytes(server.proc.pid);
  const tree = treeRss(server.proc.pid);
  return {
    serverRssMiB: serverRss / 2 ** 20,
    stubRssMiB: (tree.bytes - serverRss) / 2 ** 20,
    totalRssMiB: tree.bytes / 2 ** 20,
    totalPssMiB: tree.pss / 2 ** 20,
    processes: tree.processes,
  };
}

/**
 * What a server holds once it has served the round's cells: a heap grown by the load, which an
 * idle reading at start does not show.
 */
function recordLoaded(ctx, kind, round, server) {
  const r = memoryOf(server);
  progress(
    round,
    kind,
    `after the round's cells: RSS ${r.totalRssMiB.toFixed(0)} MiB (server ${r.serverRssMiB.toFixed(0)}, stubs ${r.stubRssMiB.toFixed(0)}), PSS ${r.totalPssMiB.toFixed(0)} MiB`,
  );
  ctx.results.loaded[kind].push(r);
}

async function serverVersion(server) {
  const res = await fetch(`http://127.0.0.1:${server.httpPort}/v2`);
  return (await res.json()).version;
}

// ---------------------------------------------------------------- report

function progress(round, kind, text) {
  process.stderr.write(`[round ${round} ${LABEL[kind]}] ${text}\n`);
}

/** The line of an error worth a table footnote; a line ending in ':' only announces the next one. */
function firstLine(err) {
  const text = err instanceof Error ? err.message : String(err);
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !/^perf_analyzer exited/.test(l));
  if (lines.length === 0) return text.trim();
  return lines[0].endsWith(':') && lines[1] ? `${lines[0]} ${lines[1]}` : lines[0];
}

/** Median of `key` over the rounds of one server, with a mark when some rounds failed or were unstable. */
function summary(rounds, key) {
  const ok = rounds.filter((r) => !r.error);
  const value = median(ok.map((r) => r[key]));
  let mark = '';
  if (ok.some((r) => r.unstable)) mark += '†';
  if (ok.length < rounds.length) mark += '‡';
  return { value, mark, failed: ok.length === 0 && rounds.length > 0 };
}

function cellText(s, digits) {
  if (!s) return '—';
  if (s.failed) return 'error ‡';
  return `${fmt(s.value, digits)}${s.mark}`;
}

function ratioText(a, b) {
  return a && b && Number.isFinite(a.value) && Number.isFinite(b.value) && b.value > 0 ? (a.value / b.value).toFixed(2) : '—';
}

/** Three columns per metric: tritium, Triton, tritium/Triton. */
function triple(byServer, key, digits = 0) {
  const [t, n] = ['tritium', 'triton'].map((k) => (byServer[k] ? summary(byServer[k], key) : undefined));
  return [cellText(t, digits), cellText(n, digits), ratioText(t, n)];
}

function errorNotes(ctx) {
  const notes = [];
  const collect = (name, byServer) => {
    for (const kind of SERVERS)
      (byServer[kind] ?? []).forEach((r, i) => r.error && notes.push(`- ${name}, ${LABEL[kind]}, round ${i + 1}: ${r.error.replace(/\|/g, '\\|')}`));
  };
  for (const [name, byServer] of Object.entries(ctx.results.cells)) collect(name, byServer);
  if (ctx.results.startup) collect(STARTUP, ctx.results.startup);
  return notes;
}

function header(ctx) {
  const o = ctx.opts;
  const cpus = os.cpus();
  return [
    '```',
    `command: ${commandLine('bench/vs-triton.mjs')}`,
    `machine: ${cpus[0]?.model ?? 'unknown CPU'} x${cpus.length}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.type()} ${os.release()} (${os.version()})`,
    `load average: ${ctx.loadBefore} at start, ${loadAverage()} at end`,
    `node ${process.version}; tritium stubs: ${toolVersion(PYTHON, ['--version'])} (${path.relative(ROOT, PYTHON)}); Triton stubs: Python ${ctx.triton?.python ?? '—'} (bench/.venv-triton)`,
    `tritium: commit ${ctx.commit}${o.tritiumArgs.length ? `, extra args ${o.tritiumArgs.join(' ')}` : ''}`,
    `Triton: ${ctx.tritonVersion ? `${ctx.tritonVersion} (GET /v2)` : o.servers.includes('triton') ? 'version unknown' : 'not run'}${ctx.triton ? `, ${path.relative(ROOT, ctx.triton.bin)}` : ''}`,
    `client: ${path.relative(ROOT, ctx.pa)}, sync, batch 1; after each start one ${o.serverWarmupMs} ms window per model and protocol at concurrency 4; per cell 1 warm-up window of ${o.warmupMs} ms, then 3 windows of --measurement-interval ${o.measureMs}; † when a window is off their mean by > ${o.stability} %`,
    `rounds: ${o.rounds}, ${o.sequential ? 'servers one at a time' : 'servers up together, each cell run on one after the other'}, in the order ${o.servers.map((s) => LABEL[s]).join(', ')}${o.sequential ? '' : ' (reversed every other round)'}; figures are medians over rounds${o.only.length ? `; only cells matching ${o.only.join(', ')}` : ''}`,
    `elapsed: ${((Date.now() - ctx.startedAt) / 1000).toFixed(0)} s`,
    '```',
  ].join('\n');
}

function latencyTable(ctx) {
  const rows = Object.entries(ctx.results.cells).map(([name, s]) => [name, ...triple(s, 'throughput'), ...triple(s, 'p50Us'), ...triple(s, 'p99Us')]);
  return table(
    ['cell', 'tritium infer/s', 'Triton infer/s', 'ratio', 'tritium p50 µs', 'Triton p50 µs', 'ratio', 'tritium p99 µs', 'Triton p99 µs', 'ratio'],
    rows,
  );
}

function cpuTable(ctx) {
  const withTotal = (rounds) => rounds?.map((r) => (r.error ? r : { ...r, totalCpuUs: r.serverCpuUs + r.stubCpuUs }));
  const rows = Object.entries(ctx.results.cells).map(([name, s]) => {
    const t = { tritium: withTotal(s.tritium), triton: withTotal(s.triton) };
    return [name, ...triple(t, 'serverCpuUs'), ...triple(t, 'stubCpuUs'), ...triple(t, 'totalCpuUs')];
  });
  return table(['cell', 'tritium server', 'Triton server', 'ratio', 'tritium stubs', 'Triton stubs', 'ratio', 'tritium total', 'Triton total', 'ratio'], rows);
}

function batchingTable(ctx) {
  const rows = [];
  for (const [name, s] of Object.entries(ctx.results.cells)) {
    if (!name.startsWith('batch_sleep')) continue;
    const toIdeal = (rounds) => rounds?.map((r) => (r.error ? r : { ...r, ofIdeal: r.throughput / IDEAL_PER_SEC }));
    const t = { tritium: toIdeal(s.tritium), triton: toIdeal(s.triton) };
    rows.push([name, ...triple(t, 'throughput'), ...triple(t, 'ofIdeal', 2), ...triple(t, 'meanBatch', 1)]);
  }
  return table(
    ['cell', 'tritium infer/s', 'Triton infer/s', 'ratio', 'tritium / ideal', 'Triton / ideal', 'ratio', 'tritium mean batch', 'Triton mean batch', 'ratio'],
    rows,
  );
}

/** --before: the same tritium at another checkout, per cell (ratios: this build / that one). */
function beforeTable(ctx) {
  const withTotal = (rounds) => rounds?.map((r) => (r.error ? r : { ...r, totalCpuUs: r.serverCpuUs + r.stubCpuUs }));
  const pair = (byServer, key, digits = 0) => {
    const [t, b] = ['tritium', 'before'].map((k) => (byServer[k] ? summary(withTotal(byServer[k]), key) : undefined));
    return [cellText(b, digits), cellText(t, digits), ratioText(t, b)];
  };
  const rows = Object.entries(ctx.results.cells).map(([name, s]) => [
    name,
    ...pair(s, 'serverCpuUs'),
    ...pair(s, 'totalCpuUs'),
    ...pair(s, 'throughput'),
    ...pair(s, 'p99Us'),
  ]);
  return table(
    [
      'cell',
      'before server',
      'now server',
      'ratio',
      'before total',
      'now total',
      'ratio',
      'before infer/s',
      'now infer/s',
      'ratio',
      'before p99 µs',
      'now p99 µs',
      'ratio',
    ],
    rows,
  );
}

/** The rows of memoryOf()'s figures, medians over rounds. */
function memoryRows(s) {
  return [
    ['RSS, server process (MiB)', ...triple(s, 'serverRssMiB', 1)],
    ['RSS, stub processes (MiB)', ...triple(s, 'stubRssMiB', 1)],
    ['RSS, total (MiB)', ...triple(s, 'totalRssMiB', 1)],
    ['PSS, total (MiB)', ...triple(s, 'totalPssMiB', 1)],
    ['processes (server + stubs)', ...triple(s, 'processes')],
  ];
}

function loadedTable(ctx) {
  return table(["after the round's cells", 'tritium', 'Triton', 'ratio'], memoryRows(ctx.results.loaded));
}

function startupTable(ctx) {
  const s = ctx.results.startup;
  return table(['4 Python models × 2 instances', 'tritium', 'Triton', 'ratio'], [['start-to-ready (ms)', ...triple(s, 'readyMs')], ...memoryRows(s)]);
}

function report(ctx) {
  const parts = ['### Setup', '', header(ctx)];
  const cells = Object.keys(ctx.results.cells);
  if (cells.length) {
    parts.push('', '### Throughput and latency (perf_analyzer, client side)', '', latencyTable(ctx));
    parts.push('', '### CPU per request (µs; server process, its stub processes, both)', '', cpuTable(ctx));
  }
  if (cells.length && ctx.opts.before) {
    parts.push(
      '',
      `### tritium now against --before ${path.relative(ROOT, ctx.opts.before) || '.'} (commit ${ctx.beforeCommit}); CPU per request in µs, ratio now / before`,
      '',
      beforeTable(ctx),
    );
  }
  if (cells.some((c) => c.startsWith('batch_sleep'))) {
    parts.push(
      '',
      `### Dynamic batching: batch_sleep (2 ms + 0.1 ms × rows), ideal ${IDEAL_PER_SEC.toFixed(0)} infer/s at batches of ${IDEAL_BATCH}`,
      '',
      batchingTable(ctx),
    );
  }
  if (ctx.results.loaded.tritium?.length || ctx.results.loaded.triton?.length) {
    parts.push('', `### Memory after the round's cells (${path.relative(ROOT, REPO)}, the servers of the cells above)`, '', loadedTable(ctx));
  }
  if (ctx.results.startup) parts.push('', '### Start-up and memory', '', startupTable(ctx));
  const notes = errorNotes(ctx);
  parts.push(
    '',
    `† in at least one round, a window's throughput or average latency was more than ${ctx.opts.stability} % off the mean of the run's 3 windows.`,
  );
  parts.push('‡ failed in at least one round (the median is over the others):');
  parts.push(...(notes.length ? notes : ['- none']));
  return parts.join('\n');
}

// ---------------------------------------------------------------- main

async function main() {
  const opts = parseOptions();
  if (showHelp(opts, USAGE)) return;
  if (opts.servers.length === 0) throw new Error('--servers names no server');
  const cells = allCells().filter((c) => selected(c.name, opts.only));
  const doStartup = selected(STARTUP, opts.only);
  if (cells.length === 0 && !doStartup) throw new Error(`--only ${opts.only.join(',')} matches no cell`);
  installExitGuards();
  const ctx = {
    opts,
    startedAt: Date.now(),
    loadBefore: loadAverage(),
    commit: gitCommit(),
    beforeCommit: opts.before ? gitCommit(opts.before) : undefined,
    pa: requirePerfAnalyzer(),
    triton: opts.servers.includes('triton') ? ensureTriton() : undefined,
    results: { cells: {}, startup: doStartup ? {} : undefined, loaded: Object.fromEntries(opts.servers.map((s) => [s, []])) },
  };
  for (const c of cells) ctx.results.cells[c.name] = Object.fromEntries(opts.servers.map((s) => [s, []]));
  if (doStartup) for (const s of opts.servers) ctx.results.startup[s] = [];
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.mkdirSync(OUT, { recursive: true });
  ctx.startupRepo = doStartup ? writeStartupRepo() : undefined;
  try {
    for (let round = 1; round <= opts.rounds; round++) {
      if (doStartup) for (const kind of opts.servers) await measureStartup(ctx, kind, round);
      if (cells.length === 0) continue;
      if (opts.sequential) for (const kind of opts.servers) await benchServer(ctx, kind, round, cells);
      else await benchInterleaved(ctx, round, cells);
    }
  } finally {
    if (ctx.startupRepo) fs.rmSync(ctx.startupRepo, { recursive: true, force: true });
  }
  publishReport(report(ctx), OUT);
  if (opts.json) {
    const { pa, triton, startupRepo, ...rest } = ctx;
    fs.writeFileSync(opts.json, JSON.stringify({ ...rest, perfAnalyzer: pa, triton, machine: machine(), idealPerSec: IDEAL_PER_SEC }, null, 2));
  }
}

main().catch(async (err) => {
  console.error(err instanceof Error ? err.message : err);
  await Promise.all([...live].map((s) => stopServer(s, 5000)));
  process.exit(1);
});
