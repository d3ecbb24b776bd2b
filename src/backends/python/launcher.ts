/**
 * @module backends/python/launcher
 * Brings one stub up and watches it, for instances and for the auto-complete stub alike: creates
 * its shared-memory channel, starts the process (stub-process.ts, forked by the fork server or
 * spawned: the wake eventfd as fd 3, an instance's readiness pipe as fd 4, with memfd segments
 * n0's memfd and the segment socket as fds 5 and 6, its output in the server log), waits for the
 * messages of a handshake (`expect`), kills a stub whose heartbeat stops (the watchdog), and reports its
 * exit once, with a cause: the spawn error, why Node killed it, or how it ended.
 *
 * What the stub is for (initialize and serve, or run auto_complete_config) is the caller's.
 */
import type { Writable } from 'node:stream';
import type { Logger } from '../../core/logger.js';
import { StubChannel, newRegionName, type IpcWaitOptions } from './ipc/channel.js';
import type { StubMessageType, StubToNode } from './ipc/messages.js';
import { recoveryFds } from '../../core/instance/fd-reserve.js';
import type { ShmReserve } from './ipc/shm-reserve.js';
import { describeExit, readinessPipe, spawnStub, stderrTail, type ExitInfo, type StubProcess } from './stub-process.js';
import type { ForkServers } from './fork-server.js';
import { traceLine, traceTags } from '../../core/trace-tags.js';
import { HeartbeatWatch } from './stub-watchdog.js';

export interface LaunchOptions {
  python: string;
  env?: NodeJS.ProcessEnv;
  modelFile: string;
  /**
   * A Python-based backend's directory (`<backend-directory>/<backend>`): the stub imports its
   * model.py as module `model` with this directory on sys.path, while `modelFile` still names
   * the model's version directory (get_model_dir()).
   */
  runtimeDir?: string;
  /** Instance name, or the model name for the auto-complete stub. */
  name: string;
  mode: 'instance' | 'autocomplete';
  /** Region name prefix (newRegionName). */
  regionPrefix: string;
  shmDefaultByteSize: number;
  shmGrowthByteSize: number;
  ipcWait?: IpcWaitOptions;
  logger: Logger;
  /** Label of the stub's output lines, e.g. `add_sub/add_sub_0_0`. */
  label: string;
  /** Source of the launcher's own log lines (the model name). */
  logSource: string;
  /** Bound of the heartbeat watchdog; no watchdog when absent (the auto-complete stub). */
  stubTimeoutSeconds?: number;
  /** Kills the stub when aborted (the instance was stopped while this stub started). */
  signal?: AbortSignal;
  /** CPUs of the instance's host policy (`--host-policy`); any CPU when absent. */
  cpus?: readonly number[];
  /** /dev/shm space given back for the region's creation and taken again after (ipc/shm-reserve.ts). */
  shmReserve?: ShmReserve;
  /** The backend's fork servers (stub-process.ts says which stubs are forked); spawned when absent. */
  forks?: ForkServers;
  /** The error a pending `expect` rejects with when the stub ends first. */
  deathError(exit: StubExit, stderrTail: string): Error;
}

export interface StubExit extends ExitInfo {
  spawnError?: Error;
  /** One sentence: why Node killed it, the spawn failure, or how it ended. */
  cause: string;
}

type Waiter = { types: StubMessageType[]; resolve: (m: StubToNode) => void; reject: (e: Error) => void };

export class LaunchedStub {
  readonly channel: StubChannel;
  readonly child: StubProcess;
  /** Node's end of an instance's readiness pipe (docs/ipc.md, "Readiness requests"). */
  readonly readinessPipe: Writable | undefined;
  /** Resolves once, when the process is gone and late messages were dispatched. */
  readonly exited: Promise<StubExit>;
  /** Messages no `expect` waits for. */
  onMessage: (m: StubToNode) => void = () => {};
  private waiter: Waiter | undefined;
  private watchdog: HeartbeatWatch | undefined;
  /** Set just before Node makes the stub end, so its exit says why. */
  private exitCause: string | undefined;
  private gone = false;

  constructor(private readonly o: LaunchOptions) {
    // Region, eventfd, pipes and fork are synchronous: they run on the descriptors and the /dev/shm
    // space held back for recovery, so a stub can be (re)started while others hold the rest.
    const reserve = o.shmReserve;
    const { channel, child } = recoveryFds().use(() => (reserve ? reserve.use(() => this.launch()) : this.launch()));
    this.channel = channel;
    this.child = child;
    this.readinessPipe = readinessPipe(child);
    channel.onMessage((m) => this.route(m));
    let spawnError: Error | undefined;
    const ended = new Promise<ExitInfo>((resolve) => {
      child.once('exit', (code: number | null, signal: NodeJS.Signals | null) => resolve({ code, signal }));
      child.once('error', (err: Error) => {
        spawnError = err;
        resolve({ code: -1, signal: null });
      });
    });
    this.exited = ended.then((info) => this.onEnd(info, spawnError));
    if (traceTags.instance) traceLine('instance', `${o.label}: ${o.mode} stub spawned, pid ${child.pid ?? '(none)'}, region ${channel.region}`);
    // Supervised from the spawn on: a stub that freezes while importing model.py or inside
    // initialize is killed like one that freezes in execute.
    if (o.stubTimeoutSeconds !== undefined) this.startWatchdog(o.stubTimeoutSeconds);
    if (o.signal) {
      if (o.signal.aborted) this.kill();
      else o.signal.addEventListener('abort', () => this.kill(), { once: true });
    }
  }

