#!/usr/bin/env node
/**
 * add_sub (python_models/add_sub, the classic Python-backend example: FP32 [4] + [4]) over gRPC
 * and over HTTP, measured with the real perf_analyzer at concurrency 1, 4 and 16.
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
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ROOT, PYTHON, arg, machine } from './grpc-common.mjs';
import { perfAnalyzer, readPerfCsv, requirePerfAnalyzer } from './lib/perf-analyzer.mjs';
import { startTritium } from './lib/server.mjs';

async function main() {
  const durationMs = Number(arg('duration-ms', '3000'));
  const concurrencies = arg('concurrency', '1,4,16').split(',').map(Number);
  const protocols = arg('protocols', 'grpc,http').split(',');
  const model = arg('model', 'add_sub');
  const stability = arg('stability', '25');
  const trials = arg('trials', '10');
  const pa = requirePerfAnalyzer();

  const out = path.join(ROOT, 'bench', '.out', 'grpc-perf');
  fs.rmSync(out, { recursive: true, force: true });
  const repo = path.join(out, 'repo');
  fs.mkdirSync(repo, { recursive: true });
  fs.cpSync(path.join(ROOT, 'python_models', model), path.join(repo, model), { recursive: true });

  console.log('setup:');
  console.log(`  machine: ${machine()}`);
  console.log(`  model: python_models/${model} (1 instance, no batching), Python ${PYTHON}`);
  console.log(`  client: perf_analyzer (${path.relative(ROOT, pa)}), sync, batch 1, ${durationMs} ms windows, -s ${stability} -r ${trials}`);
  console.log(
    `  load average before the run: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const server = await startTritium({ repos: repo });
  const rows = [];
  try {
    for (const protocol of protocols) {
      for (const c of concurrencies) {
        const url = `127.0.0.1:${protocol === 'grpc' ? server.grpcPort : server.httpPort}`;
        const csv = path.join(out, `${protocol}-c${c}.csv`);
        const args = [
          '-m',
          model,
          '-u',
          url,
          '-i',
          protocol,
          '--concurrency-range',
          String(c),
          '-p',
          String(durationMs),
          '-s',
          stability,
          '-r',
          trials,
          '-f',
          csv,
        ];
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
        const get = readPerfCsv(csv);
        const serverUs = Number(/Avg request latency: (\d+) usec/.exec(text)?.[1] ?? NaN);
        rows.push({ protocol, c, thr: get('Inferences/Second'), p50: get('p50 latency'), p99: get('p99 latency'), serverUs });
        console.log(`  ${protocol} c=${c}: ${get('Inferences/Second').toFixed(0)} infer/s, p50 ${get('p50 latency')} µs, p99 ${get('p99 latency')} µs`);
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
