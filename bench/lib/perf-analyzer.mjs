/**
 * Benchmark helper: the real perf_analyzer binary (from the tritonclient wheel in .venv, or
 * PERF_ANALYZER, or PATH), run asynchronously so the server's log pipe keeps draining, and
 * its CSV read back; and the runs bench/vs-triton.mjs and bench/floor.mjs make of one cell
 * (bench/lib/cells.mjs) with it: a warm-up window, then exactly 3 measured windows.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './server.mjs';

/** The real perf_analyzer binary, or undefined (the PyPI placeholder without one does not count). */
export function findPerfAnalyzer() {
  const candidates = [process.env.PERF_ANALYZER, path.join(ROOT, '.venv', 'bin', 'perf_analyzer'), 'perf_analyzer'].filter(Boolean);
  for (const c of candidates) {
    const r = spawnSync(c, ['--help'], { encoding: 'utf8', timeout: 10_000 });
    if (!r.error && /concurrency-range/.test(`${r.stdout}${r.stderr}`)) return c;
  }
  return undefined;
}

/** findPerfAnalyzer(), or an error saying how to get one. */
export function requirePerfAnalyzer() {
  const bin = findPerfAnalyzer();
  if (!bin) throw new Error('no perf_analyzer binary found (set PERF_ANALYZER or install tritonclient[all] in .venv)');
  return bin;
}

/**
 * Runs perf_analyzer with `args`; resolves with its stdout and stderr together, rejects with
 * them when it exits non-zero. `echoStderr` also passes its stderr through to ours. A run past
 * `timeoutMs` is killed and rejected, so that one cell that never ends is reported failed and
 * the run goes on. Its main thread gets priority over its workers (raiseMainThread).
 */
export function perfAnalyzer(bin, args, { echoStderr = false, timeoutMs = 300_000 } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const stopRaising = raiseMainThread(p.pid, requestThreads(args));
    let out = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      p.kill('SIGKILL');
    }, timeoutMs);
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => {
      out += d;
      if (echoStderr) process.stderr.write(d);
    });
    p.on('close', (code) => {
      clearTimeout(timer);
      stopRaising();
      if (timedOut) reject(new Error(`perf_analyzer ran past ${timeoutMs / 1000} s and was killed:\n${out}`));
      else if (code === 0) resolve(out);
      else reject(new Error(`perf_analyzer exited ${code}:\n${out}`));
    });
    p.on('error', (err) => {
      clearTimeout(timer);
      stopRaising();
      reject(err);
    });
  });
}

/** The nice value perf_analyzer's main thread gets once its workers run (raiseMainThread). */
const MAIN_THREAD_NICE = -10;

/**
 * How many request threads perf_analyzer starts for `args`: one per request in flight for sync
 * concurrency runs (--concurrency-range C or C:C); otherwise at least one.
 */
function requestThreads(args) {
  const i = args.indexOf('--concurrency-range');
  const sync = !args.includes('-a') && !args.includes('--async');
  const c = i >= 0 ? Number.parseInt(String(args[i + 1]), 10) : Number.NaN;
  return sync && c > 0 ? c : 1;
}

/**
 * Gives perf_analyzer's main thread (its TID is the process's PID) priority over its request
 * threads, once those exist, so that they keep the nice value they were created with.
 *
 * Why: between two windows the main thread sorts out which requests fell in the window that
 * ended, and it erases each counted record from one vector one at a time, so its work grows
 * with the records of the window times the records still pending behind them. With 16 sync
 * request threads and a server answering over 20 000 requests/s on 2 cores, the main thread
 * got too little CPU to finish before the next window held more records than the last, and
 * the run never ended (bench/floor's HTTP answerer at c=16, 2026-12-01: none of 7 runs ended
 * within 25-45 s, a profile showing the main thread in that erase; with the main thread at
 * nice -10, 3 of 3 ended in 8 s). The request threads and the server share
 * the cores as before; the main thread only runs between windows.
 *
 * Linux applies setpriority to the one thread whose TID it is given; raising a priority needs
 * CAP_SYS_NICE (root here and in CI), and without it the run goes on unchanged. Returns a
 * function that stops waiting for the threads.
 */
function raiseMainThread(pid, minWorkers) {
  if (pid === undefined || process.platform !== 'linux') return () => {};
  let last = 0;
  const poll = setInterval(() => {
    let threads;
    try {
      threads = fs.readdirSync(`/proc/${pid}/task`).length;
    } catch {
      clearInterval(poll);
      return;
    }
    // Raised once the request threads exist and their count has stopped growing, so that
    // none of them inherits it.
    if (threads > minWorkers && threads === last) {
      clearInterval(poll);
      try {
        os.setPriority(pid, MAIN_THREAD_NICE);
      } catch {
        // Not permitted: the run keeps its default priority.
      }
    }
    last = threads;
  }, 25);
  poll.unref();
  return () => clearInterval(poll);
}

