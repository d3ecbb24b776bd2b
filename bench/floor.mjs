#!/usr/bin/env node
/**
 * The physical floor on this machine, measured with the same client: how much CPU per request
 * a server that does nothing but the unavoidable work costs, next to what tritium costs, per
 * cell of bench/vs-triton (add_sub and identity_fp32, HTTP and gRPC, concurrency 1, 4, 16).
 *
 *   npm run build && node bench/floor.mjs [--quick] [--rounds 1] [--only add_sub/http]
 *        [--profile add_sub/c1,add_sub/c16 | none] [--json file] [--help]
 *
 * The floor of a cell = the frontend floor of its protocol + the Python floor of its model:
 * - frontend floor: bench/floor/http-floor.mjs (HTTP/1.1 on node:net: framing only, canned
 *   answer) or bench/floor/grpc-floor.mjs (tritium's HTTP/2 sessions: whole message read, canned answer),
 *   driven by the same perf_analyzer as tritium; CPU of that process per inference;
 * - Python floor: bench/floor/stub_floor.py, the stub's protocol on the same shared-memory ring
 *   through the same native extension, with add_sub's numpy work and no Python object layer,
 *   driven by bench/floor/ipc-driver.mjs (tritium's own StubChannel) with as many execs in flight
 *   as tritium gives a stub at that concurrency, paced at the rate tritium reached in the cell;
 *   CPU of the Python process per request (and, for reference, flat out per pipeline depth).
 * The canned answers are recorded from tritium itself (bench/floor/record.mjs) for exactly the
 * requests perf_analyzer makes. A CPU profile of tritium under the same load (`perf record -e
 * cpu-clock` where perf runs, else `node --cpu-prof`) splits its server time into stages
 * (bench/floor/profile.mjs), set beside the same split of the floor servers' profiles.
 * Progress goes to stderr, the Markdown report to stdout (and bench/.out/floor/report.md).
 */
