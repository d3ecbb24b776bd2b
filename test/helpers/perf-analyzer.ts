/**
 * Test helper: the real perf_analyzer from the tritonclient wheel (.venv/bin/perf_analyzer),
 * run asynchronously with a time limit.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './server.js';

export const PERF_ANALYZER = path.join(ROOT, '.venv', 'bin', 'perf_analyzer');

/** Runs perf_analyzer with `args` (SIGKILLed after `timeoutMs`); resolves with its exit code and stdout+stderr. */
export function perfAnalyzer(args: string[], timeoutMs = 50_000): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(PERF_ANALYZER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}
