/**
 * Test helper: the real perf_analyzer from the tritonclient wheel (.venv/bin/perf_analyzer),
 * run asynchronously with a time limit.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './server.js';

export const PERF_ANALYZER = path.join(ROOT, '.venv', 'bin', 'perf_analyzer');

/**
 * Measurement flags for a run that must end: windows of `requests` requests each, any three
 * in a row accepted as stable (-s 999, at most 10 windows), so a loaded machine cannot keep
 * it measuring. Not `--request-count`: perf_analyzer 2.50 then stops its workers after that many
 * requests but, when requests complete before its measurement starts, drops their records and
 * waits forever for the count (seen on CI: every request answered, perf_analyzer asleep).
 */
export function countWindows(requests: number): string[] {
  return ['--measurement-mode', 'count_windows', '--measurement-request-count', String(requests), '-s', '999', '-r', '10'];
}

/**
 * The flag for a sequence model over HTTP: synchronous calls. In its default asynchronous mode a
 * worker told to stop sends the END request of its sequence at once
 * (InferContext::CompleteOngoingSequence), while the request it sent just before may still be
 * unanswered; over HTTP the two leave on two connections, which no server orders. The END can
 * then reach the batcher first and free the id, and the earlier request is refused for want of
 * START (seen on CI with frontend threads: "Thread [1] had error: ... must specify the START
 * flag", after the measurement). A synchronous worker sends that END after the answer.
 * gRPC sends both on the connection of the worker's channel, in order.
 */
export const SEQUENCES_OVER_HTTP = ['--sync'];

/** Runs perf_analyzer with `args` (SIGKILLed after `timeoutMs`); resolves with its exit code and stdout+stderr. */
export function perfAnalyzer(args: string[], timeoutMs = 50_000): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(PERF_ANALYZER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}
