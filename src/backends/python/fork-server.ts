/**
 * @module backends/python/fork-server
 * Starts stubs by fork from one interpreter that imported numpy and the stub's modules once
 * (stub/fork_server.py; docs/ipc.md, "Fork server"): a fresh interpreter per instance spends
 * 150-400 ms of CPU on those imports, which on a small host was most of start-to-ready.
 *
 * A forked stub is the fork server's child, not Node's: its pid and its end come as lines on
 * the server's stdout, and `ForkedStub` turns them into the ChildProcess events the launcher
 * listens to ('exit', 'error', 'close'). Its stdout, stderr and readiness pipe are pipes Node
 * makes and sends, with the stub's other descriptors, over a socket pair (SCM_RIGHTS).
 *
 * Only a stub whose environment is the server's but for the per-stub variables is forked
 * (`ForkServer.fork` returns undefined otherwise): what numpy and OpenBLAS read at import
 * (thread counts, CPU affinity) must be what a spawned stub would have read.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import net from 'node:net';
import os from 'node:os';
import readline from 'node:readline';
import type { Logger } from '../../core/logger.js';
import { traceLine, traceTags } from '../../core/trace-tags.js';
import { trackStub } from './live-stubs.js';
import { loadNative } from './ipc/native.js';
import { closeQuiet } from './ipc/segment-fds.js';
import { STUB_FORK_SERVER } from './stub-paths.js';

/** Where the fork server finds its end of the socket pair. */
const SERVER_SOCKET_FD = 3;
/**
 * The fork server's last argument: room in its argument area, where each stub writes the
 * command line a spawned stub would have (what ps and pgrep -f show); longer ones are cut.
 */
const TITLE_ROOM = '.'.repeat(4096);
/** How long `close` waits for the server to reap its last stubs before killing it. */
const CLOSE_GRACE_MS = 1000;
const SIGNAL_NAMES = new Map<number, NodeJS.Signals>(Object.entries(os.constants.signals).map(([name, n]) => [n, name as NodeJS.Signals]));

/** One descriptor of the stub's: Node's `fd` becomes `target` in the stub. */
export interface StubFd {
  fd: number;
  target: number;
}

export interface ForkRequest {
  /** main.py's arguments. */
  argv: string[];
  /** The environment the stub would be spawned with. */
  env: NodeJS.ProcessEnv;
  /** Descriptors the stub inherits besides stdin and its pipes; Node keeps its own copies. */
  fds: StubFd[];
  /** Target of the readiness pipe's read end (an instance), or undefined. */
  readinessTarget?: number;
}

type Report = { ready: number } | { id: number; pid: number } | { id: number; error: string } | { pid: number; code: number | null; signal: number | null };

/** A pipe end of Node's as a stream (libuv sets it non-blocking). */
const pipeStream = (fd: number, readable: boolean): net.Socket => {
  const s = new net.Socket({ fd, readable, writable: !readable });
  s.on('error', () => {});
  return s;
};

/**
 * A stub forked by the fork server, with the part of ChildProcess's surface the launcher and
 * stub-process.ts use: pid (once forked), exitCode / signalCode, kill, stdout / stderr, stdio[4]
 * (the readiness pipe), and the 'exit', 'error' and 'close' events.
 */
export class ForkedStub extends EventEmitter {
  pid: number | undefined;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  readonly stdout: net.Socket;
  readonly stderr: net.Socket;
  readonly stdio: ReadonlyArray<net.Socket | null>;
  /** A signal asked for before the pid was known. */
  private pendingSignal: NodeJS.Signals | undefined;
  private ended = false;
  private openStreams = 2;

  constructor(stdout: number, stderr: number, readiness: number | undefined) {
    super();
    this.stdout = pipeStream(stdout, true);
    this.stderr = pipeStream(stderr, true);
    const ready = readiness === undefined ? null : pipeStream(readiness, false);
    this.stdio = [null, this.stdout, this.stderr, null, ready];
    for (const s of [this.stdout, this.stderr]) s.once('close', () => this.streamClosed());
  }

  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.ended) return false;
    if (this.pid === undefined) {
      this.pendingSignal = signal;
      return true;
    }
    try {
      process.kill(this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** @internal the server forked it. */
  forked(pid: number): void {
    this.pid = pid;
    if (this.pendingSignal) this.kill(this.pendingSignal);
  }

  /**
   * @internal it never started: ChildProcess's 'error' for a failed spawn, emitted on the next
   * tick as Node emits that one (the caller may not have listened yet).
   */
  failed(err: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.exitCode = -1;
    this.destroyStreams();
    process.nextTick(() => this.emit('error', err));
  }

  /** @internal the server reaped it (or is gone, and killed it). */
  exited(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.ended) return;
    this.ended = true;
    this.exitCode = code;
    this.signalCode = signal;
    this.stdio[4]?.destroy();
    this.emit('exit', code, signal);
    this.maybeClose();
  }

  private destroyStreams(): void {
    for (const s of this.stdio) s?.destroy();
  }

  private streamClosed(): void {
    this.openStreams--;
    this.maybeClose();
  }

  private maybeClose(): void {
    if (this.ended && this.openStreams === 0) this.emit('close', this.exitCode, this.signalCode);
  }
}

