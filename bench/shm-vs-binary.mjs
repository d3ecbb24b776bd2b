#!/usr/bin/env node
/**
 * Client system shared memory against plain binary HTTP: perf_analyzer sends a 4 MiB FP32
 * input (1,048,576 elements) to an identity Python model and reads the 4 MiB output, once with
 * `--shared-memory=system` (inputs and outputs in registered /dev/shm regions; only descriptors
 * on the wire) and once with the binary data extension over HTTP (the tensors in the HTTP
 * bodies), at each concurrency. Prints the setup, each cell, and the shared-memory / binary ratio
 * of throughput and p99, with the server's CPU per request (utime + stime of tritium and its
 * stubs from /proc).
 *
 *   npm run build && node bench/shm-vs-binary.mjs [--concurrency 1,8] [--duration-ms 4000] [--rounds 2]
 */
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, arg, machine } from './grpc-common.mjs';
import { perfAnalyzer, readPerfCsv, requirePerfAnalyzer } from './lib/perf-analyzer.mjs';
import { treeCpu } from './lib/proc-stats.mjs';
import { startTritium } from './lib/server.mjs';

const ELEMENTS = 1 << 20; // 4 MiB of FP32
const MODEL = `"""OUTPUT0 = INPUT0 for any FP32 shape (bench/shm-vs-binary.mjs)."""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())])
            for r in requests
        ]
`;
const CONFIG = `name: "identity_4mib"
backend: "python"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ ${ELEMENTS} ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ ${ELEMENTS} ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
`;

const concurrencies = arg('concurrency', '1,8').split(',').map(Number);
const durationMs = Number(arg('duration-ms', '4000'));
const rounds = Number(arg('rounds', '2'));
const pa = requirePerfAnalyzer();

const out = path.join(ROOT, 'bench', '.out', 'shm-vs-binary');
fs.rmSync(out, { recursive: true, force: true });
const repo = path.join(out, 'repo');
fs.mkdirSync(path.join(repo, 'identity_4mib', '1'), { recursive: true });
fs.writeFileSync(path.join(repo, 'identity_4mib', '1', 'model.py'), MODEL);
fs.writeFileSync(path.join(repo, 'identity_4mib', 'config.pbtxt'), CONFIG);

console.log('setup:');
console.log(`  machine: ${machine()}`);
console.log(`  model: identity_4mib (Python, 2 instances), FP32 [${ELEMENTS}] in and out (4 MiB each)`);
console.log(`  client: perf_analyzer -i http, ${durationMs} ms windows, ${rounds} rounds alternating the modes`);

/** Server CPU seconds (tritium and its stubs), for CPU per request. */
const serverCpu = (pid) => {
  const t = treeCpu(pid);
  return t.server + t.children;
};

const server = await startTritium({ repos: [repo] });
const results = new Map(); // `${mode} ${c}` -> [{ thr, p99, cpuUs }]
let served = 0;
try {
  for (let round = 0; round < rounds; round++) {
    for (const c of concurrencies) {
      for (const mode of ['binary', 'shm']) {
        const csv = path.join(out, `${mode}-c${c}-r${round}.csv`);
        const args = ['-m', 'identity_4mib', '-u', `127.0.0.1:${server.httpPort}`, '-i', 'http', '--concurrency-range', `${c}:${c}`];
        args.push('--measurement-interval', String(durationMs), '--stability-percentage', '50', '--max-trials', '6', '-f', csv);
        if (mode === 'shm') args.push('--shared-memory=system', `--output-shared-memory-size=${ELEMENTS * 4}`);
        const t0 = serverCpu(server.proc.pid);
        await perfAnalyzer(pa, args);
        const cpu = serverCpu(server.proc.pid) - t0;
        const get = readPerfCsv(csv);
        const stats = await (await fetch(`${server.http}/v2/models/identity_4mib/stats`)).json();
        const count = stats.model_stats[0].inference_stats.success.count;
        const cell = { thr: get('Inferences/Second'), p99: get('p99 latency'), cpuUs: (cpu * 1e6) / Math.max(1, count - served) };
        served = count;
        const key = `${mode} ${c}`;
        results.set(key, [...(results.get(key) ?? []), cell]);
        console.log(
          `  round ${round + 1} ${mode} c=${c}: ${cell.thr.toFixed(1)} infer/s, p99 ${(cell.p99 / 1000).toFixed(1)} ms, server CPU ${cell.cpuUs.toFixed(0)} µs/request`,
        );
      }
    }
  }
} finally {
  await server.stop();
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
console.log(
  '\n| concurrency | binary HTTP infer/s (p99 ms) | shared memory infer/s (p99 ms) | shm / binary throughput | shm / binary p99 | server CPU µs/request binary / shm |',
);
console.log('|---|---|---|---|---|---|');
for (const c of concurrencies) {
  const b = results.get(`binary ${c}`);
  const s = results.get(`shm ${c}`);
  const [bt, st] = [median(b.map((x) => x.thr)), median(s.map((x) => x.thr))];
  const [bp, sp] = [median(b.map((x) => x.p99)), median(s.map((x) => x.p99))];
  const [bc, sc] = [median(b.map((x) => x.cpuUs)), median(s.map((x) => x.cpuUs))];
  console.log(
    `| ${c} | ${bt.toFixed(1)} (${(bp / 1000).toFixed(1)}) | ${st.toFixed(1)} (${(sp / 1000).toFixed(1)}) | ${(st / bt).toFixed(2)}× | ${(sp / bp).toFixed(2)} | ${bc.toFixed(0)} / ${sc.toFixed(0)} |`,
  );
}
