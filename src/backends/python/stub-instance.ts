/**
 * @module backends/python/stub-instance
 * One model instance = one stub process + one shared-memory region at a time. This class is the
 * composition: the core's lifecycle (core/instance/lifecycle.ts) decides when to start, restart,
 * give up and stop; each start launches a stub (launcher.ts), runs `initialize`, and opens a
 * session (stub-session.ts) that carries the requests; `dispatch` routes the stub's messages.
 *
 * A dead or hung stub fails its in-flight requests at once with Triton's text
 * `Stub process '<instance>' is not healthy.` plus the cause, and the lifecycle restarts it.
 */
import type { ShmReserve } from './ipc/shm-reserve.js';
import type { BackendInstance, InstanceHooks } from '../../core/backend.js';
import { Errors, type TritonError } from '../../core/errors.js';
import { InstanceLifecycle, lifecycleEvents } from '../../core/instance/lifecycle.js';
import { classifyStartFailure } from '../../core/instance/resource-failure.js';
import type { Logger } from '../../core/logger.js';
import type { ExecutionListener, ExecutionTimes, PendingRequest } from '../../core/scheduling/types.js';
import { BlsBroker, type ModelCalls } from './bls.js';
import { MetricCalls } from './metric-calls.js';
import type { IpcWaitOptions } from './ipc/channel.js';
import type { LogMsg, StubToNode } from './ipc/messages.js';
import { LaunchedStub, type StubExit } from './launcher.js';
import type { ForkServers } from './fork-server.js';
import { ReadinessProbe } from './readiness-probe.js';
import { PIPELINE_DEPTH, StubSession } from './stub-session.js';
import { traceLine, traceTags } from '../../core/trace-tags.js';

export interface StubInstanceOptions {
  modelName: string;
  instanceName: string;
  kind: 'CPU' | 'GPU' | 'MODEL';
  deviceId: number;
  modelFile: string;
  /**
   * A Python-based backend's directory (`<backend-directory>/<backend>`): the stub imports its
   * model.py as module `model` with this directory on sys.path, while `modelFile` still names
   * the model's version directory (get_model_dir()).
   */
  runtimeDir?: string;
  python: string;
  env?: NodeJS.ProcessEnv;
  initArgs: Record<string, string>;
  decoupled: boolean;
  shmDefaultByteSize: number;
  shmGrowthByteSize: number;
  stubTimeoutSeconds: number;
  /** `--backend-config=python,initialize-timeout-seconds`: 0 = `initialize` may run for ever. */
  initializeTimeoutSeconds?: number;
  /** `--backend-config=python,max-async-executes`: decoupled coroutines the stub runs at once; the stub's default when absent. */
  maxAsyncExecutes?: number;
  /** Non-decoupled `async def execute` coroutines the stub runs at once (1: one after another, as Triton). */
  concurrentAsyncExecutes?: number;
  /** spin-us / spin-mode for this instance's stub and its wake listener on the event loop. */
  ipcWait?: IpcWaitOptions;
  logger: Logger;
  hooks: InstanceHooks;
  /** What BLS and model-control calls from model.py reach (bls.ts); without it they are not answered. */
  calls?: ModelCalls;
  /** CPUs of the instance's host policy (`--host-policy`). */
  cpus?: readonly number[];
  /** The backend's fork servers; its stubs are spawned when absent. */
  forks?: ForkServers;
  /** /dev/shm space held back for this instance's restarts (shared by the backend's instances). */
  shmReserve?: ShmReserve;
}

/** One running stub of the instance: the process and its channel, its requests, its `is_ready()`. */
interface Incarnation {
  stub: LaunchedStub;
  session: StubSession;
  /** Only when the model defines `is_ready()` (the stub says so in `init_ok`). */
  readiness?: ReadinessProbe;
  /** The stub's calls to the server (BLS, model control). */
  bls?: BlsBroker;
  metrics?: MetricCalls;
}

export class StubInstance implements BackendInstance {
  readonly name: string;
  readonly kind: 'CPU' | 'GPU' | 'MODEL';
  readonly deviceId: number;
  readonly pipelineDepth = PIPELINE_DEPTH;
  private readonly life: InstanceLifecycle<Incarnation>;

  constructor(private readonly o: StubInstanceOptions) {
    this.name = o.instanceName;
    this.kind = o.kind;
    this.deviceId = o.deviceId;
    this.life = new InstanceLifecycle<Incarnation>({
      name: this.name,
      label: `Stub process '${this.name}'`,
      logSource: o.modelName,
      logger: o.logger,
      events: lifecycleEvents(this, o.hooks),
      classifyStartFailure,
      incarnations: {
        start: (signal) => this.incarnate(signal),
        discard: (inc) => inc.stub.dispose(),
        stop: (inc, how) => this.stopIncarnation(inc, how.graceful, how.timeoutMs),
        kill: (inc) => {
          const cause = 'The server is exiting immediately; the stub was killed.';
          inc.stub.kill(cause);
          // Its requests fail now, before the region goes (the exit comes after).
          inc.session.fail(Errors.stubUnhealthy(this.name, cause));
          inc.stub.channel.close();
        },
      },
    });
  }