/** The first data row of a perf_analyzer CSV (`-f`), as a lookup by column name (µs columns, p-latencies). */
export function readPerfCsv(csv) {
  const [header, row] = fs.readFileSync(csv, 'utf8').trim().split('\n');
  const cols = header.split(',');
  const vals = row.split(',');
  return (name) => Number(vals[cols.indexOf(name)]);
}

/**
 * perf_analyzer's arguments for one cell ({ model, protocol, concurrency }) against
 * 127.0.0.1:`port`: sync requests at exactly that concurrency, windows of `windowMs`, at most
 * `trials` of them until 3 agree within `stability` %, the figures into the CSV `csv`.
 */
export function cellArgs(cell, port, csv, windowMs, stability, trials, extra = []) {
  return [
    '-m',
    cell.model,
    '-u',
    `127.0.0.1:${port}`,
    '-i',
    cell.protocol,
    '--concurrency-range',
    `${cell.concurrency}:${cell.concurrency}`,
    '--max-threads',
    String(Math.max(16, cell.concurrency)),
    '--measurement-interval',
    String(windowMs),
    '--stability-percentage',
    String(stability),
    '--max-trials',
    String(trials),
    '-f',
    csv,
    ...extra,
  ];
}

const UNSTABLE = /Failed to obtain stable measurement/;

/**
 * One window of `cell` on `port` whose figures are thrown away (connections, threads and the
 * model's first calls); its CSV goes to `dir`/warmup.csv.
 */
export async function warmUpWindow(bin, { cell, port, dir, windowMs, stability }) {
  fs.mkdirSync(dir, { recursive: true });
  try {
    await perfAnalyzer(bin, cellArgs(cell, port, path.join(dir, 'warmup.csv'), windowMs, stability, 1));
  } catch (err) {
    // One window can never be "stable"; that refusal is expected, anything else is not.
    if (!UNSTABLE.test(String(err?.message))) throw err;
  }
}

/**
 * The largest distance, in percent of their mean, of one window's throughput or average latency
 * from the mean of the run's windows (perf_analyzer -v prints each window as a "Pass" line).
 */
export function windowSpread(output) {
  const passes = [...output.matchAll(/Pass \[\d+\] throughput: ([\d.]+) infer\/sec\. Avg latency: (\d+) usec/g)];
  if (passes.length === 0) return NaN;
  const spread = (xs) => {
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    return Math.max(...xs.map((x) => Math.abs(x - mean) / mean)) * 100;
  };
  return Math.max(spread(passes.map((p) => Number(p[1]))), spread(passes.map((p) => Number(p[2]))));
}

/**
 * The measured run of `cell` on `port`: exactly 3 windows of `windowMs`, whatever their spread.
 * perf_analyzer would otherwise keep adding windows until 3 agree within its
 * --stability-percentage, which on a busy machine rarely happens and makes a run last 3 to 4
 * times longer (or fail without figures). The spread of the 3 windows is checked here
 * afterwards instead, and a run beyond `stability` % is flagged `unstable`.
 *
 * CSV and output go to `dir`/measured.csv and measured.txt. Resolves with the CSV's figures
 * named in `columns` ({ key: 'p50 latency', ... }, in that order), then spreadPct and unstable.
 */
export async function measuredWindows(bin, { cell, port, dir, windowMs, stability, columns }) {
  fs.mkdirSync(dir, { recursive: true });
  const csv = path.join(dir, 'measured.csv');
  const output = await perfAnalyzer(bin, cellArgs(cell, port, csv, windowMs, 1e6, 3, ['-v']));
  fs.writeFileSync(path.join(dir, 'measured.txt'), output);
  const get = readPerfCsv(csv);
  const spreadPct = windowSpread(output);
  const figures = Object.fromEntries(Object.entries(columns).map(([key, column]) => [key, get(column)]));
  return { ...figures, spreadPct, unstable: !(spreadPct <= stability) };
}

/**
 * Right after a server starts: one warm-up window per model and protocol of `cells`, at
 * concurrency 4, on `portOf(cell)`, into `dir`/server-warmup-<model>-<protocol>, so that no cell
 * measures a cold server (tritium's JavaScript is compiled on first use, and its first few
 * thousand requests cost more CPU than the rest).
 */
export async function warmUpServer(bin, { cells, portOf, dir, windowMs, stability }) {
  const seen = new Set();
  for (const cell of cells) {
    const key = `${cell.model}-${cell.protocol}`;
    if (seen.has(key)) continue;
    seen.add(key);
    await warmUpWindow(bin, { cell: { ...cell, concurrency: 4 }, port: portOf(cell), dir: path.join(dir, `server-warmup-${key}`), windowMs, stability });
  }
}
