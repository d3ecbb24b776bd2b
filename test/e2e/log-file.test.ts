/**
 * `--log-file` and `--log-format` as tritonserver has them: with a log file nothing goes to
 * stderr and every line (the start-up tables included) is in the file; ISO8601 lines carry a
 * calendar timestamp; the logging API reports the file and switches the format at run time.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, makeRepo, PYTHON, ROOT, shmFilesOf } from '../helpers/server.js';

let proc: ReturnType<typeof spawn>;
let stderr = '';
let logFile: string;
let http: string;

/** A port nobody listens on now (the server binds it a moment later). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  ensureBuilt();
  logFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-logfile-')), 'server.log');
  const [h, g, m] = [await freePort(), await freePort(), await freePort()];
  http = `http://127.0.0.1:${h}`;
  proc = spawn(
    process.execPath,
    [
      path.join(ROOT, 'bin', 'tritium.js'),
      `--model-repository=${makeRepo(['add_sub', 'batch_cost'])}`,
      `--http-port=${h}`,
      `--grpc-port=${g}`,
      `--metrics-port=${m}`,
      '--http-address=127.0.0.1',
      '--grpc-address=127.0.0.1',
      `--backend-config=python,python-executable=${PYTHON}`,
      '--log-format=ISO8601',
      '--log-verbose=1',
      `--log-file=${logFile}`,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  proc.stderr!.on('data', (d) => (stderr += d));
  proc.stdout!.on('data', (d) => (stderr += d));
  for (let i = 0; i < 600; i++) {
    if (fs.existsSync(logFile) && fs.readFileSync(logFile, 'utf8').includes('Started HTTPService at')) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no start-up line in ${logFile}:\n${fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : ''}\n${stderr}`);
}, 120_000);

afterAll(async () => {
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
  expect(shmFilesOf(proc.pid)).toEqual([]);
});

describe('--log-file and --log-format', () => {
  it('writes every line to the file, in ISO8601 form, and nothing to stderr', () => {
    const text = fs.readFileSync(logFile, 'utf8');
    expect(stderr).toBe('');
    const lines = text.split('\n').filter((l) => /^\d{4}-/.test(l));
    expect(lines.length).toBeGreaterThan(3);
    for (const l of lines) expect(l).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z [IWE] \d+ [^\]]+\] ".*"$/);
    expect(text).toContain('"successfully loaded \'add_sub\' version 1"');
    // One line per instance with its device, as Triton writes it.
    expect(text).toContain('"TRITONBACKEND_ModelInstanceInitialize: add_sub_0_0 (CPU device 0)"');
    expect(text).toContain('"TRITONBACKEND_ModelInstanceInitialize: batch_cost_0_0 (CPU device 0)"');
    // The start-up tables, as tritonserver prints them.
    expect(text).toMatch(/\| Model +\| Version \| Status \|\n\+-+\+-+\+-+\+\n\| add_sub +\| 1 +\| READY +\|/);
    expect(text).toMatch(/\| model_control_mode +\| MODE_NONE +\|/);
  });

  it('writes an executing line per batch, with the batch sizes the statistics report', async () => {
    const row = Array.from({ length: 16 }, (_, i) => i);
    const body = JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data: row }] });
    const replies = await Promise.all(Array.from({ length: 24 }, () => fetch(`${http}/v2/models/batch_cost/infer`, { method: 'POST', body })));
    for (const r of replies) expect(r.status).toBe(200);
    const stats = (await (await fetch(`${http}/v2/models/batch_cost/stats`)).json()).model_stats[0];
    const fromStats = new Map<number, number>();
    for (const b of stats.batch_stats as Array<{ batch_size: number; compute_infer: { count: number } }>) fromStats.set(b.batch_size, b.compute_infer.count);
    // Every execution is in the log (the lines are written asynchronously: wait for the last).
    const executions = Number(stats.execution_count);
    let sizes: number[] = [];
    for (let i = 0; i < 50; i++) {
      sizes = [...fs.readFileSync(logFile, 'utf8').matchAll(/"model batch_cost, instance batch_cost_0_0, executing (\d+) requests"/g)].map((m) => Number(m[1]));
      if (sizes.length >= executions) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const fromLog = new Map<number, number>();
    for (const n of sizes) fromLog.set(n, (fromLog.get(n) ?? 0) + 1);
    expect(fromLog).toEqual(fromStats);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(24);
  });

  it('reports the file through the logging API and switches the format at run time', async () => {
    let settings = await (await fetch(`${http}/v2/logging`)).json();
    expect(settings).toMatchObject({ log_file: logFile, log_format: 'ISO8601', log_verbose_level: 1 });
    settings = await (await fetch(`${http}/v2/logging`, { method: 'POST', body: JSON.stringify({ log_format: 'default' }) })).json();
    expect(settings.log_format).toBe('default');
    // The next executing line is written in the default format.
    const body = JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
      ],
    });
    expect((await fetch(`${http}/v2/models/add_sub/infer`, { method: 'POST', body })).status).toBe(200);
    const defaultLine = /\nI\d{4} \d{2}:\d{2}:\d{2}\.\d{6} \d+ [^\]]+\] "model add_sub, instance add_sub_0_0, executing 1 requests"/;
    let text = '';
    for (let i = 0; i < 50 && !defaultLine.test(text); i++) {
      await new Promise((r) => setTimeout(r, 100));
      text = fs.readFileSync(logFile, 'utf8');
    }
    expect(text).toMatch(defaultLine);
  });
});
