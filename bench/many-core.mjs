#!/usr/bin/env node
/**
 * The many-core check of the frontend threads: add_sub with several instances (default 8) at a
 * high concurrency (default 64), over HTTP and gRPC, on tritium with each frontend thread count
 * of --threads (HTTP and gRPC threads alike) and on the real Triton, servers alternating (order
 * flipped every round), each started once per round with both protocols measured on it.
 *
 * Per server and protocol: perf_analyzer's throughput and p99, and per request the CPU of the
 * server process, of its main thread (tritium's scheduling loop; Triton's main thread is idle)
 * and of its stubs, from /proc. Ratios: throughput against Triton's, and against tritium's with
 * the first thread count of --threads (the one-loop baseline); and the main-loop ceiling (the
 * inverse of the main thread's CPU per request) against the baseline's, which says how far the
 * main loop would let the threads go where the host has too few cores to show it by throughput.
 *
 * Meant for a host with ≥ 8 cores; on 2 cores the client, the stubs and the threads share two.
 * Triton comes from bench/.venv-triton (pip) or from TRITON_HOME (bench/lib/triton.mjs).
 *
 *   npm run build && node bench/many-core.mjs [--threads 1,2,4,8] [--instances 8]
 *        [--concurrency 64] [--rounds 2] [--window-ms 2000] [--warmup-ms 2000]
 *        [--servers tritium,triton] [--json FILE]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { arg } from './grpc-common.mjs';
import { checkFlags, list, positive, showHelp } from './lib/options.mjs';
import { measuredWindows, requirePerfAnalyzer, warmUpWindow } from './lib/perf-analyzer.mjs';
import { cpuPerRequest, mainThreadCpuSeconds, treeCpu } from './lib/proc-stats.mjs';
import { commandLine, fmt, gitCommit, loadAverage, median, table } from './lib/report.mjs';
import { PYTHON, ROOT, startTritium, successCount } from './lib/server.mjs';
import { ensureTriton, startTriton, stopServer } from './lib/triton.mjs';

const USAGE =
  'node bench/many-core.mjs [--threads 1,2,4,8] [--instances 8] [--concurrency 64] [--rounds 2] [--window-ms 2000] [--warmup-ms 2000] [--servers tritium,triton] [--json FILE]';
const MODEL = 'add_sub';
const PROTOCOLS = ['http', 'grpc'];

/** bench/models/vs-triton's add_sub with `count` CPU instances, in a repository of its own under `dir`. */
function repository(dir, count) {
  const src = path.join(ROOT, 'bench', 'models', 'vs-triton', MODEL);
  const dst = path.join(dir, MODEL);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dst, '1'), { recursive: true });
  fs.copyFileSync(path.join(src, '1', 'model.py'), path.join(dst, '1', 'model.py'));
  const config = fs.readFileSync(path.join(src, 'config.pbtxt'), 'utf8');
  const withCount = config.replace(/instance_group \[\{ kind: KIND_CPU \}\]/, `instance_group [{ kind: KIND_CPU, count: ${count} }]`);
  if (withCount === config) throw new Error(`${src}/config.pbtxt: no instance_group line to set the count in`);
  fs.writeFileSync(path.join(dst, 'config.pbtxt'), withCount);
  return dir;
}

