#!/usr/bin/env node
/**
 * The sequence batcher, two ways.
 *
 * 1. Against its ideal and beside the real Triton 2.51: fixtures/models/batch_cost as a
 *    `direct` sequence model (execute() lasts FIXED + PER_ROW × rows, slept; max_batch_size =
 *    slots = 32, one CPU instance), driven by perf_analyzer with 32 concurrent sequences of 20
 *    requests each (`--sequence-length 20`, batch 1). With every slot ready at each execution
 *    the instance serves at most 32 / (1 ms + 0.05 ms × 32) infer/s; the figures of merit are
 *    throughput / ideal (target ≥ 0.90) and throughput / Triton's (target ≥ 1). The two servers
 *    run one after the other on the same repository, with the same client; server and stub CPU
 *    per request come from /proc.
 *
 * 2. Scheduling cost per request, in process: the compiled SequenceBatcher and DynamicBatcher
 *    (dist/) in front of an instance that answers every batch at once, 32 concurrent clients
 *    (32 sequences of 20 requests for the sequence batcher, the same requests without ids for
 *    the dynamic batcher), CPU of this process (utime + stime) per request. Target: the
 *    sequence batcher ≤ the dynamic batcher's + 20 %. Five alternating rounds; medians.
 *
 *   npm run build && node bench/sequence.mjs [--duration-ms 4000] [--servers tritium,triton]
 *        [--requests 1000000] [--only e2e|scheduler]
 *
 * Figures go to stdout (Markdown) and bench/.out/sequence/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { arg, load, machine, runPerfAnalyzer, writeCostModel } from './batching.mjs';
import { requirePerfAnalyzer } from './lib/perf-analyzer.mjs';
import { cpuPerRequest, treeCpu } from './lib/proc-stats.mjs';
import { modelStats, ROOT, startTritium, successCount } from './lib/server.mjs';
import { ensureTriton, startTriton, stopServer } from './lib/triton.mjs';

const OUT = path.join(ROOT, 'bench', '.out', 'sequence');
const SLOTS = 32;
const STEPS = 20;
const FIXED_MS = 1;
const PER_ROW_MS = 0.05;

async function endToEnd(durationMs, servers) {
  const repo = path.join(OUT, 'repo');
  fs.mkdirSync(repo, { recursive: true });
  writeCostModel(repo, 'seq_cost', { fixedMs: FIXED_MS, perRowMs: PER_ROW_MS, maxBatchSize: SLOTS });
  // The cost model with a direct sequence batcher instead of a dynamic one.
  const config = path.join(repo, 'seq_cost', 'config.pbtxt');
  fs.writeFileSync(config, fs.readFileSync(config, 'utf8').replace('instance_group', 'sequence_batching { direct { } }\ninstance_group'));
  const ideal = SLOTS / ((FIXED_MS + PER_ROW_MS * SLOTS) / 1000);
  const pa = requirePerfAnalyzer();
  const rows = [];
  for (const which of servers) {
    const server = which === 'tritium' ? await startTritium({ repos: repo }) : await startTriton(ensureTriton(), { repo });
    const pid = server.proc.pid;
    try {
      // Warm up, then measure one run (perf_analyzer's own stable windows).
      const common = { server, protocol: 'http', model: 'seq_cost', concurrency: SLOTS, extra: ['--sequence-length', String(STEPS)] };
      await runPerfAnalyzer(pa, { ...common, durationMs: 1000, csv: path.join(OUT, `${which}-warm.csv`) });
      const okBefore = await successCount(server, 'seq_cost');
      const statsBefore = await modelStats(server, 'seq_cost');
      const cpuBefore = treeCpu(pid);
      const r = await runPerfAnalyzer(pa, { ...common, durationMs, csv: path.join(OUT, `${which}.csv`) });
      const cpuAfter = treeCpu(pid);
      const statsAfter = await modelStats(server, 'seq_cost');
      const requests = (await successCount(server, 'seq_cost')) - okBefore;
      fs.writeFileSync(path.join(OUT, `${which}.txt`), r.output);
      rows.push({
        server: which,
        throughput: r.throughput,
        ratio: r.throughput / ideal,
        p50us: r.p50us,
        p99us: r.p99us,
        rowsPerExecution: (statsAfter.inferences - statsBefore.inferences) / Math.max(1, statsAfter.executions - statsBefore.executions),
        ...cpuPerRequest(cpuBefore, cpuAfter, requests),
        command: r.command,
        note: r.note,
        load: load(),
      });
    } finally {
      if (which === 'tritium') await server.stop();
      else await stopServer(server);
    }
  }
  return { ideal, rows };
}

/** An instance that answers every request of a batch at once (a microtask later). */
function instantInstance() {
  return {
    name: 'instant_0',
    isReady: () => true,
    execute(batch) {
      const t = process.hrtime.bigint();
      for (const pr of batch) pr.respond({ modelName: 'm', modelVersion: '1', id: '', outputs: [], final: true });
      return Promise.resolve({ startNs: t, inputEndNs: t, inferEndNs: t, endNs: t });
    },
  };
}

