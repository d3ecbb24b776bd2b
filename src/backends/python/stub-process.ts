/**
 * @module backends/python/stub-process
 * Spawns one stub process and turns its stdout/stderr into labelled server log lines (so
 * `print()` in model.py reaches the log with the model and instance it came from: stdout as
 * INFO, stderr as ERROR unless the line is a Python logging record, which keeps its level).
 * Keeps the set of live stubs so an abnormal exit of the server can still kill them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import readline from 'node:readline';
import type { Writable } from 'node:stream';
import type { Logger } from '../../core/logger.js';
import type { IpcWaitOptions } from './ipc/channel.js';
import { STUB_MAIN } from './stub-paths.js';

export interface StubSpawnOptions {
  python: string;
  env?: NodeJS.ProcessEnv;
  modelFile: string;
  /**
   * A Python-based backend's directory (`<backend-directory>/<backend>`): the stub imports its
   * model.py as module `model` with this directory on sys.path, while `modelFile` still names
   * the model's version directory (get_model_dir()).
   */
  runtimeDir?: string;
  region: string;
  growthByteSize: number;
  /** Instance name, or the model name for the auto-complete stub. */
  name: string;
  mode: 'instance' | 'autocomplete';
  logVerbose: number;
  logger: Logger;
  /** Label of the log lines, e.g. `add_sub/add_sub_0_0`. */
  label: string;
  /** The stub's wait policy (passed as TRITIUM_STUB_SPIN_US / TRITIUM_STUB_SPIN_MODE). */
  ipcWait?: IpcWaitOptions;
  /** The channel's wake eventfd (`StubChannel.wakeFd`): inherited as the stub's fd 3. */
  wakeFd: number;
  /** memfd backing: n0's memfd and the segment socket (`StubChannel.segmentFds`), inherited as fds 5 and 6. */
  segmentFds?: readonly [number, number];
  /** CPUs the stub runs on (its host policy); the stub pins itself before importing model.py. */
  cpus?: readonly number[];
}

/** Where the stub finds the wake eventfd (docs/ipc.md, "Waking Node"). */
const STUB_WAKE_FD = 3;
/**
 * Where an instance stub finds the readiness pipe (docs/ipc.md, "Readiness requests"): Node's
 * end is `child.stdio[4]` (see readinessPipe).
 */
const STUB_READY_FD = 4;
/** Where the stub finds n0's memfd and its end of the segment socket (docs/ipc.md, "Segments"). */
const STUB_SEGMENT_FDS = [5, 6] as const;

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

/** Python logging's default format, `%(levelname)s:%(name)s:%(message)s`. */
const PY_LOGGING_LINE = /^(CRITICAL|ERROR|WARNING|INFO|DEBUG):[^:\s]*:/;

/** The last stderr lines of each stub: the reason a stub that dies at start-up gives. */
const stderrTails = new WeakMap<ChildProcess, string[]>();
const TAIL_LINES = 5;

/**
 * What a stub wrote last on stderr, once its pipes closed (bounded wait: a process the model
 * started may hold the pipe open). '' when it wrote nothing.
 */
export async function stderrTail(child: ChildProcess, waitMs = 300): Promise<string> {
  if (child.stderr && !child.stderr.readableEnded) {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, waitMs);
      child.once('close', () => {
        clearTimeout(t);
        resolve();
      });
    });
  }
  return (stderrTails.get(child) ?? []).join('\n');
}

/** Every stub process of this server that has not exited yet (instance and auto-complete). */
const liveStubs = new Set<ChildProcess>();

/**
 * Last resort on an exit path that skips the normal teardown (a signal during start-up, an
 * uncaught error): SIGKILLs every stub still running. Synchronous, so it can run in 'exit'.
 */
export function killAllStubs(): void {
  for (const child of liveStubs) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  liveStubs.clear();
}

export function spawnStub(o: StubSpawnOptions): ChildProcess {
  const env: NodeJS.ProcessEnv = { ...(o.env ?? process.env), PYTHONUNBUFFERED: '1' };
  if (o.ipcWait) {
    env.TRITIUM_STUB_SPIN_US = String(o.ipcWait.spinUs);
    env.TRITIUM_STUB_SPIN_MODE = o.ipcWait.spinMode;
  }
  env.TRITIUM_STUB_WAKE_FD = String(STUB_WAKE_FD);
  // Node cannot set a child's affinity before exec; the stub does it first thing (stub/main.py).
  if (o.cpus !== undefined && o.cpus.length > 0) env.TRITIUM_STUB_CPUS = o.cpus.join(',');
  else delete env.TRITIUM_STUB_CPUS;
  // An instance may serve `is_ready()`: its requests come through a pipe of their own, which a
  // stub thread blocks on while the main thread may be busy in execute.
  const instance = o.mode === 'instance';
  if (instance) env.TRITIUM_STUB_READY_FD = String(STUB_READY_FD);
  else delete env.TRITIUM_STUB_READY_FD;
  const stdio: Array<'ignore' | 'pipe' | number> = ['ignore', 'pipe', 'pipe', o.wakeFd, instance ? 'pipe' : 'ignore'];
  // Without them the stub opens the region's /dev/shm files by name.
  if (o.segmentFds) {
    stdio.push(...o.segmentFds);
    env.TRITIUM_STUB_SEGMENT_FDS = STUB_SEGMENT_FDS.join(',');
  } else delete env.TRITIUM_STUB_SEGMENT_FDS;
  const argv = [STUB_MAIN, o.modelFile, o.region, String(o.growthByteSize), String(process.pid), o.name, o.mode, String(o.logVerbose)];
  if (o.runtimeDir !== undefined) argv.push(o.runtimeDir);
  const child = spawn(o.python, argv, {
    env,
    stdio,
  });
  liveStubs.add(child);
  const forget = () => liveStubs.delete(child);
  child.once('exit', forget);
  child.once('error', forget);
  const forward = (stream: NodeJS.ReadableStream | null, error: boolean) => {
    if (!stream) return;
    const rl = readline.createInterface({ input: stream, crlfDelay: Infinity });
    rl.on('line', (line) => {
      if (!error) return o.logger.info(line, o.label);
      const tail = stderrTails.get(child) ?? [];
      tail.push(line);
      if (tail.length > TAIL_LINES) tail.shift();
      stderrTails.set(child, tail);
      // Python logging after logging.basicConfig() (which logging.warning() & co. call on their
      // own) writes `LEVEL:name:message` to stderr: keep the record's level.
      const level = PY_LOGGING_LINE.exec(line)?.[1];
      if (level === 'WARNING') o.logger.warn(line, o.label);
      else if (level === 'INFO') o.logger.info(line, o.label);
      else if (level === 'DEBUG') o.logger.verbose(1, line, o.label);
      else o.logger.error(line, o.label);
    });
  };
  forward(child.stdout, false);
  forward(child.stderr, true);
  return child;
}

/** Node's end of an instance stub's readiness pipe (undefined for the auto-complete stub). */
export function readinessPipe(child: ChildProcess): Writable | undefined {
  // A spawn that failed (EMFILE, EAGAIN) leaves no stdio at all: its error event reports it.
  const end = child.stdio?.[STUB_READY_FD] as Writable | null | undefined;
  if (!end) return undefined;
  // A stub that died leaves the write failing with EPIPE: its exit is handled elsewhere.
  end.on('error', () => {});
  return end;
}
