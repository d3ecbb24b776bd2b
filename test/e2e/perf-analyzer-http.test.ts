/**
 * End-to-end: the real perf_analyzer (2.50, from the tritonclient wheel, .venv/bin/perf_analyzer)
 * against tritium over HTTP on a dynamically batching Python model (docs/protocol-notes.md, "perf_analyzer"):
 * concurrency 1 to 16 without errors, the server-side breakdown it derives from the statistics
 * extension printed for every level, and its CSV with the server columns.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWindows, perfAnalyzer } from '../helpers/perf-analyzer.js';
import { makeRepo, ROOT, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { writeVariant } from './infer-helpers.js';

let server: Tritium;
let tmp: string;

beforeAll(async () => {
  const repo = makeRepo([]);
  // The benchmark's cost model, made cheap: 0.5 ms + 0.05 ms per row, max_batch_size 16.
  const config = fs
    .readFileSync(path.join(ROOT, 'fixtures', 'models', 'batch_cost', 'config.pbtxt'), 'utf8')
    .replace(/"FIXED_MS" value: \{ string_value: "[^"]*"/, '"FIXED_MS" value: { string_value: "0.5"')
    .replace(/"PER_ROW_MS" value: \{ string_value: "[^"]*"/, '"PER_ROW_MS" value: { string_value: "0.05"');
  writeVariant(repo, 'batch_cost', 'var_pa', config);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-pa-'));
  server = await startTritium({ repos: [repo] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('perf_analyzer over HTTP', () => {
  it('profiles a batching model at concurrency 1–16 with the server-side breakdown', async () => {
    // One run per level, with windows of a fixed request count any three of which count as
    // stable (countWindows): a loaded 2-core machine may never look stable otherwise.
    for (const c of [1, 4, 8, 16]) {
      const csv = path.join(tmp, `pa-c${c}.csv`);
      const { code, out } = await perfAnalyzer([
        '-m',
        'var_pa',
        '-u',
        `127.0.0.1:${server.httpPort}`,
        '-i',
        'http',
        '--concurrency-range',
        `${c}:${c}`,
        ...countWindows(100 * c),
        '-f',
        csv,
      ]);
      expect(code, out).toBe(0);
      // Shown in the test log: perf_analyzer's own report, "Server:" breakdown included.
      console.log(out);
      expect(out).not.toMatch(/error|failed|Thread \[\d+\] had error/i);
      expect(out).toContain(`Request concurrency: ${c}\n`);
      expect(out).toMatch(/Client:\s+Request count: \d+\s+Throughput: [\d.]+ infer\/sec/);
      expect(out).toMatch(/Server:\s+Inference count: \d+\s+Execution count: \d+\s+Successful request count: \d+/);
      expect(out).toMatch(
        /Avg request latency: \d+ usec \(overhead \d+ usec \+ queue \d+ usec \+ compute input \d+ usec \+ compute infer \d+ usec \+ compute output \d+ usec\)/,
      );
      expect(out).toMatch(new RegExp(`Concurrency: ${c}, throughput: [\\d.]+ infer/sec, latency \\d+ usec`));
      const header = fs.readFileSync(csv, 'utf8').split('\n')[0]!;
      expect(header).toMatch(
        /^Concurrency,Inferences\/Second,Client Send,Network\+Server Send\/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency/,
      );
      if (c === 16) {
        // At concurrency 16 the batcher groups requests: fewer executions than inferences.
        const inf = Number(/Inference count: (\d+)/.exec(out)![1]);
        const exe = Number(/Execution count: (\d+)/.exec(out)![1]);
        expect(exe).toBeLessThan(inf);
      }
    }
  });

  it('profiles with a client batch size of 4', async () => {
    const { code, out } = await perfAnalyzer([
      '-m',
      'var_pa',
      '-u',
      `127.0.0.1:${server.httpPort}`,
      '-b',
      '4',
      '--concurrency-range',
      '4',
      ...countWindows(200),
    ]);
    expect(code, out).toBe(0);
    expect(out).toMatch(/Batch size: 4/);
    const inf = Number(/Inference count: (\d+)/.exec(out)![1]);
    const req = Number(/Successful request count: (\d+)/.exec(out)![1]);
    expect(inf).toBe(4 * req);
  });
});