async function schedulerCost(total) {
  const dist = (p) => pathToFileURL(path.join(ROOT, 'dist', p)).href;
  const { SequenceBatcher } = await import(dist('core/scheduling/sequence-batcher.js'));
  const { DynamicBatcher, DEFAULT_QUEUE_POLICY } = await import(dist('core/scheduling/dynamic-batcher.js'));
  const { PendingRequestImpl } = await import(dist('core/request/pending.js'));
  const inputs = [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data: Buffer.alloc(64) }];
  const noop = () => {};

  const run = async (make, params) => {
    const scheduler = make();
    let done = 0;
    let resolveAll;
    const all = new Promise((r) => (resolveAll = r));
    // 32 clients, each sending its next request when the previous one is answered.
    const client = (c, step) => {
      if (done + SLOTS > total + SLOTS - 1 && step > 0 && done >= total) return;
      const request = { modelName: 'm', modelVersion: '', id: '', parameters: params(c, step), inputs };
      const onComplete = () => {
        done++;
        if (done >= total) resolveAll();
        else client(c, step + 1);
      };
      scheduler.enqueue(new PendingRequestImpl(request, 1, '', 0, 0, '1', noop, onComplete));
    };
    const t0 = process.cpuUsage();
    const w0 = performance.now();
    for (let c = 0; c < SLOTS; c++) client(c, 0);
    await all;
    const cpu = process.cpuUsage(t0);
    const wallMs = performance.now() - w0;
    scheduler.stop();
    return { cpuUsPerRequest: (cpu.user + cpu.system) / done, requestsPerSec: done / (wallMs / 1000), requests: done };
  };

  const sequence = () =>
    new SequenceBatcher(
      'm',
      [instantInstance()],
      {
        maxBatchSize: SLOTS,
        idleUs: 1_000_000,
        iterative: false,
        controls: [],
        states: [],
        strategy: { kind: 'direct', maxQueueDelayUs: 0, minimumSlotUtilization: 0 },
      },
      noop,
    );
  const dynamic = () =>
    new DynamicBatcher(
      [instantInstance()],
      {
        maxBatchSize: SLOTS,
        preferredBatchSizes: [SLOTS],
        maxQueueDelayUs: 0,
        preserveOrdering: false,
        priorityLevels: 0,
        defaultPriorityLevel: 0,
        defaultQueuePolicy: DEFAULT_QUEUE_POLICY,
        priorityQueuePolicy: new Map(),
      },
      noop,
    );
  // Client c's step s: sequences of STEPS requests, alternating between two ids per client.
  // The parameter objects are built before the measurement: parsing them is the frontend's
  // cost, not the scheduler's (the dynamic batcher's requests carry none).
  const built = Array.from({ length: SLOTS }, (_, c) =>
    Array.from({ length: 2 * STEPS }, (_x, i) => {
      const k = i % STEPS;
      const p = { sequence_id: BigInt(c + 1 + SLOTS * Math.floor(i / STEPS)) };
      if (k === 0) p.sequence_start = true;
      if (k === STEPS - 1) p.sequence_end = true;
      return p;
    }),
  );
  const seqParams = (c, step) => built[c][step % (2 * STEPS)];
  const none = {};
  // Alternate, five rounds each, and keep the median run of each (JIT warm-up, GC timing and a
  // busy machine move single runs by ±20 %).
  const runs = { dynamic: [], sequence: [] };
  for (let round = 0; round < 5; round++) {
    runs.dynamic.push(await run(dynamic, () => none));
    runs.sequence.push(await run(sequence, seqParams));
  }
  const median = (list) => list.slice().sort((a, b) => a.cpuUsPerRequest - b.cpuUsPerRequest)[Math.floor(list.length / 2)];
  const out = { dynamic: median(runs.dynamic), sequence: median(runs.sequence) };
  return out;
}

