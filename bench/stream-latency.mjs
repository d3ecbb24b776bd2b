#!/usr/bin/env node
/**
 * Streaming latency of a decoupled Python model: time to first response and the gap
 * between consecutive responses while python_models/square_int32 streams N responses (IN = N,
 * default 100) for one request. Measured on the client side of
 *
 *   - gRPC ModelStreamInfer (a @grpc/grpc-js client on one bidirectional stream, requests sent
 *     one after another, each ending with the empty final response it asks for), and
 *   - HTTP generate_stream (server-sent events over a keep-alive connection; events that
 *     arrive in one TCP read share a timestamp, so gaps there are an upper bound of batching).
 *
 * Prints the setup, then per transport: p50/p90/p99 of time to first response, of the
 * per-response gap, and of the whole request, plus responses per second within a request.
 *
 *   npm run build && node bench/stream-latency.mjs [--responses 100] [--requests 200] [--warmup 20]
 */
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import grpc from '@grpc/grpc-js';
import { ROOT, arg, machine } from './grpc-common.mjs';
import { startTritium } from './lib/server.mjs';

const pb = await import(path.join(ROOT, 'dist', 'generated', 'grpc_service_pb.js'));

const now = () => Number(process.hrtime.bigint()) / 1e3; // µs

function pct(values, p) {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

function summary(name, runs) {
  const ttfr = runs.map((r) => r.first - r.start);
  const gaps = runs.flatMap((r) => r.times.slice(1).map((t, i) => t - r.times[i]));
  const total = runs.map((r) => r.end - r.start);
  const rate = runs.map((r) => (r.times.length - 1) / ((r.times.at(-1) - r.first) / 1e6));
  const f = (v) => (Number.isNaN(v) ? '-' : v.toFixed(0));
  return {
    name,
    ttfr: [50, 90, 99].map((p) => f(pct(ttfr, p))),
    gap: [50, 90, 99].map((p) => f(pct(gaps, p))),
    gapMean: gaps.length ? (gaps.reduce((a, b) => a + b, 0) / gaps.length).toFixed(1) : '-',
    total: [50, 90, 99].map((p) => f(pct(total, p))),
    rate: f(pct(rate, 50)),
  };
}

/** One gRPC stream; sends each request after the previous one finished. */
async function grpcRuns(port, n, requests) {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const call = client.makeBidiStreamRequest(
    '/inference.GRPCInferenceService/ModelStreamInfer',
    (m) => Buffer.from(toBinary(pb.ModelInferRequestSchema, m)),
    (b) => fromBinary(pb.ModelStreamInferResponseSchema, b),
  );
  const raw = Buffer.alloc(4);
  raw.writeInt32LE(n);
  const request = create(pb.ModelInferRequestSchema, {
    modelName: 'square_int32',
    inputs: [{ name: 'IN', datatype: 'INT32', shape: [1n] }],
    rawInputContents: [raw],
    parameters: { triton_enable_empty_final_response: { parameterChoice: { case: 'boolParam', value: true } } },
  });
  const runs = [];
  let current;
  let done;
  call.on('data', (msg) => {
    const t = now();
    if (msg.errorMessage) throw new Error(msg.errorMessage);
    const r = msg.inferResponse;
    const final = r.parameters.triton_final_response?.parameterChoice.value === true;
    if (r.outputs.length > 0) {
      current.times.push(t);
      current.first ??= t;
    }
    if (final) {
      current.end = t;
      if (current.times.length !== n) throw new Error(`expected ${n} responses, got ${current.times.length}`);
      done();
    }
  });
  for (let i = 0; i < requests; i++) {
    await new Promise((resolve) => {
      done = resolve;
      current = { start: now(), times: [] };
      call.write(request);
    });
    runs.push(current);
  }
  call.end();
  client.close();
  return runs;
}

/** generate_stream over one keep-alive connection. */
async function sseRuns(port, n, requests) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ IN: n });
  const runs = [];
  for (let i = 0; i < requests; i++) {
    runs.push(
      await new Promise((resolve, reject) => {
        const run = { start: now(), times: [] };
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: '/v2/models/square_int32/generate_stream',
            agent,
            headers: { 'Content-Length': Buffer.byteLength(body) },
          },
          (res) => {
            let pending = '';
            res.on('data', (chunk) => {
              const t = now();
              pending += chunk;
              let k;
              while ((k = pending.indexOf('\n\n')) >= 0) {
                pending = pending.slice(k + 2);
                run.times.push(t);
                run.first ??= t;
              }
            });
            res.on('end', () => {
              run.end = now();
              if (run.times.length !== n) reject(new Error(`expected ${n} events, got ${run.times.length}`));
              else resolve(run);
            });
          },
        );
        req.on('error', reject);
        req.end(body);
      }),
    );
  }
  agent.destroy();
  return runs;
}

async function main() {
  const n = Number(arg('responses', '100'));
  const requests = Number(arg('requests', '200'));
  const warmup = Number(arg('warmup', '20'));
  const out = path.join(ROOT, 'bench', '.out', 'stream-latency');
  fs.rmSync(out, { recursive: true, force: true });
  const repo = path.join(out, 'repo');
  fs.mkdirSync(repo, { recursive: true });
  fs.cpSync(path.join(ROOT, 'python_models', 'square_int32'), path.join(repo, 'square_int32'), { recursive: true });

  console.log('setup:');
  console.log(`  machine: ${machine()}`);
  console.log(`  model: python_models/square_int32 (decoupled, 1 instance): IN = ${n} -> ${n} responses from a worker thread, then a flags-only FINAL`);
  console.log(`  clients: @grpc/grpc-js ModelStreamInfer (one stream) and node:http generate_stream (one keep-alive connection)`);
  console.log(`  ${requests} requests one after another per transport, after ${warmup} warm-up requests; times in µs on the client`);
  const server = await startTritium({ repos: repo });
  const results = [];
  try {
    await grpcRuns(server.grpcPort, n, warmup);
    results.push(summary('gRPC ModelStreamInfer', await grpcRuns(server.grpcPort, n, requests)));
    await sseRuns(server.httpPort, n, warmup);
    results.push(summary('HTTP generate_stream (SSE)', await sseRuns(server.httpPort, n, requests)));
  } finally {
    await server.stop();
  }
  console.log(
    `\n| transport | first response p50 / p90 / p99 (µs) | gap p50 / p90 / p99 (µs) | gap mean (µs) | whole request p50 / p90 / p99 (µs) | responses/s in a request (p50) |`,
  );
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of results) {
    console.log(`| ${r.name} | ${r.ttfr.join(' / ')} | ${r.gap.join(' / ')} | ${r.gapMean} | ${r.total.join(' / ')} | ${r.rate} |`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