  /** Creates the region and spawns the stub; a failure leaves nothing behind. */
  private launch(): { channel: StubChannel; child: StubProcess } {
    const o = this.o;
    const region = newRegionName(o.regionPrefix);
    const channel = StubChannel.create({
      region,
      defaultByteSize: o.shmDefaultByteSize,
      growthByteSize: o.shmGrowthByteSize,
      ...(o.ipcWait ? { wait: o.ipcWait } : {}),
    });
    try {
      const child = spawnStub({
        python: o.python,
        env: o.env,
        modelFile: o.modelFile,
        runtimeDir: o.runtimeDir,
        region,
        wakeFd: channel.wakeFd,
        ...(channel.segmentFds ? { segmentFds: channel.segmentFds } : {}),
        growthByteSize: o.shmGrowthByteSize,
        name: o.name,
        mode: o.mode,
        logVerbose: o.logger.settings.verbose,
        logger: o.logger,
        label: o.label,
        ipcWait: o.ipcWait,
        ...(o.cpus ? { cpus: o.cpus } : {}),
        ...(o.forks ? { forks: o.forks } : {}),
      });
      channel.stubSpawned();
      return { channel, child };
    } catch (err) {
      channel.close();
      throw err;
    }
  }

  /** False once the process exited (or never started). */
  get alive(): boolean {
    return !this.gone && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Waits for one of `types`; rejects with `deathError` if the stub ends first. */
  expect<T extends StubMessageType>(types: T[]): Promise<Extract<StubToNode, { t: T }>> {
    return new Promise((resolve, reject) => {
      if (this.gone) {
        void this.exited.then(async (exit) => reject(this.o.deathError(exit, await stderrTail(this.child))));
        return;
      }
      this.waiter = {
        types,
        resolve: (m) => {
          this.waiter = undefined;
          resolve(m as Extract<StubToNode, { t: T }>);
        },
        reject: (e) => {
          this.waiter = undefined;
          reject(e);
        },
      };
    });
  }

  /** The cause the exit will carry when the stub ends on a request of Node's (finalize). */
  expectExit(cause: string): void {
    this.exitCause = cause;
  }

  /** SIGKILL; `cause` becomes the exit's cause. */
  kill(cause?: string): void {
    if (cause !== undefined) this.exitCause = cause;
    if (this.alive) this.child.kill('SIGKILL');
  }

  /**
   * Ends the stub and removes its shared memory: waits `graceMs` for it to exit by itself
   * (the auto-complete stub does after answering), then kills it.
   */
  async dispose(graceMs = 0): Promise<void> {
    if (this.alive) {
      const t = setTimeout(() => this.kill(), graceMs);
      await this.exited;
      clearTimeout(t);
    }
    this.channel.close();
  }

  private route(m: StubToNode): void {
    if (this.waiter?.types.includes(m.t)) this.waiter.resolve(m);
    else this.onMessage(m);
  }

  private async onEnd(info: ExitInfo, spawnError: Error | undefined): Promise<StubExit> {
    this.gone = true;
    this.watchdog?.stop();
    this.watchdog = undefined;
    // Messages the stub wrote just before it ended still count (an answer, finalize's sends).
    this.channel.drain();
    const cause = spawnError ? `Failed to start '${this.o.python}': ${spawnError.message}.` : (this.exitCause ?? describeExit(info));
    const exit: StubExit = { ...info, cause, ...(spawnError ? { spawnError } : {}) };
    if (traceTags.instance)
      traceLine('instance', `${this.o.label}: stub pid ${this.child.pid ?? '(none)'} exited (code ${info.code}, signal ${info.signal}): ${cause}`);
    const waiter = this.waiter;
    if (waiter) {
      // Ended while starting (import error, missing numpy, initialize killed it): the error
      // carries what the stub last wrote on stderr.
      void stderrTail(this.child).then((tail) => waiter.reject(this.o.deathError(exit, tail)));
    }
    return exit;
  }

  /**
   * Kills the stub when its heartbeat (written every 0.5 s by a thread of the stub) stops
   * moving for stub-timeout-seconds: the process is frozen (a native call holding the GIL, a
   * deadlock, SIGSTOP). A long pure-Python execute keeps beating and is left alone, as in
   * Triton. Before the first beat (interpreter start, imports) the bound is at least 60 s.
   */
  private startWatchdog(timeoutSeconds: number): void {
    this.watchdog = new HeartbeatWatch(this.channel, timeoutSeconds, (seconds) => {
      if (!this.alive) return;
      this.o.logger.error(
        `Stub process '${this.o.name}' sent no heartbeat for ${seconds} s (stub-timeout-seconds=${timeoutSeconds}); killing it.`,
        this.o.logSource,
      );
      this.kill(`No heartbeat for ${seconds} s (stub-timeout-seconds=${timeoutSeconds}); the stub was killed.`);
    });
  }
}
