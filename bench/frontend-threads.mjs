#!/usr/bin/env node
/**
 * Frontend threads (`--http-thread-count`, or `--grpc-thread-count` with --protocol grpc) against the main loop alone, on the same
 * repository and client: for each thread count, servers alternating, perf_analyzer over HTTP on
 * add_sub and identity_fp32 at the chosen concurrencies, and per request
 *
 *   - main-thread CPU µs: what the one event loop that schedules every request spends; its
 *     inverse is the request rate no number of cores can pass (the many-core ceiling);
 *   - server-process CPU µs (all threads) and stub CPU µs;
 *   - throughput and p99 latency;
 *   - the server process's VmRSS at the end of the cell (each thread's heap grows with its load).
 *
 * The difference in server-process CPU between N threads and 1 is the hand-off's cost (two
 * messages and a copy of the tensors each way); the drop in main-thread CPU is what the threads
 * take off the scheduling loop.
 *
 * With --before <checkout> (dist/ built there), each thread count also runs on that checkout's
 * server, the two alternating (order flipped every round), to measure a change of the hand-off.
 *
 *   npm run build && node bench/frontend-threads.mjs [--threads 1,2,4] [--concurrency 1,4,16]
 *        [--models add_sub,identity_fp32] [--window-ms 3000] [--rounds 2] [--protocol http|grpc]
 *        [--before <checkout>]
 */
import os from 'node:os';
import path from 'node:path';
import { arg } from './grpc-common.mjs';
import { checkFlags, list, positive, showHelp } from './lib/options.mjs';
import { measuredWindows, requirePerfAnalyzer, warmUpWindow } from './lib/perf-analyzer.mjs';
import { cpuPerRequest, rssBytes, mainThreadCpuSeconds, treeCpu } from './lib/proc-stats.mjs';
import { commandLine, fmt, gitCommit, loadAverage, median, table } from './lib/report.mjs';
import { ROOT, startTritium, successCount } from './lib/server.mjs';

const USAGE =
  'node bench/frontend-threads.mjs [--threads 1,2,4] [--concurrency 1,4,16] [--models add_sub,identity_fp32] [--window-ms 3000] [--rounds 2] [--protocol http|grpc] [--before <checkout>]';

async function main() {
  checkFlags(process.argv.slice(2), ['threads', 'concurrency', 'models', 'window-ms', 'rounds', 'protocol', 'before', 'help'], ['help'], USAGE);
  if (showHelp({ help: process.argv.includes('--help') }, USAGE)) return;
  const threads = list(arg('threads', '1,2')).map(Number);
  const concurrencies = list(arg('concurrency', '1,4,16')).map(Number);
  const models = list(arg('models', 'add_sub,identity_fp32'));
  const windowMs = positive('window-ms', arg('window-ms', '3000'));
  const rounds = positive('rounds', arg('rounds', '2'));
  const before = arg('before', '');
  const protocol = arg('protocol', 'http');
  if (protocol !== 'http' && protocol !== 'grpc') throw new Error(`--protocol: http or grpc, not ${protocol}`);
  const builds = [{ label: 'this', root: ROOT }, ...(before ? [{ label: 'before', root: path.resolve(before) }] : [])];
  const pa = requirePerfAnalyzer();
  const repo = path.join(ROOT, 'bench', 'models', 'vs-triton');
  const out = path.join(ROOT, 'bench', '.out', 'frontend-threads');
  console.log(`command: ${commandLine('bench/frontend-threads.mjs')}`);
  console.log(
    `machine: ${os.cpus().length} cores (${os.cpus()[0]?.model}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; commit ${gitCommit()}; load ${loadAverage()}`,
  );

  const samples = new Map(); // `${n} ${model} ${c}` → [{...}]
  for (let round = 0; round < rounds; round++) {
    for (const n of threads) {
      for (const build of round % 2 === 0 ? builds : [...builds].reverse()) {
        const server = await startTritium({
          root: build.root,
          repos: repo,
          args: protocol === 'http' ? [`--http-thread-count=${n}`, '--allow-grpc=false'] : [`--grpc-thread-count=${n}`],
        });
        // Statistics are read over HTTP, which stays on one loop in a gRPC run.
        const port = protocol === 'http' ? server.httpPort : server.grpcPort;
        try {
          for (const model of models) {
            for (const c of concurrencies) {
              const cell = { model, protocol, concurrency: c };
              const dir = path.join(out, `${protocol}-${build.label}-t${n}-${model}-c${c}-r${round}`);
              await warmUpWindow(pa, { cell, port, dir, windowMs: 1000, stability: 100 });
              const before = { ok: await successCount(server, model), main: mainThreadCpuSeconds(server.proc.pid), tree: treeCpu(server.proc.pid) };
              const r = await measuredWindows(pa, {
                cell,
                port,
                dir,
                windowMs,
                stability: 10,
                columns: { throughput: 'Inferences/Second', p99: 'p99 latency' },
              });
              const after = { ok: await successCount(server, model), main: mainThreadCpuSeconds(server.proc.pid), tree: treeCpu(server.proc.pid) };
              const reqs = after.ok - before.ok;
              const { serverCpuUs, stubCpuUs } = cpuPerRequest(before.tree, after.tree, reqs);
              const s = {
                mainUs: ((after.main - before.main) / reqs) * 1e6,
                serverUs: serverCpuUs,
                stubUs: stubCpuUs,
                throughput: r.throughput,
                p99: r.p99,
                // What the threads' heaps grew to under this load shows here (the server's VmRSS).
                rssMiB: rssBytes(server.proc.pid) / 2 ** 20,
              };
              const key = `${build.label} ${n} ${model} ${c}`;
              if (!samples.has(key)) samples.set(key, []);
              samples.get(key).push(s);
              console.log(
                `round ${round + 1}, ${builds.length > 1 ? `${build.label}, ` : ''}${n} thread(s), ${model} c=${c}: main ${fmt(s.mainUs)} µs, server ${fmt(s.serverUs)} µs, stub ${fmt(s.stubUs)} µs, ${fmt(s.throughput)} infer/s, p99 ${fmt(s.p99)} µs, RSS ${fmt(s.rssMiB)} MiB`,
              );
            }
          }
        } finally {
          await server.stop();
        }
      }
    }
  }

  const rows = [];
  for (const model of models) {
    for (const c of concurrencies) {
      for (const n of threads) {
        for (const build of builds) {
          const ss = samples.get(`${build.label} ${n} ${model} ${c}`);
          const m = (k) => median(ss.map((s) => s[k]));
          rows.push([
            `${model} c=${c}`,
            ...(before ? [build.label] : []),
            String(n),
            fmt(m('mainUs')),
            fmt(m('serverUs')),
            fmt(m('stubUs')),
            fmt(m('throughput')),
            fmt(m('p99')),
            fmt(1e6 / m('mainUs')),
            fmt(m('rssMiB')),
          ]);
        }
      }
    }
  }
  console.log(`\nmedians of ${rounds} round(s), ${protocol === 'http' ? 'HTTP' : 'gRPC'}, perf_analyzer, ${windowMs} ms windows`);
  console.log(
    table(
      [
        'cell',
        ...(before ? ['build'] : []),
        'threads',
        'main-thread µs/req',
        'server µs/req',
        'stub µs/req',
        'infer/s',
        'p99 µs',
        'main-loop ceiling req/s',
        'server RSS MiB',
      ],
      rows,
    ),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
