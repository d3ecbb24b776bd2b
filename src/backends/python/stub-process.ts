/**
 * @module backends/python/stub-process
 * Starts one stub process — forked by the interpreter's fork server (fork-server.ts) when it
 * can be, else spawned — and turns its stdout/stderr into labelled server log lines (so
 * `print()` in model.py reaches the log with the model and instance it came from: stdout as
 * INFO, stderr as ERROR unless the line is a Python logging record, which keeps its level).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import readline from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from '../../core/logger.js';
import type { IpcWaitOptions } from './ipc/channel.js';
import { PER_STUB_VARIABLES, type ForkServers } from './fork-server.js';
import { trackStub } from './live-stubs.js';
import { STUB_MAIN } from './stub-paths.js';

/**
 * A stub process as the launcher sees it: a ChildProcess, or a stub the fork server forked
 * (ForkedStub), which emits the same 'exit', 'error' and 'close' events.
 */
export interface StubProcess extends EventEmitter {
  readonly pid?: number | undefined;
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  readonly stdio: ReadonlyArray<Readable | Writable | null | undefined>;
  kill(signal?: NodeJS.Signals): boolean;
}

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
  /**
   * The backend's fork servers: a stub with the server's environment and no host policy is
   * forked from one (numpy imported once); absent, or for the others, it is spawned.
   */
  forks?: ForkServers;
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
const stderrTails = new WeakMap<StubProcess, string[]>();
const TAIL_LINES = 5;

/**
 * What a stub wrote last on stderr, once its pipes closed (bounded wait: a process the model
 * started may hold the pipe open). '' when it wrote nothing.
 */
export async function stderrTail(child: StubProcess, waitMs = 300): Promise<string> {
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

export function spawnStub(o: StubSpawnOptions): StubProcess {
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
  // Without them the stub opens the region's /dev/shm files by name.
  if (o.segmentFds) env.TRITIUM_STUB_SEGMENT_FDS = STUB_SEGMENT_FDS.join(',');
  else delete env.TRITIUM_STUB_SEGMENT_FDS;
  const argv = [o.modelFile, o.region, String(o.growthByteSize), String(process.pid), o.name, o.mode, String(o.logVerbose)];
  if (o.runtimeDir !== undefined) argv.push(o.runtimeDir);
  const child = (o.forks && forkable(o) && forkStub(o, o.forks, argv, env)) || spawnChild(o, argv, env);
  forwardOutput(child, o);
  return child;
}

/**
 * A stub the fork server may start: the server's interpreter and environment (a model's
 * EXECUTION_ENV_PATH brings its own), and no host policy (OpenBLAS sizes its threads by the
 * affinity it finds at import, which the server imported with).
 */
const forkable = (o: StubSpawnOptions): boolean => o.env === undefined && !(o.cpus && o.cpus.length > 0);

function forkStub(o: StubSpawnOptions, forks: ForkServers, argv: string[], env: NodeJS.ProcessEnv): StubProcess | undefined {
  // The server's environment: the stub's without what differs from stub to stub.
  const base = { ...env };
  for (const name of PER_STUB_VARIABLES) delete base[name];
  const fds = [{ fd: o.wakeFd, target: STUB_WAKE_FD }];
  if (o.segmentFds) fds.push({ fd: o.segmentFds[0], target: STUB_SEGMENT_FDS[0] }, { fd: o.segmentFds[1], target: STUB_SEGMENT_FDS[1] });
  return forks.get(o.python, base, o.logger).fork({ argv, env, fds, ...(o.mode === 'instance' ? { readinessTarget: STUB_READY_FD } : {}) });
}

function spawnChild(o: StubSpawnOptions, argv: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const stdio: Array<'ignore' | 'pipe' | number> = ['ignore', 'pipe', 'pipe', o.wakeFd, o.mode === 'instance' ? 'pipe' : 'ignore'];
  if (o.segmentFds) stdio.push(...o.segmentFds);
  const child = spawn(o.python, [STUB_MAIN, ...argv], { env, stdio });
  const forget = trackStub(child);
  child.once('exit', forget);
  child.once('error', forget);
  return child;
}

/** The stub's stdout and stderr as server log lines; the last stderr lines kept (stderrTail). */
function forwardOutput(child: StubProcess, o: StubSpawnOptions): void {
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
}

/** Node's end of an instance stub's readiness pipe (undefined for the auto-complete stub). */
export function readinessPipe(child: StubProcess): Writable | undefined {
  // A spawn that failed (EMFILE, EAGAIN) leaves no stdio at all: its error event reports it.
  const end = child.stdio?.[STUB_READY_FD] as Writable | null | undefined;
  if (!end) return undefined;
  // A stub that died leaves the write failing with EPIPE: its exit is handled elsewhere.
  end.on('error', () => {});
  return end;
}