async function main() {
  const durationMs = Number(arg('duration-ms', '4000'));
  const servers = arg('servers', 'tritium,triton').split(',');
  const total = Number(arg('requests', '1000000'));
  const only = arg('only', '');
  fs.rmSync(OUT, { recursive: true, force: true });
  fs.mkdirSync(OUT, { recursive: true });
  const date = new Date().toISOString().slice(0, 10);
  console.log(`# Sequence batcher (${date})\n\nmachine: ${machine()}; load average at start ${load()}\n`);
  const results = {};
  if (only === '' || only === 'e2e') {
    const { ideal, rows } = await endToEnd(durationMs, servers);
    results.e2e = { ideal, rows };
    console.log(`## 32 sequences of ${STEPS} steps, direct strategy, ${SLOTS} slots, execute() = ${FIXED_MS} ms + ${PER_ROW_MS} ms × rows\n`);
    console.log(`ideal: ${ideal.toFixed(0)} infer/s\n`);
    console.log('| server | infer/s | / ideal | rows per execution | p50 µs | p99 µs | server CPU µs/req | stub CPU µs/req | load |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of rows) {
      console.log(
        `| ${r.server} | ${r.throughput.toFixed(0)} | ${r.ratio.toFixed(3)} | ${r.rowsPerExecution.toFixed(1)} | ${r.p50us.toFixed(0)} | ${r.p99us.toFixed(0)} | ${r.serverCpuUs.toFixed(0)} | ${r.stubCpuUs.toFixed(0)} | ${r.load}${r.note ? ` (${r.note})` : ''} |`,
      );
    }
    const [a, b] = rows;
    if (a && b) console.log(`\nthroughput ${a.server}/${b.server}: ${(a.throughput / b.throughput).toFixed(2)}`);
    console.log(`\ncommand: ${rows[0]?.command}\n`);
  }
  if (only === '' || only === 'scheduler') {
    const s = await schedulerCost(total);
    results.scheduler = s;
    console.log(`## Scheduling cost in process (${total} requests, ${SLOTS} concurrent clients, an instance that answers at once)\n`);
    console.log('| scheduler | CPU µs per request | requests/s |');
    console.log('|---|---:|---:|');
    for (const [name, r] of Object.entries(s)) console.log(`| ${name} | ${r.cpuUsPerRequest.toFixed(2)} | ${r.requestsPerSec.toFixed(0)} |`);
    console.log(`\nsequence / dynamic: ${(s.sequence.cpuUsPerRequest / s.dynamic.cpuUsPerRequest).toFixed(2)} (target ≤ 1.20)`);
  }
  fs.writeFileSync(
    path.join(OUT, 'results.json'),
    JSON.stringify({ machine: machine(), date, results }, (_k, v) => (typeof v === 'bigint' ? Number(v) : v), 2),
  );
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
