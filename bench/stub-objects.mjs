#!/usr/bin/env node
/**
 * The stub's pb_utils objects in C against the pure-Python ones: stub CPU per request of the
 * same tritium build, once with TRITIUM_STUB_OBJECTS=c and once with =python, servers
 * alternating, under the same perf_analyzer (HTTP; add_sub and identity_fp32 of
 * bench/models/vs-triton; concurrency 1, 4, 16).
 *
 *   npm run build && node bench/stub-objects.mjs [--rounds 2] [--quick] [--only add_sub/c4]
 *
 * Stub CPU per request = utime+stime of the server's descendants (its stubs) over the measured
 * windows / the requests answered in them (from the statistics extension). The server's own CPU
 * is printed too: it does the same work in both runs, so it shows how noisy the machine was.
 * Markdown on stdout, progress on stderr, outputs under bench/.out/stub-objects/.
 */
import path from 'node:path';

import { arg } from './grpc-common.mjs';
import { cellDir, cellGrid, cellPort, SMALL_MODELS, selected } from './lib/cells.mjs';
import { checkFlags, list, positive, showHelp, windowOptions } from './lib/options.mjs';
import { measuredWindows, requirePerfAnalyzer, warmUpServer, warmUpWindow } from './lib/perf-analyzer.mjs';
import { cpuPerRequest, killDescendants, treeCpu } from './lib/proc-stats.mjs';
import { commandLine, fmt, gitCommit, loadAverage, median, publishReport, table } from './lib/report.mjs';
import { ROOT, startTritium, successCount } from './lib/server.mjs';

const REPO = path.join(ROOT, 'bench', 'models', 'vs-triton');
const OUT = path.join(ROOT, 'bench', '.out', 'stub-objects');
const KINDS = ['python', 'c'];

const USAGE = `usage: node bench/stub-objects.mjs [options]

Stub CPU per request with the stub's pb_utils objects in C (TRITIUM_STUB_OBJECTS=c) and in
pure Python (=python), same build and client, servers alternating per round. HTTP only (the
stub's work does not depend on the protocol); add_sub and identity_fp32 at concurrency 1, 4, 16.

  --rounds N            rounds, each running both implementations (default 2); medians
  --quick               short windows for development
  --warmup-ms MS        one warm-up window before each measured run (default 1000)
  --server-warmup-ms MS after each server starts, one window per model (default 3000)
  --measure-ms MS       perf_analyzer --measurement-interval; 3 windows per run (default 2000)
  --stability PCT       mark † a run whose windows differ by more than PCT % (default 10)
  --only A,B            only the cells whose name contains one of these
  --help                this text`;

function parseOptions() {
  const known = ['rounds', 'quick', 'warmup-ms', 'server-warmup-ms', 'measure-ms', 'stability', 'only', 'help'];
  checkFlags(process.argv.slice(2), known, ['quick', 'help'], USAGE);
  const quick = process.argv.includes('--quick');
  return {
    help: process.argv.includes('--help'),
    rounds: Math.round(positive('rounds', arg('rounds', '2'))),
    ...windowOptions(quick),
    only: list(arg('only', '')),
  };
}

async function runCell(pa, opts, cell, server, dir) {
  const port = cellPort(server, cell);
  await warmUpWindow(pa, { cell, port, dir, windowMs: opts.warmupMs, stability: opts.stability });
  const n0 = await successCount(server, cell.model);
  const before = treeCpu(server.proc.pid);
  const columns = { throughput: 'Inferences/Second', p99Us: 'p99 latency' };
  const figures = await measuredWindows(pa, { cell, port, dir, windowMs: opts.measureMs, stability: opts.stability, columns });
  const after = treeCpu(server.proc.pid);
  const requests = (await successCount(server, cell.model)) - n0;
  if (requests <= 0) throw new Error(`the server counted no successful request of ${cell.model}`);
  return { ...figures, requests, ...cpuPerRequest(before, after, requests) };
}

async function main() {
  const opts = parseOptions();
  if (opts.help) return showHelp(opts, USAGE);
  const pa = requirePerfAnalyzer();
  const cells = cellGrid(SMALL_MODELS, ['http']).filter((c) => selected(c.name.replace('/http', ''), opts.only));
  if (cells.length === 0) throw new Error('--only selected no cell');
  process.on('exit', () => killDescendants(process.pid));
  const results = Object.fromEntries(cells.map((c) => [c.name, { python: [], c: [] }]));
  for (let round = 1; round <= opts.rounds; round++) {
    // Alternate which implementation goes first, so neither always meets a warmer machine.
    const order = round % 2 === 1 ? KINDS : [...KINDS].reverse();
    for (const kind of order) {
      const server = await startTritium({ repos: REPO, args: ['--log-verbose=1'], env: { TRITIUM_STUB_OBJECTS: kind } });
      try {
        const want = kind === 'c' ? /pb_utils objects: C/ : /pb_utils objects: pure Python/;
        if (!want.test(server.log())) throw new Error(`the stubs did not report ${kind} objects:\n${server.log()}`);
        const dir = path.join(OUT, `round${round}`, kind);
        await warmUpServer(pa, { cells, portOf: (c) => cellPort(server, c), dir, windowMs: opts.serverWarmupMs, stability: opts.stability });
        for (const cell of cells) {
          const r = await runCell(pa, opts, cell, server, path.join(dir, cellDir(cell)));
          results[cell.name][kind].push(r);
          process.stderr.write(
            `[round ${round} ${kind}] ${cell.name}: ${fmt(r.throughput)} infer/s, p99 ${fmt(r.p99Us)} µs, CPU/request stubs ${fmt(r.stubCpuUs)} µs, server ${fmt(r.serverCpuUs)} µs${r.unstable ? ' †' : ''}\n`,
          );
        }
      } finally {
        await server.stop();
      }
    }
  }
  const med = (runs, key) => median(runs.map((r) => r[key]));
  const rows = cells.map((cell) => {
    const { python, c } = results[cell.name];
    const [sp, sc] = [med(python, 'stubCpuUs'), med(c, 'stubCpuUs')];
    const mark = (runs) => (runs.some((r) => r.unstable) ? ' †' : '');
    return [
      cell.name,
      `${fmt(sp)}${mark(python)}`,
      `${fmt(sc)}${mark(c)}`,
      (sc / sp).toFixed(2),
      `${fmt(med(python, 'serverCpuUs'))} / ${fmt(med(c, 'serverCpuUs'))}`,
      `${fmt(med(python, 'throughput'))} / ${fmt(med(c, 'throughput'))}`,
    ];
  });
  const report = [
    `command: \`${commandLine('bench/stub-objects.mjs')}\``,
    `date: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, tritium commit ${gitCommit()}; ${opts.rounds} round(s), medians; load average at the end ${loadAverage()}`,
    '',
    table(['cell', 'stub µs/req, Python objects', 'stub µs/req, C objects', 'C / Python', 'server µs/req (Py / C)', 'infer/s (Py / C)'], rows),
    '',
    '† a run whose perf_analyzer windows differed by more than --stability %.',
  ].join('\n');
  publishReport(report, OUT);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