  /** Why the instance is not ready (shown by readiness checks and the index). */
  get reason(): string {
    return this.life.reason;
  }

  /** True once supervision gave up on this instance: it stays down until the model is reloaded. */
  get gaveUp(): boolean {
    return this.life.gaveUp;
  }

  isReady(): boolean {
    return this.life.isReady();
  }

  /**
   * The model's `is_ready()`, for readiness endpoints only: resolves with why it says the
   * instance is not ready (False, an exception, a non-bool, no answer within 5 s), else
   * undefined. A model without `is_ready()` costs nothing here.
   */
  checkReady(): Promise<TritonError | undefined> {
    const readiness = this.life.isReady() ? this.life.current?.readiness : undefined;
    return readiness ? readiness.check() : Promise.resolve(undefined);
  }

  /** First start: rejects with the load error (initialize exception, spawn failure). */
  async start(): Promise<void> {
    // The model manager warms a new model up before it reports READY.
    await this.life.start();
  }

  /** Launches a stub and runs `initialize`; on failure the stub is gone when this rejects. */
  private async incarnate(signal: AbortSignal): Promise<Incarnation> {
    const o = this.o;
    const stub = new LaunchedStub({
      python: o.python,
      env: o.env,
      modelFile: o.modelFile,
      runtimeDir: o.runtimeDir,
      name: this.name,
      mode: 'instance',
      regionPrefix: this.name,
      shmDefaultByteSize: o.shmDefaultByteSize,
      shmGrowthByteSize: o.shmGrowthByteSize,
      ipcWait: o.ipcWait,
      logger: o.logger,
      label: `${o.modelName}/${this.name}`,
      logSource: o.modelName,
      stubTimeoutSeconds: o.stubTimeoutSeconds,
      ...(o.cpus ? { cpus: o.cpus } : {}),
      ...(o.shmReserve ? { shmReserve: o.shmReserve } : {}),
      ...(o.forks ? { forks: o.forks } : {}),
      signal,
      deathError: (exit, tail) => {
        const err = Errors.stubUnhealthy(this.name, exit.cause);
        return tail ? Errors.withStderr(err, tail) : err;
      },
    });
    const inc: Incarnation = { stub, session: new StubSession(stub.channel, { instanceName: this.name, decoupled: o.decoupled }) };
    if (o.calls)
      inc.bls = new BlsBroker(o.calls, this.name, {
        signalOf: (rid) => inc.session.signalOf(rid),
        traceOf: (rid) => inc.session.traceOf(rid),
      });
    if (o.calls?.customMetrics) inc.metrics = new MetricCalls(o.calls.customMetrics);
    stub.onMessage = (m) => this.dispatch(inc, m);
    void stub.exited.then((exit) => this.onExit(inc, exit));
    const label = `${o.modelName}/${this.name}`;
    try {
      await stub.expect(['hello']);
      if (traceTags.instance) traceLine('instance', `${label}: stub pid ${stub.child.pid} said hello; running initialize`);
      stub.channel.send({
        t: 'init',
        args: o.initArgs,
        ...(o.maxAsyncExecutes ? { async_limit: o.maxAsyncExecutes } : {}),
        ...((o.concurrentAsyncExecutes ?? 1) > 1 ? { concurrent_executes: o.concurrentAsyncExecutes } : {}),
      });
      const reply = await this.bounded(stub.expect(['init_ok', 'init_err']));
      if (reply.t === 'init_err') throw Errors.initializeFailed(String(reply.msg));
      if (reply.ready_fn === true && stub.readinessPipe) inc.readiness = new ReadinessProbe(stub.readinessPipe, this.name);
      if (traceTags.instance) traceLine('instance', `${label}: initialize returned; the stub can serve`);
      return inc;
    } catch (err) {
      if (traceTags.instance) traceLine('instance', `${label}: start failed: ${(err as Error).message}`);
      await stub.dispose();
      throw err;
    }
  }

