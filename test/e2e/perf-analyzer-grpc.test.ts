/**
 * End-to-end: the real perf_analyzer 2.50 (.venv/bin/perf_analyzer) over gRPC:
 * `-i grpc` on a non-decoupled Python model (ModelInfer, with the server-side breakdown from the
 * statistics extension) and `-i grpc --streaming` on the decoupled square example
 * (ModelStreamInfer, several responses per request), both without errors.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perfAnalyzer } from '../helpers/perf-analyzer.js';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { tempDir } from './twin-helpers.js';

let server: Tritium;
let tmp: string;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['add_sub', 'square_int32'])] });
  tmp = tempDir('tritium-pa-');
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(tmp, { recursive: true, force: true });
});

// Loose stability (-s 100, up to 10 windows): this checks the protocol, not the figures, on a loaded box.
const common = () => ['-u', `127.0.0.1:${server.grpcPort}`, '-i', 'grpc', '-p', '1000', '-s', '100', '-r', '10'];

describe('perf_analyzer over gRPC', () => {
  it('-i grpc on a non-decoupled model, with the server-side breakdown', async () => {
    const csv = path.join(tmp, 'add_sub.csv');
    const { code, out } = await perfAnalyzer(['-m', 'add_sub', ...common(), '--concurrency-range', '1:4:3', '-f', csv]);
    expect(code, out).toBe(0);
    expect(out).not.toMatch(/error|failed|Thread \[\d+\] had error/i);
    for (const c of [1, 4]) {
      const at = out.indexOf(`Request concurrency: ${c}\n`);
      expect(at, `concurrency ${c}\n${out}`).toBeGreaterThanOrEqual(0);
      const section = out.slice(at);
      expect(section).toMatch(/Client:\s+Request count: \d+\s+Throughput: [\d.]+ infer\/sec/);
      expect(section).toMatch(/Avg gRPC time: \d+ usec/);
      expect(section).toMatch(/Server:\s+Inference count: \d+\s+Execution count: \d+\s+Successful request count: \d+/);
    }
    expect(fs.readFileSync(csv, 'utf8').split('\n')[0]).toMatch(/^Concurrency,Inferences\/Second,Client Send,Network\+Server Send\/Recv,Server Queue/);
  });

  it('-i grpc --streaming on a decoupled model (4 responses per request)', async () => {
    const data = path.join(tmp, 'square.json');
    fs.writeFileSync(data, JSON.stringify({ data: [{ IN: [4] }] }));
    const { code, out } = await perfAnalyzer(['-m', 'square_int32', ...common(), '--streaming', '--input-data', data, '--concurrency-range', '1:2']);
    expect(code, out).toBe(0);
    expect(out).not.toMatch(/error|failed|Thread \[\d+\] had error/i);
    expect(out).toMatch(/Request concurrency: 2/);
    expect(out).toMatch(/Throughput: [\d.]+ infer\/sec/);
    // Four responses per inference: perf_analyzer counts them from the stream.
    const last = out.slice(out.lastIndexOf('Request concurrency:'));
    const inferences = Number(/Throughput: ([\d.]+) infer\/sec/.exec(last)![1]);
    const responses = Number(/Response Throughput: ([\d.]+) infer\/sec/.exec(last)?.[1]);
    expect(responses / inferences, out).toBeGreaterThan(3.5);
    expect(responses / inferences, out).toBeLessThan(4.5);
  });
});
