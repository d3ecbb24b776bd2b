/**
 * Models of one running server measured in turn with perf_analyzer over HTTP: a 1 s warm-up of
 * each, then `rounds` rounds of one run per model, so that every model sees the machine in the
 * same states. Each run keeps perf_analyzer's throughput and p99, the successful requests the
 * server counted, and the `snapshot(model)` taken before and after it (CPU from /proc).
 */
import path from 'node:path';
import { runPerfAnalyzer } from '../batching.mjs';
import { median } from './report.mjs';
import { successCount } from './server.mjs';

export async function alternate(pa, server, models, { rounds, durationMs, concurrency, extra = [], out, snapshot }) {
  const runs = Object.fromEntries(models.map((m) => [m, []]));
  for (let round = 0; round < rounds; round++) {
    for (const model of models) {
      const common = { server, protocol: 'http', model, concurrency, extra };
      if (round === 0) await runPerfAnalyzer(pa, { ...common, durationMs: 1000, csv: path.join(out, `${model}-warm.csv`) });
      const ok0 = await successCount(server, model);
      const before = snapshot(model);
      const r = await runPerfAnalyzer(pa, { ...common, durationMs, csv: path.join(out, `${model}-${round}.csv`) });
      const after = snapshot(model);
      const requests = (await successCount(server, model)) - ok0;
      runs[model].push({ throughput: r.throughput, p99us: r.p99us, requests, before, after, command: r.command });
    }
  }
  return runs;
}

/** The median of `key` over a model's runs. */
export function medianOf(runs, key) {
  return median(runs.map((r) => r[key]));
}