import { fork, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { recordCanned } from './floor/record.mjs';
import { PERF_NODE_ARGS, perfAvailable, removePerfMap, STAGES, stageSplitPerf, stageSplitV8 } from './floor/profile.mjs';
import { arg, machine } from './grpc-common.mjs';
import { CONCURRENCIES, cellDir, cellGrid, cellPort, PROTOCOLS, SMALL_MODELS, selected } from './lib/cells.mjs';
import { checkFlags, list, positive, showHelp, windowOptions } from './lib/options.mjs';
import { measuredWindows, requirePerfAnalyzer, warmUpServer as warmUpServerWindows, warmUpWindow } from './lib/perf-analyzer.mjs';
import { cmdline, cpuPerRequest, cpuSeconds, descendants, killDescendants, treeCpu, voluntarySwitches } from './lib/proc-stats.mjs';
import { commandLine, fmt, gitCommit, loadAverage, median, publishReport, table, toolVersion } from './lib/report.mjs';
import { PYTHON, ROOT, ensureBuilt, startTritium, successCount } from './lib/server.mjs';
import { killNow, stopServer } from './lib/triton.mjs';

const REPO = path.join(ROOT, 'bench', 'models', 'vs-triton');
const OUT = path.join(ROOT, 'bench', '.out', 'floor');
const FLOOR = path.join(ROOT, 'bench', 'floor');
const MODELS = SMALL_MODELS;

const USAGE = `usage: node bench/floor.mjs [options]

Measures, per cell of bench/vs-triton (add_sub and identity_fp32; HTTP and gRPC; concurrency
1, 4, 16), the CPU per request of the floor (a canned-answer HTTP/1.1 or gRPC server under the
same perf_analyzer, plus a minimal Python loop on tritium's shared-memory ring doing the model's
numpy work) and of tritium, and prints tritium's as a multiple of the floor. A CPU profile of
tritium and of the floor servers under load then splits server time into stages (read/parse,
validate, schedule, IPC, respond). Markdown on stdout, progress on stderr.

  --rounds N            rounds, each measuring tritium then the floors (default 1); medians
  --quick               short windows for development (warm-up 300 ms, windows 500 ms,
                        server warm-up 1000 ms, profile windows 1500 ms)
  --warmup-ms MS        one warm-up window before each measured run (default 1000)
  --server-warmup-ms MS after each server starts, one window of this length per model and
                        protocol at concurrency 4 (default 3000)
  --measure-ms MS       perf_analyzer --measurement-interval: each measured run is 3 windows
                        of MS ms; the Python floor runs 3 × MS (default 2000)
  --stability PCT       mark † a run whose windows differ from their mean by more than PCT %
                        in throughput or average latency (default 10)
  --only A,B            only the cells whose name contains one of these (add_sub/http/c1 ...)
  --profile LIST        model/cC cells to profile over both protocols (default
                        add_sub/c1,add_sub/c16), or none
  --profile-ms MS       length of each profiled run (default 6000; 3 windows of MS/3)
  --profiler P          perf (perf record -e cpu-clock of every thread: CPU time), v8 (node
                        --cpu-prof of the main thread: wall time), or auto (default: perf
                        when it runs here, else v8)
  --perf-freq HZ        perf record -F (default 1999)
  --profile-interval US --cpu-prof-interval of V8 profiles (default 500)
  --json FILE           also write every raw figure to FILE
  --help                this text

Needs: npm run build (dist/, and the native addon and _tritium_ipc of npm install), a real
perf_analyzer (.venv/bin), Linux (/proc). Outputs (canned answers, perf_analyzer CSVs,
profiles, report.md) go to bench/.out/floor/.`;

const KNOWN_FLAGS = [
  'rounds',
  'quick',
  'warmup-ms',
  'server-warmup-ms',
  'measure-ms',
  'stability',
  'only',
  'profile',
  'profile-ms',
  'profile-interval',
  'profiler',
  'perf-freq',
  'json',
  'help',
];
const BOOLEAN_FLAGS = ['quick', 'help'];

// ---------------------------------------------------------------- options and cells

function parseOptions() {
  checkFlags(process.argv.slice(2), KNOWN_FLAGS, BOOLEAN_FLAGS, USAGE);
  const quick = process.argv.includes('--quick');
  const profileText = arg('profile', 'add_sub/c1,add_sub/c16');
  const profile =
    profileText === 'none'
      ? []
      : list(profileText).map((p) => {
          const m = /^([\w-]+)\/c(\d+)$/.exec(p);
          if (!m || !MODELS.includes(m[1])) throw new Error(`--profile: ${p} is not <${MODELS.join('|')}>/c<concurrency>`);
          return { model: m[1], concurrency: Number(m[2]) };
        });
  return {
    help: process.argv.includes('--help'),
    quick,
    rounds: Math.round(positive('rounds', arg('rounds', '1'))),
    ...windowOptions(quick),
    only: list(arg('only', '')),
    profile,
    profileMs: Math.round(positive('profile-ms', arg('profile-ms', quick ? '1500' : '6000'))),
    profileInterval: Math.round(positive('profile-interval', arg('profile-interval', '500'))),
    profiler: arg('profiler', 'auto'),
    perfFreq: Math.round(positive('perf-freq', arg('perf-freq', '1999'))),
    json: arg('json', undefined),
  };
}

/** tritium's PIPELINE_DEPTH, read from dist/ once it is known to be built (main). */
let PIPELINE_DEPTH = 2;

/** Execs tritium keeps in flight to one stub at client concurrency `c` (docs/design.md, "Pipelining"). */
const depthOf = (c) => Math.min(c, PIPELINE_DEPTH);

// ---------------------------------------------------------------- processes

/** tritium servers and floor processes started and not yet stopped. */
const live = new Set();

function installExitGuards() {
  process.on('exit', () => {
    for (const s of live) if (s.tritium) killNow(s.tritium);
    for (const s of live) if (s.perf) s.perf.kill('SIGKILL');
    for (const s of live) removePerfMap(s.tritium ? s.tritium.proc.pid : s.pid);
    killDescendants(process.pid);
    // A killed driver cannot unlink its region; its name holds the driver's pid.
    for (const s of live) {
      if (!s.pid || !fs.existsSync('/dev/shm')) continue;
      for (const f of fs.readdirSync('/dev/shm')) if (f.startsWith(`tritium_${s.pid}_`)) fs.rmSync(path.join('/dev/shm', f), { force: true });
    }
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(sig, () => {
      process.stderr.write(`\nfloor: ${sig}, stopping\n`);
      process.exit(130);
    });
  }
}

async function launchTritium(nodeArgs = []) {
  const server = await startTritium({ repos: REPO, nodeArgs });
  const entry = { tritium: server };
  live.add(entry);
  return { server, stop: () => stopServer(server).finally(() => live.delete(entry)) };
}

/**
 * Forks a floor process (`script` in bench/floor with `args`), which talks over the IPC channel;
 * resolves with its first message and { pid, request(msg), stop() }.
 */
async function forkFloor(script, args, nodeArgs = []) {
  const proc = fork(path.join(FLOOR, script), args, { execArgv: nodeArgs, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const entry = { pid: proc.pid };
  live.add(entry);
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  const first = await Promise.race([new Promise((resolve) => proc.once('message', resolve)), exited.then(() => undefined)]);
  if (first === undefined) throw new Error(`bench/floor/${script} exited during start-up`);
  const request = (msg) =>
    new Promise((resolve, reject) => {
      proc.once('message', resolve);
      exited.then(() => reject(new Error(`bench/floor/${script} exited`)));
      proc.send(msg);
    });
  const stop = async () => {
    if (proc.connected) proc.send({ op: 'exit' });
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    live.delete(entry);
  };
  return { first, pid: proc.pid, request, stop };
}

// ---------------------------------------------------------------- perf_analyzer

/** One window whose figures are thrown away (bench/lib/perf-analyzer.mjs, as bench/vs-triton.mjs). */
function warmUp(ctx, cell, port, dir, windowMs = ctx.opts.warmupMs) {
  return warmUpWindow(ctx.pa, { cell, port, dir, windowMs, stability: ctx.opts.stability });
}

/** Exactly 3 windows of `windowMs`, whatever their spread (bench/lib/perf-analyzer.mjs, as bench/vs-triton.mjs). */
function measure(ctx, cell, port, dir, windowMs = ctx.opts.measureMs) {
  const columns = { throughput: 'Inferences/Second', p50Us: 'p50 latency', p99Us: 'p99 latency' };
  return measuredWindows(ctx.pa, { cell, port, dir, windowMs, stability: ctx.opts.stability, columns });
}

/** Right after a server starts: one window per model and protocol at concurrency 4. */
function warmUpServer(ctx, cells, portOf, dir) {
  return warmUpServerWindows(ctx.pa, { cells, portOf, dir, windowMs: ctx.opts.serverWarmupMs, stability: ctx.opts.stability });
}

// ---------------------------------------------------------------- tritium

/** The stub process serving `model` (its model.py is on its command line). */
function stubOf(serverPid, model) {
  const tail = path.join(model, '1', 'model.py');
  return descendants(serverPid).find((pid) => cmdline(pid).some((a) => a.endsWith(tail)));
}

const portOf = (server) => (cell) => cellPort(server, cell);

async function tritiumCell(ctx, server, cell, dir) {
  const port = portOf(server)(cell);
  await warmUp(ctx, cell, port, dir);
  const stub = stubOf(server.proc.pid, cell.model);
  const n0 = await successCount(server, cell.model);
  const cpu0 = treeCpu(server.proc.pid);
  const sw0 = voluntarySwitches(stub);
  const figures = await measure(ctx, cell, port, dir);
  const cpu1 = treeCpu(server.proc.pid);
  const sw1 = voluntarySwitches(stub);
  const n = (await successCount(server, cell.model)) - n0;
  if (n <= 0) throw new Error(`tritium counted no successful request of ${cell.model}`);
  return {
    ...figures,
    requests: n,
    ...cpuPerRequest(cpu0, cpu1, n),
    stubSleepsPerRequest: (sw1 - sw0) / n,
  };
}

async function measureTritium(ctx, round, cells) {
  const { server, stop } = await launchTritium();
  try {
    const dir = path.join(OUT, `round${round}`, 'tritium');
    await warmUpServer(ctx, cells, portOf(server), dir);
    if (!ctx.canned) await record(ctx, server, cells);
    for (const cell of cells) {
      const r = await attempt(() => tritiumCell(ctx, server, cell, path.join(dir, cellDir(cell))));
      ctx.results.cells[cell.name].tritium.push(r);
      progress(
        round,
        `tritium ${cell.name}: ${r.error ? `ERROR ${r.error}` : `${fmt(r.throughput)} infer/s, CPU/request server ${fmt(r.serverCpuUs)} µs + stub ${fmt(r.stubCpuUs)} µs, stub sleeps/request ${fmt(r.stubSleepsPerRequest, 2)}${r.unstable ? ' †' : ''}`}`,
      );
    }
  } finally {
    await stop();
  }
}

/** The floors' canned answers, recorded once from this tritium through a proxy (floor/record.mjs). */
async function record(ctx, server, cells) {
  const file = path.join(OUT, 'canned.json');
  const models = [...new Set([...cells, ...profileCells(ctx)].map((c) => c.model))];
  const runClient = (protocol, model, port) =>
    warmUp(ctx, { model, protocol, concurrency: 1 }, port, path.join(OUT, 'record', `${model}-${protocol}`), Math.min(ctx.opts.warmupMs, 500));
  const keys = await recordCanned({ httpPort: server.httpPort, grpcPort: server.grpcPort, models, runClient, file });
  ctx.canned = { file, keys };
  process.stderr.write(`floor: recorded ${keys.http.length} HTTP and ${keys.grpc.length} gRPC canned answers into ${path.relative(ROOT, file)}\n`);
}

// ---------------------------------------------------------------- floors

const FRONTEND_SCRIPT = { http: 'http-floor.mjs', grpc: 'grpc-floor.mjs' };

async function startFrontendFloor(ctx, protocol, nodeArgs = []) {
  const floor = await forkFloor(FRONTEND_SCRIPT[protocol], [ctx.canned.file], nodeArgs);
  return { ...floor, port: floor.first.port, count: () => floor.request({ op: 'count' }) };
}

async function frontendCell(ctx, floor, cell, dir) {
  await warmUp(ctx, cell, floor.port, dir);
  const n0 = (await floor.count()).infer;
  const cpu0 = cpuSeconds(floor.pid);
  const figures = await measure(ctx, cell, floor.port, dir);
  const cpu1 = cpuSeconds(floor.pid);
  const n = (await floor.count()).infer - n0;
  if (n <= 0) throw new Error('the floor answered no inference');
  return { ...figures, requests: n, cpuUs: ((cpu1 - cpu0) / n) * 1e6 };
}

async function measureFrontendFloors(ctx, round, cells) {
  for (const protocol of PROTOCOLS) {
    const mine = cells.filter((c) => c.protocol === protocol);
    if (mine.length === 0) continue;
    const floor = await startFrontendFloor(ctx, protocol);
    try {
      const dir = path.join(OUT, `round${round}`, `floor-${protocol}`);
      await warmUpServer(ctx, mine, () => floor.port, dir);
      for (const cell of mine) {
        const r = await attempt(() => frontendCell(ctx, floor, cell, path.join(dir, cellDir(cell))));
        ctx.results.cells[cell.name].frontend.push(r);
        progress(
          round,
          `floor ${cell.name}: ${r.error ? `ERROR ${r.error}` : `${fmt(r.throughput)} infer/s, CPU/request ${fmt(r.cpuUs)} µs${r.unstable ? ' †' : ''}`}`,
        );
      }
    } finally {
      await floor.stop();
    }
  }
}

/** One run of the Python floor: CPU per request of the loop and of the Node driver, sleeps per request. */
async function pythonRun(ctx, driver, depth, rate) {
  return attempt(async () => {
    const raw = await driver.request({ op: 'run', depth, rate, warmupMs: ctx.opts.warmupMs, ms: 3 * ctx.opts.measureMs });
    if (!(raw.requests > 0)) throw new Error('the Python floor answered no request');
    return {
      requests: raw.requests,
      rate: raw.requests / raw.wallS,
      stubCpuUs: (raw.stubCpuS / raw.requests) * 1e6,
      driverCpuUs: (raw.driverCpuS / raw.requests) * 1e6,
      stubSleepsPerRequest: raw.stubSwitches / raw.requests,
    };
  });
}

function pythonText(r) {
  return r.error
    ? `ERROR ${r.error}`
    : `${fmt(r.rate)} requests/s, CPU/request loop ${fmt(r.stubCpuUs, 1)} µs, Node driver ${fmt(r.driverCpuUs, 1)} µs, loop sleeps/request ${fmt(r.stubSleepsPerRequest, 2)}`;
}

/**
 * The Python floor of each model: per cell, paced at the rate tritium reached in that cell this
 * round with the execs in flight tritium allows at its concurrency (the stub then waits between
 * requests as tritium's does); and per pipeline depth, flat out (the loop's best case).
 */
async function measurePythonFloors(ctx, round, cells) {
  for (const model of MODELS) {
    const mine = cells.filter((c) => c.model === model);
    if (mine.length === 0) continue;
    const driver = await forkFloor('ipc-driver.mjs', [model]);
    try {
      for (const depth of [...new Set(mine.map((c) => depthOf(c.concurrency)))].sort()) {
        const r = await pythonRun(ctx, driver, depth, 0);
        const key = `${model}/depth${depth}`;
        (ctx.results.python[key] ??= []).push(r);
        progress(round, `Python floor ${key}, flat out: ${pythonText(r)}`);
      }
      for (const cell of mine) {
        const rate = ctx.results.cells[cell.name].tritium[round - 1]?.throughput;
        const r = Number.isFinite(rate) ? await pythonRun(ctx, driver, depthOf(cell.concurrency), rate) : { error: 'no tritium rate to pace at' };
        ctx.results.cells[cell.name].python.push(r);
        progress(round, `Python floor ${cell.name}, paced at ${fmt(rate)}/s: ${pythonText(r)}`);
      }
    } finally {
      await driver.stop();
    }
  }
}

// ---------------------------------------------------------------- profiles

const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** The main thread's profile among those --cpu-prof wrote into `dir` for process `pid`. */
function mainProfile(dir, pid) {
  const file = fs.readdirSync(dir).find((f) => f.includes(`.${pid}.0.`) && f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no main-thread profile of pid ${pid} in ${dir}`);
  return path.join(dir, file);
}

function profileCells(ctx) {
  return ctx.opts.profile.flatMap((p) => cellGrid([p.model], PROTOCOLS, [p.concurrency]));
}

/** node flags of a profiled server: perf's symbol map, or V8's profiler writing into `dir`. */
function profilerNodeArgs(ctx, dir) {
  return ctx.profiler === 'perf' ? PERF_NODE_ARGS : ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${ctx.opts.profileInterval}`];
}

/** `perf record` of process `pid` (every thread, CPU time, call graphs) into `file` until stop(). */
async function startPerf(ctx, pid, file) {
  const proc = spawn('perf', ['record', '-q', '-e', 'cpu-clock', '-F', String(ctx.opts.perfFreq), '-g', '-p', String(pid), '-o', file], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  proc.stderr.on('data', (d) => (err += d));
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  const entry = { perf: proc };
  live.add(entry);
  await new Promise((r) => setTimeout(r, 300)); // attached by then
  return {
    stop: async () => {
      proc.kill('SIGINT');
      const code = await exited;
      live.delete(entry);
      if (code !== 0 && !fs.existsSync(file)) throw new Error(`perf record failed: ${err}`);
    },
  };
}

/**
 * One profiled run of `cell` against a server process `pid` on `port`: warm-up, then the
 * measured run under the profiler, with the requests it answered (`count()`) and its CPU.
 */
async function profiledRun(ctx, { pid, port, count, dir, cell }) {
  const cdir = path.join(dir, cellDir(cell));
  await warmUp(ctx, cell, port, cdir);
  const perfFile = ctx.profiler === 'perf' ? path.join(dir, `${cellDir(cell)}.perf.data`) : undefined;
  const perf = perfFile ? await startPerf(ctx, pid, perfFile) : undefined;
  const n0 = await count();
  const cpu0 = cpuSeconds(pid);
  const fromUs = nowUs();
  try {
    await measure(ctx, cell, port, cdir, Math.round(ctx.opts.profileMs / 3));
  } finally {
    await perf?.stop();
  }
  const toUs = nowUs();
  const cpu1 = cpuSeconds(pid);
  const n = (await count()) - n0;
  return { name: cell.name, fromUs, toUs, perfFile, requests: n, profiledCpuUs: ((cpu1 - cpu0) / n) * 1e6 };
}

/** The stage split of each run, once its server has exited (perf still needs its symbol map). */
function splitRuns(ctx, runs, pid, dir) {
  try {
    return runs.map((w) => ({
      ...w,
      split: ctx.profiler === 'perf' ? stageSplitPerf(w.perfFile, pid) : stageSplitV8(mainProfile(dir, pid), w.fromUs, w.toUs),
    }));
  } finally {
    removePerfMap(pid);
  }
}

async function profileTritium(ctx, cells) {
  const dir = path.join(OUT, 'profiles', 'tritium');
  fs.mkdirSync(dir, { recursive: true });
  const { server, stop } = await launchTritium(profilerNodeArgs(ctx, dir));
  const runs = [];
  try {
    await warmUpServer(ctx, cells, portOf(server), dir);
    for (const cell of cells) {
      const count = () => successCount(server, cell.model);
      runs.push(await profiledRun(ctx, { pid: server.proc.pid, port: portOf(server)(cell), count, dir, cell }));
    }
  } finally {
    await stop();
  }
  for (const w of splitRuns(ctx, runs, server.proc.pid, dir)) ctx.results.profiles[w.name] = { tritium: w };
}

async function profileFrontendFloors(ctx, cells) {
  for (const protocol of PROTOCOLS) {
    const mine = cells.filter((c) => c.protocol === protocol);
    if (mine.length === 0) continue;
    const dir = path.join(OUT, 'profiles', `floor-${protocol}`);
    fs.mkdirSync(dir, { recursive: true });
    const floor = await startFrontendFloor(ctx, protocol, profilerNodeArgs(ctx, dir));
    const runs = [];
    try {
      await warmUpServer(ctx, mine, () => floor.port, dir);
      const count = async () => (await floor.count()).infer;
      for (const cell of mine) runs.push(await profiledRun(ctx, { pid: floor.pid, port: floor.port, count, dir, cell }));
    } finally {
      await floor.stop();
    }
    for (const w of splitRuns(ctx, runs, floor.pid, dir)) ctx.results.profiles[w.name].floor = w;
  }
}

async function profilePhase(ctx) {
  const cells = profileCells(ctx);
  if (cells.length === 0) return;
  process.stderr.write(
    `floor: profiling ${cells.map((c) => c.name).join(', ')} with ${ctx.profiler === 'perf' ? 'perf record -e cpu-clock' : 'node --cpu-prof'}\n`,
  );
  await profileTritium(ctx, cells);
  await profileFrontendFloors(ctx, cells);
}

// ---------------------------------------------------------------- report

function progress(round, text) {
  process.stderr.write(`[round ${round}] ${text}\n`);
}

async function attempt(fn) {
  try {
    return await fn();
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    return { error: text.split('\n').find((l) => l.trim() && !/^perf_analyzer exited/.test(l)) ?? text };
  }
}

/** Median of `key` over rounds, and whether a round was unstable (†) or failed (‡). */
function summary(rounds, key) {
  const ok = (rounds ?? []).filter((r) => !r.error);
  return { value: median(ok.map((r) => r[key])), unstable: ok.some((r) => r.unstable), failed: ok.length < (rounds ?? []).length };
}

function marked(s, digits = 0) {
  return `${fmt(s.value, digits)}${s.unstable ? '†' : ''}${s.failed ? '‡' : ''}`;
}

/** Median figures of one cell: tritium's, its frontend floor's and its Python floor's. */
function cellFigures(ctx, name) {
  const c = ctx.results.cells[name];
  const flat = ctx.results.python[`${c.model}/depth${depthOf(c.concurrency)}`];
  const f = {
    server: summary(c.tritium, 'serverCpuUs'),
    stub: summary(c.tritium, 'stubCpuUs'),
    throughput: summary(c.tritium, 'throughput'),
    stubSleeps: summary(c.tritium, 'stubSleepsPerRequest'),
    frontend: summary(c.frontend, 'cpuUs'),
    floorThroughput: summary(c.frontend, 'throughput'),
    p50: summary(c.tritium, 'p50Us'),
    p99: summary(c.tritium, 'p99Us'),
    floorP50: summary(c.frontend, 'p50Us'),
    floorP99: summary(c.frontend, 'p99Us'),
    python: summary(c.python, 'stubCpuUs'),
    driver: summary(c.python, 'driverCpuUs'),
    pythonSleeps: summary(c.python, 'stubSleepsPerRequest'),
    pythonRate: summary(c.python, 'rate'),
    flatPython: summary(flat, 'stubCpuUs'),
    flatDriver: summary(flat, 'driverCpuUs'),
    flatRate: summary(flat, 'rate'),
  };
  f.floor = f.frontend.value + f.python.value;
  f.total = f.server.value + f.stub.value;
  return f;
}

function ratio(a, b) {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(1)}×` : '—';
}

function floorTable(ctx) {
  const rows = Object.keys(ctx.results.cells).map((name) => {
    const f = cellFigures(ctx, name);
    return [
      name,
      marked(f.frontend),
      fmt(f.python.value, 1),
      fmt(f.floor),
      marked(f.server),
      fmt(f.stub.value),
      fmt(f.total),
      ratio(f.total, f.floor),
      ratio(f.server.value, f.frontend.value),
      ratio(f.stub.value, f.python.value),
    ];
  });
  return table(
    [
      'cell',
      'frontend floor',
      'Python floor',
      '**floor**',
      'tritium server',
      'tritium stub',
      '**tritium total**',
      '**total ÷ floor**',
      'server ÷ frontend floor',
      'stub ÷ Python floor',
    ],
    rows,
  );
}

/**
 * Latency, client side, of tritium and of its frontend floor: the floor does nothing per
 * request, so its tail is what the client and the machine add to any server's.
 */
function latencyTable(ctx) {
  const rows = Object.keys(ctx.results.cells).map((name) => {
    const f = cellFigures(ctx, name);
    return [name, marked(f.p50), marked(f.p99), marked(f.floorP50), marked(f.floorP99)];
  });
  return table(['cell', 'tritium p50 µs', 'tritium p99 µs', 'frontend floor p50 µs', 'frontend floor p99 µs'], rows);
}

function contextTable(ctx) {
  const rows = Object.keys(ctx.results.cells).map((name) => {
    const f = cellFigures(ctx, name);
    return [
      name,
      marked(f.throughput),
      marked(f.floorThroughput),
      String(depthOf(ctx.results.cells[name].concurrency)),
      fmt(f.pythonRate.value),
      fmt(f.stubSleeps.value, 2),
      fmt(f.pythonSleeps.value, 2),
      `${fmt(f.flatDriver.value, 1)} / ${fmt(f.driver.value, 1)}`,
      ratio(f.total, f.floor + f.flatDriver.value),
      `${fmt(f.flatPython.value, 1)} at ${fmt(f.flatRate.value)}/s`,
    ];
  });
  return table(
    [
      'cell',
      'tritium infer/s',
      'frontend floor infer/s',
      'execs in flight',
      'Python floor requests/s (paced)',
      'tritium stub sleeps/request',
      'Python floor sleeps/request',
      'Node side of the Python floor µs: flat out / paced',
      'total ÷ (floor + Node side flat out)',
      'Python floor flat out µs',
    ],
    rows,
  );
}

/** The three functions with the most self time in each stage, in % of busy time. */
function topText(split) {
  return STAGES.filter((s) => split.top[s].length)
    .map(
      (s) =>
        `${s}: ${split.top[s]
          .slice(0, 3)
          .map(([fn, us]) => `${fn} ${((us / split.busyUs) * 100).toFixed(1)} %`)
          .join(', ')}`,
    )
    .join('; ');
}

/**
 * Per profiled cell: each stage's share of the main thread's busy time in the profile and, in
 * µs per request, that share of the unprofiled CPU per request of the same cell (the profiled
 * run's own when the cell was not measured), for tritium and for the floor. IPC's floor is the
 * Node side of the Python floor; validate and schedule have none.
 */
function stageTables(ctx) {
  const parts = [];
  for (const [name, p] of Object.entries(ctx.results.profiles)) {
    const measured = ctx.results.cells[name] ? cellFigures(ctx, name) : undefined;
    const tritiumPerRequest = Number.isFinite(measured?.server.value) ? measured.server.value : p.tritium.profiledCpuUs;
    const floorPerRequest = Number.isFinite(measured?.frontend.value) ? measured.frontend.value : p.floor?.profiledCpuUs;
    const [model, , c] = name.split('/');
    // The Node side of the ring at its cheapest: the driver flat out (paced, it also pays for
    // sleeping between requests, which tritium's server pays once, in its frontend's wait).
    const driver = summary(ctx.results.python[`${model}/depth${depthOf(Number(c.slice(1)))}`], 'driverCpuUs').value;
    const t = p.tritium.split;
    const fl = p.floor?.split;
    const rows = STAGES.map((stage) => {
      const tShare = t.byStage[stage] / t.busyUs;
      const tUs = tShare * tritiumPerRequest;
      let fShare = fl ? fl.byStage[stage] / fl.busyUs : NaN;
      let fUs = fShare * floorPerRequest;
      if (stage === 'IPC') {
        fShare = NaN;
        fUs = driver;
      } else if (stage === 'validate' || stage === 'schedule') fUs = 0;
      return [
        stage,
        `${(tShare * 100).toFixed(1)} %`,
        fmt(tUs),
        Number.isFinite(fShare) ? `${(fShare * 100).toFixed(1)} %` : '—',
        fmt(fUs),
        fmt(tUs - fUs),
        fUs > 0 ? ratio(tUs, fUs) : '—',
      ];
    });
    rows.push([
      '**server process**',
      '100 %',
      fmt(tritiumPerRequest),
      '100 %',
      fmt(floorPerRequest + driver),
      fmt(tritiumPerRequest - floorPerRequest - driver),
      ratio(tritiumPerRequest, floorPerRequest + driver),
    ]);
    const about = (w) =>
      w.split.method === 'perf'
        ? `${w.split.samples} samples, ${fmt(w.split.busyUs / 1000)} ms of CPU (${fmt(w.split.busyUs / w.requests)} µs/request; /proc ${fmt(w.profiledCpuUs)})`
        : `${w.split.samples} main-thread samples, ${fmt(w.split.busyUs / 1000)} ms busy and ${fmt(w.split.idleUs / 1000)} ms idle (/proc ${fmt(w.profiledCpuUs)} µs/request)`;
    parts.push(
      `#### ${name}`,
      '',
      `Profiled runs: tritium ${about(p.tritium)}; floor ${p.floor ? about(p.floor) : '—'}.`,
      '',
      table(['stage', 'tritium share', 'tritium µs/req', 'floor share', 'floor µs/req', 'above floor µs', 'tritium ÷ floor'], rows),
      '',
      '',
      `Largest self times per stage, tritium: ${topText(t)}`,
      '',
      `Largest self times per stage, floor: ${fl ? topText(fl) : '—'}`,
    );
    parts.push('');
  }
  return parts.join('\n');
}

/** The busiest processes outside this run's own tree (what else was running), from ps. */
function otherLoad() {
  const mine = new Set([process.pid, ...descendants(process.pid)]);
  const r = spawnSync('ps', ['-eo', 'pid=,pcpu=,etimes=,args=', '--sort=-pcpu'], { encoding: 'utf8' });
  if (r.status !== 0) return 'unknown';
  const rows = r.stdout
    .split('\n')
    .map((l) => /^\s*(\d+)\s+([\d.]+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter((m) => m && !mine.has(Number(m[1])) && Number(m[2]) >= 5)
    .slice(0, 6)
    .map((m) => `${m[4].slice(0, 60)} (${m[2]} % over its ${m[3]} s)`);
  return rows.length ? rows.join('; ') : 'nothing above 5 % CPU';
}

function header(ctx) {
  const o = ctx.opts;
  return [
    '```',
    `command: ${commandLine('bench/floor.mjs')}`,
    `date: ${new Date(ctx.startedAt).toISOString()}, elapsed ${((Date.now() - ctx.startedAt) / 1000).toFixed(0)} s`,
    `machine: ${machine()}`,
    `load average: ${ctx.loadBefore} at start, ${loadAverage()} at end`,
    `other processes at start: ${ctx.othersBefore}`,
    `other processes at end: ${otherLoad()}`,
    `tritium: commit ${ctx.commit}${process.env.TRITIUM_MEMFD !== undefined ? ` (TRITIUM_MEMFD=${process.env.TRITIUM_MEMFD})` : ''}; stubs and Python floor: ${toolVersion(PYTHON, ['--version'])} (${path.relative(ROOT, PYTHON)})`,
    `client: ${path.relative(ROOT, ctx.pa)}, sync, batch 1; after each server start one ${o.serverWarmupMs} ms window per model and protocol at concurrency 4; per cell 1 warm-up window of ${o.warmupMs} ms, then 3 windows of ${o.measureMs} ms; † a window off their mean by > ${o.stability} %`,
    `Python floor: ${o.warmupMs} ms warm-up, then ${3 * o.measureMs} ms with min(concurrency, ${PIPELINE_DEPTH}) execs in flight, paced at tritium's rate in the cell (and once flat out per depth); rounds: ${o.rounds} (medians)${o.only.length ? `; only ${o.only.join(', ')}` : ''}`,
    `profiles: ${o.profile.length ? `${profileCells(ctx).length} cells, ${ctx.profiler === 'perf' ? `perf record -e cpu-clock -F ${o.perfFreq} -g -p <server> (node ${PERF_NODE_ARGS.join(' ')})` : `node --cpu-prof --cpu-prof-interval ${o.profileInterval}`}, after a warm-up window 3 windows of ${Math.round(o.profileMs / 3)} ms each` : 'none'}`,
    '```',
  ].join('\n');
}

function report(ctx) {
  const parts = ['### Setup', '', header(ctx)];
  if (Object.keys(ctx.results.cells).length) {
    parts.push('', '### CPU per request (µs): the floor against tritium', '', floorTable(ctx));
    parts.push('', '### Context', '', contextTable(ctx));
    parts.push('', '### Latency (perf_analyzer)', '', latencyTable(ctx));
  }
  if (Object.keys(ctx.results.profiles).length) {
    const what = ctx.profiler === 'perf' ? 'perf, CPU time of every thread of the server process' : 'V8 profile, wall time of the main thread';
    parts.push('', `### Server time by stage (${what})`, '', stageTables(ctx));
  }
  const errors = [];
  for (const [name, c] of Object.entries(ctx.results.cells))
    for (const [kind, rounds] of Object.entries({ tritium: c.tritium, 'frontend floor': c.frontend, 'Python floor': c.python }))
      rounds.forEach((r, i) => r.error && errors.push(`- ${name}, ${kind}, round ${i + 1}: ${r.error}`));
  for (const [key, rounds] of Object.entries(ctx.results.python))
    rounds.forEach((r, i) => r.error && errors.push(`- Python floor ${key}, round ${i + 1}: ${r.error}`));
  parts.push(
    '',
    `† a window more than ${ctx.opts.stability} % off the mean of its run's 3 windows. ‡ failed in a round:`,
    ...(errors.length ? errors : ['- none']),
  );
  return parts.join('\n');
}

// ---------------------------------------------------------------- main

async function main() {
  const opts = parseOptions();
  if (showHelp(opts, USAGE)) return;
  ensureBuilt();
  ({ PIPELINE_DEPTH } = await import('../dist/backends/python/stub-session.js'));
  const cells = cellGrid(MODELS, PROTOCOLS, CONCURRENCIES).filter((c) => selected(c.name, opts.only));
  if (cells.length === 0 && opts.profile.length === 0) throw new Error(`--only ${opts.only.join(',')} matches no cell`);
  if (!['auto', 'perf', 'v8'].includes(opts.profiler)) throw new Error(`--profiler must be auto, perf or v8, not ${opts.profiler}`);
  installExitGuards();
  const ctx = {
    opts,
    startedAt: Date.now(),
    loadBefore: loadAverage(),
    othersBefore: otherLoad(),
    commit: gitCommit(),
    pa: requirePerfAnalyzer(),
    canned: undefined,
    profiler: opts.profiler === 'auto' ? (opts.profile.length && perfAvailable() ? 'perf' : 'v8') : opts.profiler,
    results: { cells: {}, python: {}, profiles: {} },
  };
  for (const c of cells)
    ctx.results.cells[c.name] = { model: c.model, protocol: c.protocol, concurrency: c.concurrency, tritium: [], frontend: [], python: [] };
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.mkdirSync(OUT, { recursive: true });
  for (let round = 1; round <= opts.rounds && cells.length > 0; round++) {
    await measureTritium(ctx, round, cells);
    await measureFrontendFloors(ctx, round, cells);
    await measurePythonFloors(ctx, round, cells);
  }
  if (opts.profile.length) {
    if (!ctx.canned) {
      const { server, stop } = await launchTritium();
      try {
        await record(ctx, server, []);
      } finally {
        await stop();
      }
    }
    await profilePhase(ctx);
  }
  publishReport(report(ctx), OUT);
  if (opts.json) {
    const { pa, ...rest } = ctx;
    fs.writeFileSync(opts.json, JSON.stringify({ ...rest, perfAnalyzer: pa, machine: machine() }, null, 2));
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
