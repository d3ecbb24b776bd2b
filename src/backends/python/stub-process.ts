/**
 * @module backends/python/stub-process
 * Spawns one stub process and turns its stdout/stderr into labelled server log lines (so
 * `print()` in model.py reaches the log with the model and instance it came from).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import type { Logger } from '../../core/logger.js';
import { STUB_MAIN } from './stub-paths.js';

export interface StubSpawnOptions {
  python: string;
  env?: NodeJS.ProcessEnv;
  modelFile: string;
  region: string;
  growthByteSize: number;
  /** Instance name, or the model name for the auto-complete stub. */
  name: string;
  mode: 'instance' | 'autocomplete';
  logVerbose: number;
  logger: Logger;
  /** Label of the log lines, e.g. `add_sub/add_sub_0_0`. */
  label: string;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Describes how a stub ended, with an out-of-memory hint for SIGKILL. */
export function describeExit(e: ExitInfo): string {
  if (e.signal === 'SIGKILL') return 'The stub was killed by SIGKILL (possibly the out-of-memory killer).';
  if (e.signal) return `The stub was terminated by signal ${e.signal}.`;
  return `The stub exited with code ${e.code}.`;
}

export function spawnStub(o: StubSpawnOptions): ChildProcess {
  const env = { ...(o.env ?? process.env), PYTHONUNBUFFERED: '1' };
  const child = spawn(
    o.python,
    [STUB_MAIN, o.modelFile, o.region, String(o.growthByteSize), String(process.pid), o.name, o.mode, String(o.logVerbose)],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const forward = (stream: NodeJS.ReadableStream | null, error: boolean) => {
    if (!stream) return;
    const rl = readline.createInterface({ input: stream, crlfDelay: Infinity });
    rl.on('line', (line) => (error ? o.logger.error(line, o.label) : o.logger.info(line, o.label)));
  };
  forward(child.stdout, false);
  forward(child.stderr, true);
  return child;
}
