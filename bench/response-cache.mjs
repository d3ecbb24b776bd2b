#!/usr/bin/env node
/**
 * A response-cache hit against a computed request of the cheapest Python model: test/models/
 * cache_probe (OUTPUT = 2 × INPUT, 4 floats) with the cache (`cached`, every request after the
 * first a hit: perf_analyzer sends the same input) and without it (`computed`, the same model.py
 * with response_cache off). One server with `--cache-config local,size=1048576`, perf_analyzer
 * over HTTP, the two models in turn for --rounds rounds; CPU per request of the server process
 * and of all its stubs from /proc. Target: a hit ≤ 0.5 × a computed request in total CPU.
 *
 *   npm run build && node bench/response-cache.mjs [--rounds 3] [--duration-ms 3000] [--concurrency 4]
 *
 * Figures go to stdout (Markdown) and bench/.out/response-cache/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { arg, load, machine } from './batching.mjs';
import { alternate, medianOf } from './lib/alternate.mjs';
import { requirePerfAnalyzer } from './lib/perf-analyzer.mjs';
import { cpuPerRequest, treeCpu } from './lib/proc-stats.mjs';
import { ROOT, startTritium } from './lib/server.mjs';

const OUT = path.join(ROOT, 'bench', '.out', 'response-cache');
const MODEL = path.join(ROOT, 'test', 'models', 'cache_probe');

async function main() {
  const rounds = Number(arg('rounds', '3'));
  const durationMs = Number(arg('duration-ms', '3000'));
  const concurrency = Number(arg('concurrency', '4'));
  fs.rmSync(OUT, { recursive: true, force: true });
  const repo = path.join(OUT, 'repo');
  fs.cpSync(MODEL, path.join(repo, 'cached'), { recursive: true });
  fs.cpSync(MODEL, path.join(repo, 'computed'), { recursive: true });
  const cfg = path.join(repo, 'computed', 'config.pbtxt');
  fs.writeFileSync(cfg, fs.readFileSync(cfg, 'utf8').replace('response_cache { enable: true }', ''));
  const data = path.join(OUT, 'data.json');
  fs.writeFileSync(data, JSON.stringify({ data: [{ INPUT: [1.5, 2.5, 3.5, 4.5] }] }));
  const pa = requirePerfAnalyzer();
  const server = await startTritium({ repos: repo, args: ['--cache-config=local,size=1048576'] });
  const pid = server.proc.pid;
  let runs;
  try {
    runs = await alternate(pa, server, ['cached', 'computed'], {
      rounds,
      durationMs,
      concurrency,
      extra: ['--input-data', data],
      out: OUT,
      snapshot: () => treeCpu(pid),
    });
  } finally {
    await server.stop();
  }
  for (const r of Object.values(runs).flat()) {
    Object.assign(r, cpuPerRequest(r.before, r.after, r.requests));
    r.totalCpuUs = r.serverCpuUs + r.stubCpuUs;
  }
  console.log(`# Response cache hit vs computed request (${new Date().toISOString().slice(0, 10)})\n`);
  console.log(`machine: ${machine()}; load average at end ${load()}; ${rounds} rounds, medians\n`);
  console.log('| model | infer/s | p99 µs | server CPU µs/req | stub CPU µs/req | total CPU µs/req |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const model of ['cached', 'computed']) {
    const r = runs[model];
    console.log(
      `| ${model} | ${medianOf(r, 'throughput').toFixed(0)} | ${medianOf(r, 'p99us').toFixed(0)} | ${medianOf(r, 'serverCpuUs').toFixed(1)} | ${medianOf(r, 'stubCpuUs').toFixed(1)} | ${medianOf(r, 'totalCpuUs').toFixed(1)} |`,
    );
  }
  console.log(
    `\nhit / computed, total CPU per request: ${(medianOf(runs.cached, 'totalCpuUs') / medianOf(runs.computed, 'totalCpuUs')).toFixed(2)} (target ≤ 0.50)`,
  );
  console.log(`\ncommand: ${runs.cached[0].command}`);
  fs.writeFileSync(path.join(OUT, 'results.json'), JSON.stringify({ machine: machine(), runs }, null, 2));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
