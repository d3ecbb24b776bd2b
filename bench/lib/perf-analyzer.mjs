/**
 * Benchmark helper: the real perf_analyzer binary (from the tritonclient wheel in .venv, or
 * PERF_ANALYZER, or PATH), run asynchronously so the server's log pipe keeps draining, and
 * its CSV read back.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './server.mjs';

/** The real perf_analyzer binary, or undefined (the PyPI placeholder without one does not count). */
export function findPerfAnalyzer() {
  const candidates = [process.env.PERF_ANALYZER, path.join(ROOT, '.venv', 'bin', 'perf_analyzer'), 'perf_analyzer'].filter(Boolean);
  for (const c of candidates) {
    const r = spawnSync(c, ['--help'], { encoding: 'utf8', timeout: 10_000 });
    if (!r.error && /concurrency-range/.test(`${r.stdout}${r.stderr}`)) return c;
  }
  return undefined;
}

/** findPerfAnalyzer(), or an error saying how to get one. */
export function requirePerfAnalyzer() {
  const bin = findPerfAnalyzer();
  if (!bin) throw new Error('no perf_analyzer binary found (set PERF_ANALYZER or install tritonclient[all] in .venv)');
  return bin;
}

/**
 * Runs perf_analyzer with `args`; resolves with its stdout and stderr together, rejects with
 * them when it exits non-zero. `echoStderr` also passes its stderr through to ours.
 */
export function perfAnalyzer(bin, args, { echoStderr = false } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => {
      out += d;
      if (echoStderr) process.stderr.write(d);
    });
    p.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`perf_analyzer exited ${code}:\n${out}`))));
    p.on('error', reject);
  });
}

/** The first data row of a perf_analyzer CSV (`-f`), as a lookup by column name (µs columns, p-latencies). */
export function readPerfCsv(csv) {
  const [header, row] = fs.readFileSync(csv, 'utf8').trim().split('\n');
  const cols = header.split(',');
  const vals = row.split(',');
  return (name) => Number(vals[cols.indexOf(name)]);
}
