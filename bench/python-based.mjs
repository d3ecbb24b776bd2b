#!/usr/bin/env node
/**
 * A Python-based backend against the same model.py as a plain Python model: nothing on the
 * request path may differ. test/backends/add_sub/model.py serves `pb_add` from a backend
 * directory (config: `backend: "add_sub"` only) and `plain_add` from the model's own version
 * directory (the same file, its `utils/` package and model.json beside it, with the
 * auto-completed config written out). One server, perf_analyzer over HTTP, the two models in
 * turn for --rounds rounds; server and stub CPU per request from /proc (the stubs of each model
 * told apart by their command line). Target: the ratios stay within noise of 1.
 *
 *   npm run build && node bench/python-based.mjs [--rounds 3] [--duration-ms 3000] [--concurrency 4]
 *
 * Figures go to stdout (Markdown) and bench/.out/python-based/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { arg, load, machine } from './batching.mjs';
import { alternate, medianOf } from './lib/alternate.mjs';
import { requirePerfAnalyzer } from './lib/perf-analyzer.mjs';
import { cmdline, cpuSeconds, descendants } from './lib/proc-stats.mjs';
import { ROOT, startTritium } from './lib/server.mjs';

const OUT = path.join(ROOT, 'bench', '.out', 'python-based');
const BACKEND = path.join(ROOT, 'test', 'backends', 'add_sub');
const CONFIG = `max_batch_size: 0
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }]
output [{ name: "OUTPUT" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "WHERE" data_type: TYPE_STRING dims: [ 1 ] }]
instance_group [{ kind: KIND_CPU count: 1 }]
`;

function layout() {
  fs.rmSync(OUT, { recursive: true, force: true });
  const backends = path.join(OUT, 'backends');
  fs.cpSync(BACKEND, path.join(backends, 'add_sub'), { recursive: true });
  const repo = path.join(OUT, 'repo');
  for (const name of ['pb_add', 'plain_add']) fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'pb_add', 'config.pbtxt'), `backend: "add_sub"\n${CONFIG}`);
  fs.writeFileSync(path.join(repo, 'plain_add', 'config.pbtxt'), `backend: "python"\n${CONFIG}`);
  fs.cpSync(BACKEND, path.join(repo, 'plain_add', '1'), { recursive: true });
  for (const name of ['pb_add', 'plain_add']) fs.writeFileSync(path.join(repo, name, '1', 'model.json'), '{"operation": "add"}');
  return { backends, repo };
}

/** CPU seconds of the stubs serving `model` (their command line names the model's directory). */
function stubCpu(serverPid, model) {
  return descendants(serverPid)
    .filter((pid) => cmdline(pid).some((a) => a.includes(`${path.sep}${model}${path.sep}`)))
    .reduce((sum, pid) => sum + cpuSeconds(pid), 0);
}

async function main() {
  const rounds = Number(arg('rounds', '3'));
  const durationMs = Number(arg('duration-ms', '3000'));
  const concurrency = Number(arg('concurrency', '4'));
  const { backends, repo } = layout();
  const pa = requirePerfAnalyzer();
  const server = await startTritium({ repos: repo, args: [`--backend-directory=${backends}`] });
  const pid = server.proc.pid;
  const data = path.join(OUT, 'data.json');
  fs.writeFileSync(data, JSON.stringify({ data: [{ INPUT0: [1.5, 2.5, 3.5, 4.5], INPUT1: [0.5, 0.5, 0.5, 0.5] }] }));
  let runs;
  try {
    runs = await alternate(pa, server, ['pb_add', 'plain_add'], {
      rounds,
      durationMs,
      concurrency,
      extra: ['--input-data', data],
      out: OUT,
      snapshot: (model) => ({ server: cpuSeconds(pid), stubs: stubCpu(pid, model) }),
    });
  } finally {
    await server.stop();
  }
  for (const r of Object.values(runs).flat()) {
    r.serverCpuUs = ((r.after.server - r.before.server) / r.requests) * 1e6;
    r.stubCpuUs = ((r.after.stubs - r.before.stubs) / r.requests) * 1e6;
  }
  console.log(`# Python-based backend vs plain Python model (${new Date().toISOString().slice(0, 10)})\n`);
  console.log(`machine: ${machine()}; load average at end ${load()}; ${rounds} rounds, medians\n`);
  console.log('| model | infer/s | p99 µs | server CPU µs/req | stub CPU µs/req |');
  console.log('|---|---:|---:|---:|---:|');
  for (const model of ['pb_add', 'plain_add']) {
    const r = runs[model];
    console.log(
      `| ${model} | ${medianOf(r, 'throughput').toFixed(0)} | ${medianOf(r, 'p99us').toFixed(0)} | ${medianOf(r, 'serverCpuUs').toFixed(1)} | ${medianOf(r, 'stubCpuUs').toFixed(1)} |`,
    );
  }
  const ratio = (key) => (medianOf(runs.pb_add, key) / medianOf(runs.plain_add, key)).toFixed(2);
  console.log(`\npb_add / plain_add: throughput ${ratio('throughput')}, server CPU ${ratio('serverCpuUs')}, stub CPU ${ratio('stubCpuUs')}`);
  console.log(`\ncommand: ${runs.pb_add[0].command}`);
  fs.writeFileSync(path.join(OUT, 'results.json'), JSON.stringify({ machine: machine(), runs }, null, 2));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