  /**
   * `initialize` under `initialize-timeout-seconds`: past it the load fails with a text naming
   * the setting (the caller disposes of the stub, killing it). Unbounded by default, as in Triton.
   */
  private bounded<T>(reply: Promise<T>): Promise<T> {
    const secs = this.o.initializeTimeoutSeconds ?? 0;
    if (!(secs > 0)) return reply;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Errors.initializeTimeout(this.name, secs)), secs * 1000);
    });
    return Promise.race([reply, timeout]).finally(() => clearTimeout(timer));
  }

  /** Every message of a stub that no handshake waits for. */
  private dispatch(inc: Incarnation, m: StubToNode): void {
    switch (m.t) {
      case 'exec_done':
        inc.session.execDone(m);
        break;
      case 'send':
        inc.session.sent(m);
        break;
      case 'log':
        this.onLog(m);
        break;
      case 'ready_done':
        inc.readiness?.answered(m);
        break;
      case 'metric':
        inc.metrics?.onMessage(inc.stub.channel, m);
        break;
      default:
        inc.bls?.onMessage(inc.stub.channel, m);
        break;
    }
  }

  private onLog(m: LogMsg): void {
    const src = m.file ? `${m.file}:${m.line ?? 0}` : `${this.o.modelName}/${this.name}`;
    const text = `[${this.o.modelName}/${this.name}] ${m.msg}`;
    if (m.level === 'ERROR') this.o.logger.error(text, src);
    else if (m.level === 'WARNING') this.o.logger.warn(text, src);
    else if (m.level === 'VERBOSE') this.o.logger.verbose(1, text, src);
    else this.o.logger.info(text, src);
  }

  /** The stub is gone: its requests fail with the cause, its memory goes, the lifecycle decides. */
  private onExit(inc: Incarnation, exit: StubExit): void {
    const err = Errors.stubUnhealthy(this.name, exit.cause);
    inc.metrics?.release();
    inc.readiness?.abandon(err);
    inc.session.fail(err);
    // BLS targets may still read the inputs this stub wrote: its region goes once they answered.
    const targetsOpen = inc.bls?.abandon();
    if (targetsOpen) void targetsOpen.then(() => inc.stub.channel.close());
    else inc.stub.channel.close();
    this.life.died(inc, err.message);
  }

  /** The schedulers' way in (ExecutionInstance.run): the serving stub's session runs the batch. */
  run(batch: PendingRequest[], done: ExecutionListener): void {
    const inc = this.life.serving;
    if (!inc) {
      const startNs = process.hrtime.bigint();
      const err = Errors.stubUnhealthy(this.name, this.life.reason);
      for (const pr of batch) pr.fail(err);
      const t = process.hrtime.bigint();
      queueMicrotask(() => done.executed({ startNs, inputEndNs: t, inferEndNs: t, endNs: t }));
      return;
    }
    inc.session.run(batch, done);
  }

  /** Warm-up's way in: run() as a promise. */
  execute(batch: PendingRequest[]): Promise<ExecutionTimes> {
    return new Promise((resolve) => this.run(batch, { executed: resolve }));
  }

  /** A ready stub runs finalize (bounded by `timeoutMs`), others are killed; memory removed. */
  private async stopIncarnation(inc: Incarnation, graceful: boolean, timeoutMs: number): Promise<void> {
    const { stub } = inc;
    if (!stub.alive) {
      stub.channel.close();
      return;
    }
    if (graceful) {
      // Requests still open here wait for a sender FINAL the model never sent (the server
      // drained what it could); they fail when the stub exits, saying why.
      stub.expectExit('The instance was stopped before the model sent the FINAL response.');
      stub.channel.send({ t: 'fin' });
    } else {
      stub.kill();
    }
    const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), timeoutMs).unref());
    const outcome = await Promise.race([stub.exited, timer]);
    if (outcome === 'timeout') {
      this.o.logger.warn(`finalize of '${this.name}' did not end within ${timeoutMs} ms; killing the stub.`, this.o.modelName);
      stub.kill(`The server is shutting down and the stub did not stop within the exit timeout (${timeoutMs} ms); it was killed.`);
      await stub.exited;
    }
    await inc.bls?.abandon();
    inc.metrics?.release();
    stub.channel.close();
  }

  /** Calls finalize (bounded by `timeoutMs`), then kills the stub and removes its memory. */
  stop(timeoutMs: number): Promise<void> {
    return this.life.stop(timeoutMs);
  }

  /** Immediate stop (second signal): no finalize, shared memory removed now. */
  kill(): void {
    this.life.kill();
  }

  /** Passes a new verbose log level on to the stub (it filters VERBOSE records itself). */
  setLogVerbose(level: number): void {
    this.life.serving?.stub.channel.send({ t: 'loglevel', verbose: level });
  }

  get modelName(): string {
    return this.o.modelName;
  }

  /** Shared-memory bytes mapped for this instance (metrics). */
  shmBytes(): number {
    return this.life.current?.stub.channel.bytesInUse() ?? 0;
  }

  /** For tests and supervision: the stub's pid. */
  get pid(): number | undefined {
    return this.life.current?.stub.child.pid;
  }
}