interface Pending {
  id: number;
  stub: ForkedStub;
  json: string;
  /** Node's copies to send, closed once sent (or when the request fails). */
  fds: number[];
}

/** Variables that differ between stubs and are read only after the imports (stub/main.py, runtime.py). */
export const PER_STUB_VARIABLES: ReadonlySet<string> = new Set([
  'TRITIUM_STUB_SPIN_US',
  'TRITIUM_STUB_SPIN_MODE',
  'TRITIUM_STUB_WAKE_FD',
  'TRITIUM_STUB_READY_FD',
  'TRITIUM_STUB_SEGMENT_FDS',
]);

/** One fork server: one interpreter, the environment it was started with. */
export class ForkServer {
  private readonly child: ChildProcess;
  /** Node's end of the socket pair (-1 once closed). */
  private sock: number;
  private ready = false;
  private gone = false;
  private readonly queue: Pending[] = [];
  private readonly byId = new Map<number, ForkedStub>();
  private readonly byPid = new Map<number, ForkedStub>();
  private nextId = 1;
  private readonly tail: string[] = [];
  private readonly closed: Promise<void>;

  constructor(
    readonly python: string,
    /** What the server, and so every stub it forks, inherits. */
    private readonly env: NodeJS.ProcessEnv,
    private readonly logger: Logger,
  ) {
    const native = loadNative();
    const [mine, theirs] = native.socketPair();
    this.sock = mine;
    try {
      this.child = spawn(python, [STUB_FORK_SERVER, String(SERVER_SOCKET_FD), TITLE_ROOM], { env, stdio: ['ignore', 'pipe', 'pipe', theirs] });
    } catch (err) {
      closeQuiet(mine);
      throw err;
    } finally {
      closeQuiet(theirs);
    }
    const forget = trackStub(this.child);
    this.closed = new Promise((resolve) => {
      const end = (why: string, spawnError?: Error) => {
        forget();
        this.die(why, spawnError);
        resolve();
      };
      // The stubs waiting for it fail with the spawn's own error, as their spawn would have.
      this.child.once('error', (err) => end(`could not start: ${err.message}`, err));
      // 'close', not 'exit': every report the server wrote has been read by then.
      this.child.once('close', (code, signal) => end(signal ? `was terminated by signal ${signal}` : `exited with code ${code}`));
    });
    readline.createInterface({ input: this.child.stdout!, crlfDelay: Infinity }).on('line', (line) => this.onReport(line));
    readline.createInterface({ input: this.child.stderr!, crlfDelay: Infinity }).on('line', (line) => {
      this.tail.push(line);
      if (this.tail.length > 5) this.tail.shift();
      this.logger.error(line, 'stub fork server');
    });
    if (traceTags.instance) traceLine('instance', `stub fork server started for '${python}', pid ${this.child.pid ?? '(none)'}`);
  }

  /** False once the server ended (a new one is started for the next stub). */
  get alive(): boolean {
    return !this.gone;
  }

  /**
   * Forks a stub, or returns undefined when `env` differs from the server's in more than the
   * per-stub variables (the caller spawns it instead). The descriptors of `fds` are duplicated:
   * the caller may close its own at once.
   */
  fork(r: ForkRequest): ForkedStub | undefined {
    const delta: Record<string, string | null> = {};
    for (const name of new Set([...Object.keys(this.env), ...Object.keys(r.env)])) {
      const want = r.env[name];
      if (want === this.env[name]) continue;
      if (!PER_STUB_VARIABLES.has(name)) return undefined;
      delta[name] = want ?? null;
    }
    const native = loadNative();
    const sent: number[] = [];
    const targets: number[] = [];
    const streams: number[] = [];
    try {
      const [outR, outW] = native.pipe();
      streams.push(outR);
      sent.push(outW);
      const [errR, errW] = native.pipe();
      streams.push(errR);
      sent.push(errW);
      targets.push(1, 2);
      if (r.readinessTarget !== undefined) {
        const [readyR, readyW] = native.pipe();
        streams.push(readyW);
        sent.push(readyR);
        targets.push(r.readinessTarget);
      }
      for (const f of r.fds) {
        sent.push(native.dupFd(f.fd));
        targets.push(f.target);
      }
    } catch (err) {
      for (const fd of [...streams, ...sent]) closeQuiet(fd);
      throw err;
    }
    const stub = new ForkedStub(streams[0]!, streams[1]!, streams[2]);
    const id = this.nextId++;
    const json = JSON.stringify({ id, argv: r.argv, env: delta, fds: targets });
    const forget = trackStub(stub);
    stub.once('exit', forget);
    stub.once('error', forget);
    this.queue.push({ id, stub, json, fds: sent });
    if (this.gone) this.failQueued(new Error('the stub fork server is gone'));
    else this.flush();
    return stub;
  }

