/**
 * @module backends/python/stub-instance
 * One model instance = one stub process + one shared-memory region. This class starts the stub,
 * runs `initialize`, turns scheduled batches into `exec` messages, routes responses (returned
 * ones and response-sender ones) back to their requests, and supervises the process:
 *
 *   starting ──hello/init_ok──► ready ──exit/hang──► restarting ──► starting ...
 *       │                                                 │ (too many failed starts)
 *       └──────────────── init_err (first start) ─────────┴──► failed
 *
 * A dead or hung stub fails its in-flight requests at once with Triton's text
 * `Stub process '<instance>' is not healthy.` plus the cause, and is restarted with back-off
 * (tritium policy; Triton stopped restarting stubs in 24.06).
 */
import type { ChildProcess } from 'node:child_process';
import type { BackendInstance, InstanceHooks } from '../../core/backend.js';
import { Errors, type TritonError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { ExecutionTimes, PendingRequest } from '../../core/scheduling/types.js';
import type { Tensor } from '../../core/tensor.js';
import { readParameters } from '../../core/request/parameters.js';
import { readOutput, writeInput, type Block } from './codec.js';
import { StubChannel, newRegionName, type IpcWaitOptions } from './ipc/channel.js';
import type { ExecDoneMsg, ExecRequestWire, LogMsg, RespWire, SendMsg, StubMessageType, StubToNode } from './ipc/messages.js';
import { ReadinessProbe } from './readiness-probe.js';
import { describeExit, readinessPipe, spawnStub, stderrTail, type ExitInfo } from './stub-process.js';

export interface StubInstanceOptions {
  modelName: string;
  instanceName: string;
  kind: 'CPU' | 'GPU' | 'MODEL';
  deviceId: number;
  modelFile: string;
  python: string;
  env?: NodeJS.ProcessEnv;
  initArgs: Record<string, string>;
  decoupled: boolean;
  shmDefaultByteSize: number;
  shmGrowthByteSize: number;
  stubTimeoutSeconds: number;
  /** spin-us / spin-mode for this instance's stub and its wake listener on the event loop. */
  ipcWait?: IpcWaitOptions;
  logger: Logger;
  hooks: InstanceHooks;
  /** Consecutive failed starts after which the instance gives up. */
  maxRestarts?: number;
}

/** `warming`: initialised, running warmup samples; executes allowed, not ready for traffic. */
type State = 'starting' | 'warming' | 'ready' | 'restarting' | 'failed' | 'stopping' | 'stopped';

interface LiveRequest {
  pr: PendingRequest;
  /** Input blocks and the cancel flag, freed when the request is finished with. */
  blocks: Block[];
  /** Non-decoupled: a response sent through the sender without FINAL, waiting for FINAL. */
  held?: RespWire;
  /** Removes the abort listener. */
  detach?: () => void;
}

interface Batch {
  id: number;
  rids: number[];
  requests: PendingRequest[];
  startNs: bigint;
  inputEndNs: bigint;
  /** Sent while another batch ran: it starts when that one is answered. */
  queued: boolean;
  resolve: (t: ExecutionTimes) => void;
}

/**
 * Batches handed to a stub before the one it runs is answered (see ExecutionInstance
 * .pipelineDepth): with 2 the stub finds its next request in ring A the moment it answers, and
 * neither side sleeps in between under load.
 */
const PIPELINE_DEPTH = 2;

export class StubInstance implements BackendInstance {
  readonly name: string;
  readonly kind: 'CPU' | 'GPU' | 'MODEL';
  readonly deviceId: number;
  private state: State = 'starting';
  private channel: StubChannel | undefined;
  private child: ChildProcess | undefined;
  private readonly live = new Map<number, LiveRequest>();
  /** Sent to the stub and not answered yet, in the order the stub runs them. */
  private readonly inFlight: Batch[] = [];
  readonly pipelineDepth = PIPELINE_DEPTH;
  private nextRid = 1;
  private nextBatch = 1;
  private failedStarts = 0;
  private watchdog: NodeJS.Timeout | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private waiter: { resolve: (m: StubToNode) => void; reject: (e: Error) => void; types: StubMessageType[] } | undefined;
  private exited: Promise<ExitInfo> | undefined;
  /** Why the instance is not ready (shown by readiness checks and the index). */
  reason = '';
  /** Only when the model defines `is_ready()` (the stub says so in `init_ok`). */
  private readiness: ReadinessProbe | undefined;

  constructor(private readonly o: StubInstanceOptions) {
    this.name = o.instanceName;
    this.kind = o.kind;
    this.deviceId = o.deviceId;
  }

  isReady(): boolean {
    return this.state === 'ready';
  }

  /**
   * The model's `is_ready()`, for readiness endpoints only: resolves with why it says the
   * instance is not ready (False, an exception, a non-bool, no answer within 5 s), else
   * undefined. A model without `is_ready()` costs nothing here.
   */
  checkReady(): Promise<TritonError | undefined> {
    if (this.state !== 'ready' || !this.readiness) return Promise.resolve(undefined);
    return this.readiness.check();
  }

  /** First start: rejects with the load error (initialize exception, spawn failure). */
  async start(): Promise<void> {
    await this.launch();
    // The model manager warms a new model up before it reports READY.
    this.markReady();
  }

  private async launch(): Promise<void> {
    this.state = 'starting';
    const region = newRegionName(this.name);
    const channel = StubChannel.create({
      region,
      defaultByteSize: this.o.shmDefaultByteSize,
      growthByteSize: this.o.shmGrowthByteSize,
      ...(this.o.ipcWait ? { wait: this.o.ipcWait } : {}),
    });
    this.channel = channel;
    channel.onMessage((m) => this.onMessage(channel, m));
    const child = spawnStub({
      python: this.o.python,
      env: this.o.env,
      modelFile: this.o.modelFile,
      region,
      wakeFd: channel.wakeFd,
      growthByteSize: this.o.shmGrowthByteSize,
      name: this.name,
      mode: 'instance',
      logVerbose: this.o.logger.settings.verbose,
      logger: this.o.logger,
      label: `${this.o.modelName}/${this.name}`,
      ipcWait: this.o.ipcWait,
    });
    this.child = child;
    const pipe = readinessPipe(child);
    this.readiness = undefined;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.once('error', () => resolve({ code: -1, signal: null }));
    });
    let spawnError: Error | undefined;
    child.once('error', (err) => {
      spawnError = err;
    });
    void this.exited.then((info) => this.onExit(child, channel, info, spawnError));
    // Supervised from the spawn on: a stub that freezes while importing model.py or inside
    // initialize is killed like one that freezes in execute.
    this.startWatchdog(channel, child);
    await this.expect(['hello'], 'the stub to start');
    channel.send({ t: 'init', args: this.o.initArgs });
    const reply = await this.expect(['init_ok', 'init_err'], 'initialize');
    if (reply.t === 'init_err') {
      throw Errors.initializeFailed(String(reply.msg));
    }
    if (reply.ready_fn === true && pipe) this.readiness = new ReadinessProbe(pipe, this.name);
    this.state = 'warming';
  }

  private markReady(): void {
    this.state = 'ready';
    this.reason = '';
    this.deathCause = '';
    this.failedStarts = 0;
  }

  /** Waits for one of `types`; rejects if the stub dies first. */
  private expect<T extends StubMessageType>(types: T[], what: string): Promise<Extract<StubToNode, { t: T }>> {
    return new Promise((resolve, reject) => {
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
      void what;
    });
  }

  private onMessage(channel: StubChannel, m: StubToNode): void {
    if (channel !== this.channel) return;
    if (this.waiter?.types.includes(m.t)) {
      this.waiter.resolve(m);
      return;
    }
    switch (m.t) {
      case 'exec_done':
        this.onExecDone(channel, m);
        break;
      case 'send':
        this.onSend(channel, m);
        break;
      case 'log':
        this.onLog(m);
        break;
      case 'ready_done':
        this.readiness?.answered(m);
        break;
      default:
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

  async execute(batch: PendingRequest[]): Promise<ExecutionTimes> {
    const startNs = process.hrtime.bigint();
    const channel = this.channel;
    if ((this.state !== 'ready' && this.state !== 'warming') || !channel) {
      const err = Errors.stubUnhealthy(this.name, this.reason);
      for (const pr of batch) pr.fail(err);
      const t = process.hrtime.bigint();
      return { startNs, inputEndNs: t, inferEndNs: t, endNs: t };
    }
    const reqs: ExecRequestWire[] = [];
    const rids: number[] = [];
    try {
      for (const pr of batch) {
        const rid = this.nextRid++;
        const blocks: Block[] = [];
        const live: LiveRequest = { pr, blocks };
        this.live.set(rid, live);
        rids.push(rid);
        const inputs = pr.request.inputs.map((t) => writeInput(channel, t, blocks));
        const flag = channel.allocInput(4);
        flag.view.writeUInt32LE(pr.cancelled ? 1 : 0, 0);
        blocks.push([flag.seg, flag.off]);
        const signal = pr.request.signal;
        if (signal && !signal.aborted) {
          const onAbort = () => flag.view.writeUInt32LE(1, 0);
          signal.addEventListener('abort', onAbort, { once: true });
          live.detach = () => signal.removeEventListener('abort', onAbort);
        }
        reqs.push({
          rid,
          id: pr.request.id,
          ...requestFields(pr),
          timeout: pr.timeoutUs,
          outs: requestedOutputs(pr),
          inputs,
          cflag: [flag.seg, flag.off],
        });
      }
    } catch (err) {
      // Shared memory exhausted: only this batch fails, with the reason.
      const e = Errors.batchSendFailed((err as Error).message);
      for (const rid of rids) this.finish(channel, rid, undefined, e);
      const t = process.hrtime.bigint();
      return { startNs, inputEndNs: t, inferEndNs: t, endNs: t };
    }
    const id = this.nextBatch++;
    return new Promise<ExecutionTimes>((resolve) => {
      const inputEndNs = process.hrtime.bigint();
      this.inFlight.push({ id, rids, requests: batch, startNs, inputEndNs, queued: this.inFlight.length > 0, resolve });
      channel.send({ t: 'exec', id, reqs });
    });
  }

  private onExecDone(channel: StubChannel, m: ExecDoneMsg): void {
    const batch = this.inFlight[0];
    if (!batch || batch.id !== m.id) return;
    this.inFlight.shift();
    const inferEndNs = process.hrtime.bigint();
    const next = this.inFlight[0];
    if (next?.queued) {
      // It waited in ring A behind this one: that wait is queue time, and its execution
      // starts now (its inputs were copied when it was sent).
      next.startNs = next.inputEndNs = inferEndNs;
      for (const pr of next.requests) pr.queueEndNs = inferEndNs;
    }
    const batchError = m.err !== undefined ? Errors.executeFailed(m.err) : undefined;
    // The instance is free as soon as the stub answered: resolve first, so the scheduler's
    // continuation (a microtask) sends the next batch to the stub, and write this batch's
    // responses to the clients afterwards (setImmediate), while the stub already works.
    // Requests stay in `live` until then, so a stub death in between still fails them
    // instead of reading the dead region.
    batch.resolve({ startNs: batch.startNs, inputEndNs: batch.inputEndNs, inferEndNs, endNs: process.hrtime.bigint() });
    const rescheduled = new Set(m.resched ?? []);
    setImmediate(() => this.settle(channel, batch.rids, m.resps, batchError, rescheduled));
  }

  /**
   * Answers the requests of a finished batch from its `exec_done`. A request without a
   * returned response stays open: its response sender may still answer after execute
   * returned, from another thread (as in Triton). It ends with a sender FINAL, the stub's
   * notice that the model dropped it (`send` with FINAL, see RequestSlot.__del__), or the
   * instance stopping (onExit) — never by waiting here.
   */
  private settle(
    channel: StubChannel,
    rids: number[],
    resps: Array<RespWire | null> | undefined,
    batchError: TritonError | undefined,
    rescheduled: Set<number>,
  ): void {
    if (channel !== this.channel) return;
    rids.forEach((rid, i) => {
      const live = this.live.get(rid);
      if (!live) return;
      if (batchError) {
        // A non-decoupled response already sent through the sender stays the answer (Triton
        // hands it to the client before the batch fails); the model saw the error raised.
        if (!this.o.decoupled && live.held !== undefined) this.finish(channel, rid, live.held);
        else this.finish(channel, rid, undefined, batchError);
        return;
      }
      const resp = resps?.[i] ?? null;
      if (resp) {
        this.finish(channel, rid, resp);
      } else if (!this.o.decoupled && rescheduled.has(i)) {
        // Rescheduling is not implemented on the Node side: answer instead of hanging.
        this.finish(channel, rid, undefined, Errors.noResponse(this.name));
      } else if (!this.o.decoupled && live.pr.done) {
        this.release(channel, rid);
      }
    });
  }

  private onSend(channel: StubChannel, m: SendMsg): void {
    const live = this.live.get(m.rid);
    if (!live) {
      if (m.resp?.outs) channel.releaseOutputs(m.resp.outs.map((d) => [d[3], d[4]] as Block));
      return;
    }
    const final = (m.flags & 1) === 1;
    if (!this.o.decoupled) {
      // Non-decoupled: one response, delivered once FINAL arrives (possibly in the same send).
      if (m.resp) live.held = m.resp;
      if (final) this.finish(channel, m.rid, live.held ?? {}, undefined);
      return;
    }
    if (m.resp) this.deliver(channel, live, m.resp, final);
    else if (final) this.deliver(channel, live, {}, true, true);
    if (final) this.release(channel, m.rid);
  }

  /** Sends one response to the request; the final one frees its blocks. */
  private finish(channel: StubChannel, rid: number, resp: RespWire | undefined, error?: TritonError): void {
    const live = this.live.get(rid);
    if (!live) return;
    if (error) live.pr.fail(error);
    else this.deliver(channel, live, resp ?? {}, true);
    this.release(channel, rid);
  }

  private deliver(channel: StubChannel, live: LiveRequest, resp: RespWire, final: boolean, flagsOnly = false): void {
    const pr = live.pr;
    if (resp.err) {
      const [code, msg] = resp.err;
      if (resp.outs?.length) channel.releaseOutputs(resp.outs.map((d) => [d[3], d[4]] as Block));
      pr.respond({
        modelName: pr.request.modelName,
        modelVersion: '',
        id: pr.request.id,
        outputs: [],
        error: Errors.modelRaised(code, msg),
        final,
      });
      return;
    }
    const blocks: Block[] = [];
    const outputs: Tensor[] = (resp.outs ?? []).map((d) => readOutput(channel, d, blocks));
    let released = blocks.length === 0;
    pr.respond({
      modelName: pr.request.modelName,
      modelVersion: (pr as { version?: string }).version ?? '',
      id: pr.request.id,
      parameters: resp.params ? parseParams(resp.params) : undefined,
      outputs,
      final,
      flagsOnly: flagsOnly || undefined,
      release: () => {
        if (released) return;
        released = true;
        // The region may have been replaced by a restart; its old blocks died with it.
        if (channel === this.channel) channel.releaseOutputs(blocks);
      },
    });
  }

  private release(channel: StubChannel, rid: number): void {
    const live = this.live.get(rid);
    if (!live) return;
    this.live.delete(rid);
    live.detach?.();
    if (channel === this.channel) for (const [seg, off] of live.blocks) channel.freeInput(seg, off);
  }

  /**
   * Kills the stub when its heartbeat (written every 100 ms by a thread of the stub) stops
   * moving for stub-timeout-seconds: the process is frozen (a native call holding the GIL, a
   * deadlock, SIGSTOP). A long pure-Python execute keeps beating and is left alone, as in
   * Triton. Before the first beat (interpreter start, imports) the bound is at least 60 s.
   */
  private startWatchdog(channel: StubChannel, child: ChildProcess): void {
    if (this.watchdog) clearInterval(this.watchdog);
    const periodMs = 1000;
    const limit = Math.max(1, Math.ceil((this.o.stubTimeoutSeconds * 1000) / periodMs));
    const startLimit = Math.max(limit, 60);
    let last = channel.heartbeatMs();
    let stale = 0;
    const timer = setInterval(() => {
      if (child !== this.child || child.exitCode !== null || child.signalCode !== null) {
        clearInterval(timer);
        return;
      }
      const hb = channel.heartbeatMs();
      if (hb !== last) {
        last = hb;
        stale = 0;
        return;
      }
      if (++stale >= (hb === 0 ? startLimit : limit)) {
        clearInterval(timer);
        this.o.logger.error(
          `Stub process '${this.name}' sent no heartbeat for ${stale} s (stub-timeout-seconds=${this.o.stubTimeoutSeconds}); killing it.`,
          this.o.modelName,
        );
        this.killCause = `No heartbeat for ${stale} s (stub-timeout-seconds=${this.o.stubTimeoutSeconds}); the stub was killed.`;
        child.kill('SIGKILL');
      }
    }, periodMs);
    timer.unref();
    this.watchdog = timer;
  }

  /** Set just before Node kills the stub itself, so the failure says why. */
  private killCause: string | undefined;
  /** Why the last ready stub died (kept for the reason shown after restarts failed). */
  private deathCause = '';

  private onExit(child: ChildProcess, channel: StubChannel, info: ExitInfo, spawnError: Error | undefined): void {
    if (child !== this.child) return;
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = undefined;
    // Responses the stub wrote just before it died still count (e.g. finalize after sends).
    channel.drain();
    const cause = spawnError ? `Failed to start '${this.o.python}': ${spawnError.message}.` : (this.killCause ?? describeExit(info));
    this.killCause = undefined;
    const err = Errors.stubUnhealthy(this.name, cause);
    this.readiness?.abandon(err);
    this.readiness = undefined;
    // Everything in flight fails now, not at a client timeout.
    for (const rid of [...this.live.keys()]) this.finish(channel, rid, undefined, err);
    for (const b of this.inFlight.splice(0)) {
      const t = process.hrtime.bigint();
      b.resolve({ startNs: b.startNs, inputEndNs: b.inputEndNs, inferEndNs: t, endNs: t });
    }
    channel.close();
    if (this.channel === channel) this.channel = undefined;
    const wasReady = this.state === 'ready';
    // A stub that dies while starting is reported through the start's rejection (below); the
    // reason of a restart that failed must not be replaced by the exit that followed it.
    if (wasReady) {
      this.reason = err.message;
      this.deathCause = err.message;
    }
    if (this.waiter) {
      // Died while starting (import error, missing numpy, initialize killed it): the load
      // error carries what the stub last wrote on stderr.
      const waiter = this.waiter;
      void stderrTail(child).then((tail) => waiter.reject(tail ? Errors.withStderr(err, tail) : err));
    }
    if (this.state === 'stopping' || this.state === 'stopped') {
      this.state = 'stopped';
      return;
    }
    if (wasReady) {
      this.state = 'restarting';
      this.o.hooks.onReadinessChange(this, false);
      this.o.logger.error(`${err.message} Restarting it.`, this.o.modelName);
      this.scheduleRestart();
    }
  }

  private scheduleRestart(): void {
    this.state = 'restarting';
    const max = this.o.maxRestarts ?? 5;
    if (this.failedStarts >= max) {
      this.state = 'failed';
      const died = this.deathCause || `Stub process '${this.name}' is not healthy.`;
      this.reason = `${died} Restarting it failed ${max} times in a row, so it will not be restarted again; last error: ${this.lastStartError}`;
      this.o.logger.error(this.reason, this.o.modelName);
      this.o.hooks.onReadinessChange(this, false);
      return;
    }
    const delay = Math.min(10_000, 250 * 2 ** this.failedStarts);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.state !== 'restarting') return;
      this.restarts++;
      this.launch()
        .then(async () => {
          // A restarted stub runs the model's warmup samples before it takes traffic again.
          await this.o.hooks.warmup(this);
          this.markReady();
        })
        .then(
          () => {
            this.o.hooks.onRestart(this);
            this.o.hooks.onReadinessChange(this, true);
            this.o.logger.info(`Stub process '${this.name}' restarted (restart ${this.restarts}).`, this.o.modelName);
          },
          (e: Error) => {
            this.failedStarts++;
            this.lastStartError = e.message;
            this.reason = `${this.deathCause} Restart ${this.failedStarts} failed: ${e.message}`.trim();
            this.o.logger.error(`Restart of '${this.name}' failed (${this.failedStarts} in a row): ${e.message}`, this.o.modelName);
            this.child?.kill('SIGKILL');
            if (this.state !== 'stopping' && this.state !== 'stopped') this.scheduleRestart();
          },
        );
    }, delay);
  }

  private lastStartError = '';
  /** Restarts attempted since load (successful or not). */
  private restarts = 0;

  /** True once supervision gave up on this instance: it stays down until the model is reloaded. */
  get gaveUp(): boolean {
    return this.state === 'failed';
  }

  /** Calls finalize (bounded by `timeoutMs`), then kills the stub and removes its memory. */
  async stop(timeoutMs: number): Promise<void> {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const prior = this.state;
    this.state = 'stopping';
    const child = this.child;
    const channel = this.channel;
    if (!child || !this.exited || child.exitCode !== null || child.signalCode !== null) {
      channel?.close();
      this.state = 'stopped';
      return;
    }
    if (prior === 'ready' && channel) {
      // Requests still open here wait for a sender FINAL the model never sent (the server
      // drained what it could); they fail when the stub exits, saying why.
      this.killCause = 'The instance was stopped before the model sent the FINAL response.';
      channel.send({ t: 'fin' });
    } else {
      child.kill('SIGKILL');
    }
    const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), timeoutMs).unref());
    const outcome = await Promise.race([this.exited, timer]);
    if (outcome === 'timeout') {
      this.o.logger.warn(`finalize of '${this.name}' did not end within ${timeoutMs} ms; killing the stub.`, this.o.modelName);
      this.killCause = `The server is shutting down and the stub did not stop within the exit timeout (${timeoutMs} ms); it was killed.`;
      child.kill('SIGKILL');
      await this.exited;
    }
    channel?.close();
    this.state = 'stopped';
  }

  /** Passes a new verbose log level on to the stub (it filters VERBOSE records itself). */
  setLogVerbose(level: number): void {
    if (this.state === 'ready' || this.state === 'warming') this.channel?.send({ t: 'loglevel', verbose: level });
  }

  /** Immediate stop (second signal): no finalize, shared memory removed now. */
  kill(): void {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.state = 'stopped';
    this.killCause = 'The server is exiting immediately; the stub was killed.';
    this.child?.kill('SIGKILL');
    this.channel?.close();
  }

  get modelName(): string {
    return this.o.modelName;
  }

  /** Shared-memory bytes mapped for this instance (metrics). */
  shmBytes(): number {
    return this.channel?.bytesInUse() ?? 0;
  }

  /** For tests and supervision: the stub's pid. */
  get pid(): number | undefined {
    return this.child?.pid;
  }
}

/** Fields of the `exec` message derived from request parameters (sequence, custom). */
function requestFields(pr: PendingRequest) {
  const p = readParameters(pr.request.parameters);
  const custom = Object.keys(p.custom).length ? JSON.stringify(p.custom, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)) : '{}';
  return {
    corr: typeof p.sequenceId === 'bigint' ? (p.sequenceId <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(p.sequenceId) : p.sequenceId) : p.sequenceId,
    flags: (p.sequenceStart ? 1 : 0) | (p.sequenceEnd ? 2 : 0),
    params: custom,
  };
}

function requestedOutputs(pr: PendingRequest): string[] | null {
  return pr.request.outputs ? pr.request.outputs.map((o) => o.name) : null;
}

function parseParams(json: string): Record<string, string | number | boolean> | undefined {
  try {
    const v = JSON.parse(json) as Record<string, string | number | boolean>;
    return Object.keys(v).length ? v : undefined;
  } catch {
    return undefined;
  }
}
