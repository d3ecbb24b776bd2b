#!/usr/bin/env node
/**
 * The tuning table of Triton's optimization guide, on tritium: the same Python model
 * (fixtures/models/batch_cost: execute() = 2 ms + 0.1 ms × rows, max_batch_size 16) served four ways —
 *
 *   no batching, 1 instance     (no dynamic_batching block)
 *   dynamic_batching {}, 1 instance
 *   no batching, 2 instances    (instance_group count 2)
 *   dynamic_batching {}, 2 instances
 *
 * — measured with perf_analyzer over HTTP, batch-1 requests, at concurrency 1, 2, 4, 8, 16:
 * throughput and p95 latency, plus the average executed batch size from the statistics
 * extension. Each cell also shows the throughput ratio to "no batching, 1 instance".
 *
 *   npm run build && node bench/tuning.mjs [--duration-ms 3000] [--concurrency 1,2,4,8,16]
 *        [--protocol http|grpc] [--fixed-ms 2] [--per-row-ms 0.1]
 */
import fs from 'node:fs';
import path from 'node:path';
import { arg, load, machine, runPerfAnalyzer, writeCostModel } from './batching.mjs';
import { requirePerfAnalyzer } from './lib/perf-analyzer.mjs';
import { modelStats, ROOT, startTritium } from './lib/server.mjs';

async function main() {
  const durationMs = Number(arg('duration-ms', '3000'));
  const concurrencies = arg('concurrency', '1,2,4,8,16').split(',').map(Number);
  const protocol = arg('protocol', 'http');
  const fixedMs = Number(arg('fixed-ms', '2'));
  const perRowMs = Number(arg('per-row-ms', '0.1'));

  const out = path.join(ROOT, 'bench', '.out', 'tuning');
  fs.rmSync(out, { recursive: true, force: true });
  const repo = path.join(out, 'repo');
  fs.mkdirSync(repo, { recursive: true });
  const variants = [
    { name: 'tune_plain', label: 'no batching, 1 instance', dynamicBatching: undefined, instances: 1 },
    { name: 'tune_dyn', label: 'dynamic_batching {}, 1 instance', dynamicBatching: '', instances: 1 },
    { name: 'tune_inst2', label: 'no batching, 2 instances', dynamicBatching: undefined, instances: 2 },
    { name: 'tune_dyn_inst2', label: 'dynamic_batching {}, 2 instances', dynamicBatching: '', instances: 2 },
  ];
  for (const v of variants) writeCostModel(repo, v.name, { fixedMs, perRowMs, dynamicBatching: v.dynamicBatching, instances: v.instances });

  const pa = requirePerfAnalyzer();
  console.log('setup:');
  console.log(`  machine: ${machine()}; load average at start ${load()}`);
  console.log(`  model: fixtures/models/batch_cost, execute() = ${fixedMs} ms + ${perRowMs} ms x rows (slept), max_batch_size 16`);
  console.log(`  client: perf_analyzer (${path.relative(ROOT, pa)}), ${protocol}, batch 1, ${durationMs} ms windows`);
  for (const v of variants) console.log(`  ${v.name}: ${v.label}`);

  const server = await startTritium({ repos: repo });
  const results = [];
  try {
    for (const v of variants) {
      for (const c of concurrencies) {
        const before = await modelStats(server, v.name);
        const r = await runPerfAnalyzer(pa, { server, protocol, model: v.name, concurrency: c, durationMs, csv: path.join(out, `${v.name}-c${c}.csv`) });
        const after = await modelStats(server, v.name);
        const avgBatch = (after.inferences - before.inferences) / Math.max(1, after.executions - before.executions);
        results.push({ ...v, concurrency: c, ...r, output: undefined, avgBatch, load: load() });
        process.stdout.write(
          `  ${v.name} c=${c}: ${r.throughput.toFixed(0)} infer/s, p95 ${r.p95us} µs, avg batch ${avgBatch.toFixed(2)}, load ${load()}${r.note ? ` (${r.note})` : ''}\n`,
        );
      }
    }
  } finally {
    await server.stop();
  }

  const cell = (v, c) => results.find((r) => r.name === v.name && r.concurrency === c);
  console.log('\nthroughput infer/s (ratio to no batching, 1 instance) | p95 latency ms | avg batch');
  console.log(`${'concurrency'.padEnd(34)}${concurrencies.map((c) => String(c).padStart(26)).join('')}`);
  for (const v of variants) {
    const row = concurrencies.map((c) => {
      const r = cell(v, c);
      const base = cell(variants[0], c);
      return `${r.throughput.toFixed(0)} (${(r.throughput / base.throughput).toFixed(2)}x) ${(r.p95us / 1000).toFixed(1)} ${r.avgBatch.toFixed(1)}`.padStart(
        26,
      );
    });
    console.log(`${v.label.padEnd(34)}${row.join('')}`);
  }
  console.log('\ncommand (per variant and concurrency):');
  console.log(`  ${results[0].command}`);
  fs.writeFileSync(path.join(out, 'results.json'), JSON.stringify({ machine: machine(), durationMs, protocol, results }, null, 2));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