  /** Stops forking; the server exits once its stubs have (killed after a grace period). */
  async close(): Promise<void> {
    if (this.sock >= 0) {
      closeQuiet(this.sock);
      this.sock = -1;
    }
    const t = setTimeout(() => this.child.kill('SIGKILL'), CLOSE_GRACE_MS);
    await this.closed;
    clearTimeout(t);
  }

  /** Sends what is queued, in order, until the socket's queue is full (the next report retries). */
  private flush(): void {
    if (!this.ready || this.sock < 0) return;
    const native = loadNative();
    while (this.queue.length > 0) {
      const p = this.queue[0]!;
      try {
        native.sendFds(this.sock, p.fds, p.json);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        // Full: the next report sends it. Gone: its 'close' fails the queue with the reason.
        if (code === 'EAGAIN' || code === 'EPIPE' || code === 'ECONNRESET') return;
        this.queue.shift();
        this.release(p);
        p.stub.failed(new Error(`the request to the stub fork server could not be sent (${code})`));
        continue;
      }
      this.queue.shift();
      this.release(p);
      this.byId.set(p.id, p.stub);
    }
  }

  private release(p: Pending): void {
    for (const fd of p.fds) closeQuiet(fd);
    p.fds = [];
  }

  private onReport(line: string): void {
    let r: Report;
    try {
      r = JSON.parse(line) as Report;
    } catch {
      this.logger.error(line, 'stub fork server');
      return;
    }
    if ('ready' in r) {
      this.ready = true;
    } else if ('id' in r) {
      const stub = this.byId.get(r.id);
      this.byId.delete(r.id);
      if (stub !== undefined && 'pid' in r) {
        this.byPid.set(r.pid, stub);
        stub.forked(r.pid);
      } else if (stub !== undefined && 'error' in r) stub.failed(new Error(`fork: ${r.error}`));
    } else {
      const stub = this.byPid.get(r.pid);
      this.byPid.delete(r.pid);
      stub?.exited(r.code, r.signal === null ? null : (SIGNAL_NAMES.get(r.signal) ?? null));
    }
    this.flush();
  }

  private failQueued(err: Error): void {
    for (const p of this.queue.splice(0)) {
      this.release(p);
      p.stub.failed(err);
    }
    for (const stub of this.byId.values()) stub.failed(err);
    this.byId.clear();
  }

  /** The server ended: what it had not forked fails, what it forked is killed (nobody reaps it now). */
  private die(why: string, spawnError?: Error): void {
    if (this.gone) return;
    this.gone = true;
    if (this.sock >= 0) {
      closeQuiet(this.sock);
      this.sock = -1;
    }
    const tail = this.tail.length ? `: ${this.tail.join(' | ')}` : '';
    this.failQueued(spawnError ?? new Error(`the stub fork server ${why}${tail}`));
    if (this.byPid.size > 0) {
      this.logger.error(`The stub fork server ${why}; killing the ${this.byPid.size} stub(s) it started, which nothing would reap.`, 'stub fork server');
    }
    for (const stub of this.byPid.values()) {
      stub.kill('SIGKILL');
      stub.exited(null, 'SIGKILL');
    }
    this.byPid.clear();
    if (traceTags.instance) traceLine('instance', `stub fork server for '${this.python}' ${why}`);
  }
}

/** The backend's fork servers, one per interpreter, started on first use and again after one ends. */
export class ForkServers {
  private readonly servers = new Map<string, ForkServer>();

  /** The live server for `python`, starting one with `env` (its lines to `logger`) when there is none. */
  get(python: string, env: NodeJS.ProcessEnv, logger: Logger): ForkServer {
    let s = this.servers.get(python);
    if (!s?.alive) {
      s = new ForkServer(python, env, logger);
      this.servers.set(python, s);
    }
    return s;
  }

  async close(): Promise<void> {
    const all = [...this.servers.values()];
    this.servers.clear();
    await Promise.all(all.map((s) => s.close()));
  }
}
