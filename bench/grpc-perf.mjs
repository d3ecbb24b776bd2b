#!/usr/bin/env node
/**
 * add_sub (python_models/add_sub, the classic Python-backend example: FP32 [4] + [4]) over gRPC
 * and over HTTP, measured with the real perf_analyzer at concurrency 1, 4 and 16 (issue 4).
 * One server serves both protocols; each cell is one perf_analyzer run (its stable window).
 * Prints the setup, then a table of throughput, p50/p99 latency and perf_analyzer's server-side
 * average request latency per protocol and concurrency.
 *
 *   npm run build && node bench/grpc-perf.mjs [--duration-ms 3000] [--concurrency 1,4,16]
 *        [--protocols grpc,http] [--model add_sub] [--stability 25] [--trials 10]
 *
 * A cell whose windows never agree within --stability percent is reported as "unstable" (the
 * run goes on) rather than aborting the whole table.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ROOT, PYTHON, arg, machine, startTritium } from './grpc-common.mjs';

function findPerfAnalyzer() {
  for (const c of [process.env.PERF_ANALYZER, path.join(ROOT, '.venv', 'bin', 'perf_analyzer'), 'perf_analyzer'].filter(Boolean)) {
    const r = spawnSync(c, ['--help'], { encoding: 'utf8', timeout: 10_000 });
    if (!r.error && /concurrency-range/.test(`${r.stdout}${r.stderr}`)) return c;
  }
  throw new Error('no perf_analyzer binary found (set PERF_ANALYZER or install tritonclient[all] in .venv)');
}

function perfAnalyzer(bin, args) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`perf_analyzer exited ${code}:\n${out}`))));
  });
}

async function main() {
  const durationMs = Number(arg('duration-ms', '3000'));
  const concurrencies = arg('concurrency', '1,4,16').split(',').map(Number);
  const protocols = arg('protocols', 'grpc,http').split(',');
  const model = arg('model', 'add_sub');
  const stability = arg('stability', '25');
  const trials = arg('trials', '10');
  const pa = findPerfAnalyzer();

  const out = path.join(ROOT, 'bench', '.out', 'grpc-perf');
  fs.rmSync(out, { recursive: true, force: true });
  const repo = path.join(out, 'repo');
  fs.mkdirSync(repo, { recursive: true });
  fs.cpSync(path.join(ROOT, 'python_models', model), path.join(repo, model), { recursive: true });

  console.log('setup:');
  console.log(`  machine: ${machine()}`);
  console.log(`  model: python_models/${model} (1 instance, no batching), Python ${PYTHON}`);
  console.log(`  client: perf_analyzer (${path.relative(ROOT, pa)}), sync, batch 1, ${durationMs} ms windows, -s ${stability} -r ${trials}`);
  console.log(`  load average before the run: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  const server = await startTritium(repo);
  const rows = [];
  try {
    for (const protocol of protocols) {
      for (const c of concurrencies) {
        const url = `127.0.0.1:${protocol === 'grpc' ? server.grpcPort : server.httpPort}`;
        const csv = path.join(out, `${protocol}-c${c}.csv`);
        const args = ['-m', model, '-u', url, '-i', protocol, '--concurrency-range', String(c), '-p', String(durationMs), '-s', stability, '-r', trials, '-f', csv];
        let text;
        try {
          text = await perfAnalyzer(pa, args);
        } catch (e) {
          if (!/Failed to obtain stable measurement/.test(String(e))) throw e;
          rows.push({ protocol, c, unstable: true });
          console.log(`  ${protocol} c=${c}: unstable within ${trials} windows`);
          continue;
        }
        fs.writeFileSync(path.join(out, `${protocol}-c${c}.txt`), text);
        const [header, row] = fs.readFileSync(csv, 'utf8').trim().split('\n');
        const cols = Object.fromEntries(header.split(',').map((h, i) => [h, Number(row.split(',')[i])]));
        const serverUs = Number(/Avg request latency: (\d+) usec/.exec(text)?.[1] ?? NaN);
        rows.push({ protocol, c, thr: cols['Inferences/Second'], p50: cols['p50 latency'], p99: cols['p99 latency'], serverUs });
        console.log(`  ${protocol} c=${c}: ${cols['Inferences/Second'].toFixed(0)} infer/s, p50 ${cols['p50 latency']} µs, p99 ${cols['p99 latency']} µs`);
      }
    }
  } finally {
    await server.stop();
  }
  console.log('\n| protocol | concurrency | throughput (infer/s) | p50 latency (µs) | p99 latency (µs) | server avg request latency (µs) |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    if (r.unstable) console.log(`| ${r.protocol} | ${r.c} | unstable | | | |`);
    else console.log(`| ${r.protocol} | ${r.c} | ${r.thr.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.serverUs} |`);
  }
  console.log(`\nperf_analyzer outputs and CSVs: ${path.relative(ROOT, out)}/`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