async function main() {
  const known = ['threads', 'instances', 'concurrency', 'rounds', 'window-ms', 'warmup-ms', 'servers', 'json', 'help'];
  checkFlags(process.argv.slice(2), known, ['help'], USAGE);
  if (showHelp({ help: process.argv.includes('--help') }, USAGE)) return;
  const threads = list(arg('threads', '1,2,4,8')).map(Number);
  const instances = positive('instances', arg('instances', '8'));
  const concurrency = positive('concurrency', arg('concurrency', '64'));
  const rounds = positive('rounds', arg('rounds', '2'));
  const windowMs = positive('window-ms', arg('window-ms', '2000'));
  const warmupMs = positive('warmup-ms', arg('warmup-ms', '2000'));
  const servers = list(arg('servers', 'tritium,triton'));
  const jsonOut = arg('json', '');
  for (const s of servers) if (s !== 'tritium' && s !== 'triton') throw new Error(`--servers: tritium or triton, not ${s}`);
  for (const n of threads) if (!Number.isInteger(n) || n < 1) throw new Error(`--threads: positive integers, not ${n}`);

  const pa = requirePerfAnalyzer();
  const out = path.join(ROOT, 'bench', '.out', 'many-core');
  const repo = repository(path.join(out, 'repo'), instances);
  const triton = servers.includes('triton') ? ensureTriton() : undefined;
  const configs = [
    ...(servers.includes('triton') ? [{ label: 'Triton', kind: 'triton' }] : []),
    ...(servers.includes('tritium') ? threads.map((n) => ({ label: `tritium ${n} thread${n === 1 ? '' : 's'}`, kind: 'tritium', n })) : []),
  ];
  console.log(`command: ${commandLine('bench/many-core.mjs')}`);
  console.log(
    `machine: ${os.cpus().length} cores (${os.cpus()[0]?.model}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; node ${process.version}; stubs ${PYTHON}; commit ${process.env.TRITIUM_COMMIT ?? gitCommit()}; load ${loadAverage()}`,
  );
  console.log(`model ${MODEL} × ${instances} instances, concurrency ${concurrency}, ${rounds} round(s) of 3 × ${windowMs} ms windows per cell`);

  const samples = new Map(); // `${label} ${protocol}` → [{...}]
  for (let round = 0; round < rounds; round++) {
    for (const config of round % 2 === 0 ? configs : [...configs].reverse()) {
      const server =
        config.kind === 'triton'
          ? await startTriton(triton, { repo })
          : await startTritium({ repos: repo, args: [`--http-thread-count=${config.n}`, `--grpc-thread-count=${config.n}`] });
      try {
        for (const protocol of PROTOCOLS) {
          const cell = { model: MODEL, protocol, concurrency };
          const port = protocol === 'http' ? server.httpPort : server.grpcPort;
          const dir = path.join(out, `${config.label.replaceAll(' ', '-')}-${protocol}-r${round}`);
          await warmUpWindow(pa, { cell, port, dir, windowMs: warmupMs, stability: 100 });
          const pid = server.proc.pid;
          const before = { ok: await successCount(server, MODEL), main: mainThreadCpuSeconds(pid), tree: treeCpu(pid) };
          const r = await measuredWindows(pa, { cell, port, dir, windowMs, stability: 10, columns: { throughput: 'Inferences/Second', p99: 'p99 latency' } });
          const after = { ok: await successCount(server, MODEL), main: mainThreadCpuSeconds(pid), tree: treeCpu(pid) };
          const reqs = after.ok - before.ok;
          const { serverCpuUs, stubCpuUs } = cpuPerRequest(before.tree, after.tree, reqs);
          const s = {
            round,
            throughput: r.throughput,
            p99: r.p99,
            unstable: r.unstable,
            serverUs: serverCpuUs,
            mainUs: ((after.main - before.main) / reqs) * 1e6,
            stubUs: stubCpuUs,
          };
          const key = `${config.label} ${protocol}`;
          if (!samples.has(key)) samples.set(key, []);
          samples.get(key).push(s);
          console.log(
            `round ${round + 1}, ${config.label}, ${protocol}: ${fmt(s.throughput)} infer/s${s.unstable ? ' †' : ''}, p99 ${fmt(s.p99)} µs, server ${fmt(s.serverUs)} µs/req (main thread ${fmt(s.mainUs)}), stubs ${fmt(s.stubUs)} µs/req`,
          );
        }
      } finally {
        await stopServer(server);
      }
    }
  }

  const med = (label, protocol, k) => median((samples.get(`${label} ${protocol}`) ?? []).map((s) => s[k]));
  const base = configs.find((c) => c.kind === 'tritium');
  for (const protocol of PROTOCOLS) {
    const rows = configs.map((c) => {
      const tput = med(c.label, protocol, 'throughput');
      const vsTriton = triton && c.kind === 'tritium' ? fmt(tput / med('Triton', protocol, 'throughput'), 2) : '—';
      const vsOne = base && c.kind === 'tritium' ? fmt(tput / med(base.label, protocol, 'throughput'), 2) : '—';
      return [
        c.label,
        fmt(tput),
        vsTriton,
        vsOne,
        fmt(med(c.label, protocol, 'p99')),
        fmt(med(c.label, protocol, 'serverUs')),
        c.kind === 'tritium' ? fmt(med(c.label, protocol, 'mainUs')) : '—',
        // The base's main-thread CPU per request over this one's: how much higher the rate is
        // that no number of cores lets the main loop pass.
        base && c.kind === 'tritium' ? fmt(med(base.label, protocol, 'mainUs') / med(c.label, protocol, 'mainUs'), 2) : '—',
        fmt(med(c.label, protocol, 'stubUs')),
      ];
    });
    console.log(`\n${protocol === 'http' ? 'HTTP' : 'gRPC'}: medians of ${rounds} round(s)`);
    console.log(
      table(
        [
          'server',
          'infer/s',
          '× Triton',
          `× ${base?.label ?? 'tritium'}`,
          'p99 µs',
          'server CPU µs/req',
          'main thread µs/req',
          `main-loop ceiling × ${base?.label ?? 'tritium'}`,
          'stub CPU µs/req',
        ],
        rows,
      ),
    );
  }
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ machine: os.cpus().length, instances, concurrency, samples: Object.fromEntries(samples) }, null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
