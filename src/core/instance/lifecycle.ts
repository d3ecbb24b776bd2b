/**
 * @module core/instance/lifecycle
 * The one supervision policy of model instances, whatever their backend. A backend supplies
 * "start one incarnation" (a stub process, an onnxruntime worker), "stop/discard it" and tells
 * the lifecycle when one died; the lifecycle decides everything else:
 *
 *   starting ──started──► ready ──died──► restarting ──back-off──► starting ──► warming ──► ready
 *      │ (first start fails: the load error)    │ (N failed starts in a row)        │ (warmup failed,
 *      ▼                                        ▼                                    │  died: a failed start)
 *    failed                                   failed                                 └──► restarting
 *   stop() from any state: stopping ──► stopped
 *
 * - Back-off: 250 ms before the first restart attempt, doubling up to 10 s.
 * - Give-up: after 5 consecutive failed starts the instance is `failed` for good (until the
 *   model is reloaded); `gaveUp` tells the model manager.
 * - Warmup on restart: a restarted incarnation runs the model's warmup samples (`warming`:
 *   executes allowed, not ready) before it takes traffic; a failing warmup is a failed start.
 *   The first start is warmed up by the model manager before the version turns READY.
 * - Readiness and reason: `isReady()`, `reason` (why not ready), readiness changes and
 *   successful restarts go to the core through `LifecycleEvents`.
 *
 * This is tritium's policy (docs/design.md, "Policies beyond Triton"); Triton stopped restarting
 * Python stubs in 24.06.
 */
import type { BackendInstance, InstanceHooks } from '../backend.js';
import type { Logger } from '../logger.js';
import { traceLine, traceTags } from '../trace-tags.js';

export type LifecycleState = 'starting' | 'warming' | 'ready' | 'restarting' | 'failed' | 'stopping' | 'stopped';

/** What a backend knows how to do with one incarnation of an instance. */
export interface Incarnations<T> {
  /**
   * Starts one incarnation up to the point where it can execute. Rejects with why it could not,
   * having disposed of whatever it created. `signal` aborts when the instance is stopped
   * meanwhile: the start should then end (reject) soon.
   */
  start(signal: AbortSignal): Promise<T>;
  /** Ends an incarnation the lifecycle gives up on (warmup failed, stopped while starting). */
  discard(incarnation: T): Promise<void>;
  /** Stops the serving incarnation for good; `graceful` when it was ready (run finalize). */
  stop(incarnation: T, how: { graceful: boolean; timeoutMs: number }): Promise<void>;
  /** Immediate stop: no finalize, resources removed now. */
  kill(incarnation: T): void;
}

/** What the lifecycle tells the core (InstanceHooks bound to one instance, see hooksFor). */
export interface LifecycleEvents {
  onReadinessChange(ready: boolean): void;
  onRestart(): void;
  warmup(): Promise<void>;
}

export interface RestartPolicy {
  /** Delay before the first restart attempt; doubles after each failed one. */
  firstDelayMs: number;
  maxDelayMs: number;
  /** Consecutive failed starts after which the instance gives up. */
  maxFailedStarts: number;
  /** Interval between attempts while starts fail for lack of resources (never gives up). */
  transientRetryMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicy = { firstDelayMs: 250, maxDelayMs: 10_000, maxFailedStarts: 5, transientRetryMs: 2_000 };

/**
 * How a failed start counts. A `crash` (the stub died on its own, initialize raised) counts
 * towards the give-up. A `shortage` (the host ran out of descriptors, memory, processes or
 * /dev/shm space; resource-failure.ts; named by its errno) is retried every `transientRetryMs`
 * for as long as it lasts and not counted, since the instance itself is fine: it turns ready by
 * itself once the resource is back.
 */
export type StartFailure = 'crash' | { shortage: string };

export interface LifecycleOptions<T> {
  /** The instance name, as log lines give it (`Restart of '<name>' failed ...`). */
  name: string;
  /** How the instance is called in sentences: `Stub process 'add_sub_0_0'`. */
  label: string;
  /** Source of the log lines (the model name, or the backend). */
  logSource: string;
  logger: Logger;
  incarnations: Incarnations<T>;
  events: LifecycleEvents;
  policy?: Partial<RestartPolicy>;
  classifyStartFailure?: (err: Error) => StartFailure;
}

export class InstanceLifecycle<T> {
  private state_: LifecycleState = 'starting';
  private current_: T | undefined;
  /** Why the instance is not ready ('' when it is). */
  reason = '';
  /** Restart attempts since load (successful or not). */
  restarts = 0;
  private failedStarts = 0;
  private lastStartError = '';
  /** The shortage last logged (logged again only when another one comes). */
  private lastShortage: string | undefined;
  /** Why the last ready incarnation died (kept for the reason shown while restarts fail). */
  private deathCause = '';
  /** The serving incarnation died while warming up: the attempt fails with this. */
  private diedWarming: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private abort: AbortController | undefined;
  /** The restart attempt in progress (stop waits for it). */
  private attempt: Promise<void> | undefined;
  private readonly policy: RestartPolicy;

  constructor(private readonly o: LifecycleOptions<T>) {
    this.policy = { ...DEFAULT_RESTART_POLICY, ...o.policy };
  }

  get state(): LifecycleState {
    return this.state_;
  }

  /** The incarnation in place, whatever its state (shared-memory accounting, pid). */
  get current(): T | undefined {
    return this.current_;
  }

  /** The incarnation that may execute now (ready, or warming up after a restart). */
  get serving(): T | undefined {
    return this.state_ === 'ready' || this.state_ === 'warming' ? this.current_ : undefined;
  }

  isReady(): boolean {
    return this.state_ === 'ready';
  }

  /** Supervision stopped restarting: the instance stays down until the model is reloaded. */
  get gaveUp(): boolean {
    return this.state_ === 'failed';
  }

  /** First start: resolves once the instance can serve, rejects with the load error. */
  async start(): Promise<T> {
    this.state_ = 'starting';
    if (traceTags.instance) this.trace('starting');
    const abort = new AbortController();
    this.abort = abort;
    let inc: T;
    try {
      inc = await this.o.incarnations.start(abort.signal);
    } catch (err) {
      this.abort = undefined;
      if (!this.halted()) {
        this.state_ = 'failed';
        this.reason = (err as Error).message;
      }
      if (traceTags.instance) this.trace(`first start failed: ${(err as Error).message}`);
      throw err;
    }
    // Aborting is for starts in progress: stop() must not kill a serving incarnation.
    this.abort = undefined;
    if (this.halted()) {
      await this.o.incarnations.discard(inc);
      throw new Error(`${this.o.label} was stopped while starting.`);
    }
    this.current_ = inc;
    this.markReady();
    if (traceTags.instance) this.trace('ready');
    return inc;
  }

  /**
   * The backend's report that `incarnation` died; `why` is the full sentence (what requests in
   * flight failed with). Deaths of incarnations no longer in place are ignored; one during
   * warmup fails that restart attempt; one while ready starts the restarts.
   */
  died(incarnation: T, why: string): void {
    if (traceTags.instance) {
      const note = incarnation !== this.current_ || this.halted() ? ' (not the serving incarnation, or stopping: ignored)' : '';
      this.trace(`died in state ${this.state_}: ${why}${note}`);
    }
    if (incarnation !== this.current_ || this.halted()) return;
    if (this.state_ === 'warming') {
      this.diedWarming = why;
      return;
    }
    if (this.state_ !== 'ready') return;
    this.current_ = undefined;
    this.reason = why;
    this.deathCause = why;
    this.state_ = 'restarting';
    this.o.events.onReadinessChange(false);
    this.o.logger.error(`${why} Restarting it.`, this.o.logSource);
    this.scheduleRestart();
  }

  /** Stops for good: a ready incarnation gracefully (bounded by `timeoutMs`), others at once. */
  async stop(timeoutMs: number): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const prior = this.state_;
    if (traceTags.instance) this.trace(`stopping from state ${prior} (${prior === 'ready' ? `finalize, at most ${timeoutMs} ms` : 'no finalize'})`);
    this.state_ = 'stopping';
    this.abort?.abort();
    const inc = this.current_;
    this.current_ = undefined;
    if (inc !== undefined) {
      // A restart attempt still warming this one up gives up by itself once it is stopped.
      await this.o.incarnations.stop(inc, { graceful: prior === 'ready', timeoutMs });
    } else {
      // A start in progress was aborted: wait until what it made is discarded.
      await this.attempt;
    }
    this.state_ = 'stopped';
    if (traceTags.instance) this.trace('stopped');
  }

  /** Immediate stop (second signal): no finalize. */
  kill(): void {
    if (traceTags.instance) this.trace(`killed in state ${this.state_}`);
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.state_ = 'stopped';
    this.abort?.abort();
    const inc = this.current_;
    this.current_ = undefined;
    if (inc !== undefined) this.o.incarnations.kill(inc);
  }

  /** One `instance` debug trace line. */
  private trace(what: string): void {
    traceLine('instance', `${this.o.name}: ${what}`);
  }

  private halted(): boolean {
    return this.state_ === 'stopping' || this.state_ === 'stopped';
  }

  private markReady(): void {
    this.lastShortage = undefined;
    this.state_ = 'ready';
    this.reason = '';
    this.deathCause = '';
    this.failedStarts = 0;
  }

  private scheduleRestart(delayMs?: number): void {
    this.state_ = 'restarting';
    const { maxFailedStarts, firstDelayMs, maxDelayMs } = this.policy;
    if (this.failedStarts >= maxFailedStarts) {
      this.state_ = 'failed';
      const died = this.deathCause || `${this.o.label} is not healthy.`;
      this.reason = `${died} Restarting it failed ${maxFailedStarts} times in a row, so it will not be restarted again; last error: ${this.lastStartError}`;
      // The way back, for whoever reads the log: a new load of the model starts new instances.
      this.o.logger.error(
        `${this.reason} It comes back when the model is loaded again (a load request in explicit mode, a change to its files in poll mode, else a server restart).`,
        this.o.logSource,
      );
      this.o.events.onReadinessChange(false);
      if (traceTags.instance) this.trace(`gave up after ${maxFailedStarts} failed restarts`);
      return;
    }
    const delay = delayMs ?? Math.min(maxDelayMs, firstDelayMs * 2 ** this.failedStarts);
    if (traceTags.instance) this.trace(`restart scheduled in ${delay} ms (${this.failedStarts} failed in a row)`);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.state_ !== 'restarting') return;
      this.attempt = this.restart().finally(() => {
        this.attempt = undefined;
      });
    }, delay);
    this.timer.unref();
  }

  /** One restart attempt: start, warm up, then serve; any failure schedules the next. */
  private async restart(): Promise<void> {
    this.state_ = 'starting';
    this.restarts++;
    if (traceTags.instance) this.trace(`restart attempt ${this.restarts}`);
    this.diedWarming = undefined;
    const abort = new AbortController();
    this.abort = abort;
    let inc: T | undefined;
    try {
      try {
        inc = await this.o.incarnations.start(abort.signal);
      } finally {
        this.abort = undefined;
      }
      if (this.halted()) {
        await this.o.incarnations.discard(inc);
        return;
      }
      this.current_ = inc;
      this.state_ = 'warming';
      if (traceTags.instance) this.trace('restarted incarnation warming up');
      // A restarted incarnation runs the model's warmup samples before it takes traffic again.
      await this.o.events.warmup();
      if (this.halted()) return;
      if (this.diedWarming !== undefined) throw new Error(this.diedWarming);
    } catch (err) {
      if (this.halted()) return;
      if (inc !== undefined) {
        if (this.current_ === inc) this.current_ = undefined;
        void this.o.incarnations.discard(inc);
      }
      this.startFailed(err as Error);
      return;
    }
    this.markReady();
    if (traceTags.instance) this.trace(`ready again (restart ${this.restarts})`);
    this.o.events.onRestart();
    this.o.events.onReadinessChange(true);
    this.o.logger.info(`${this.o.label} restarted (restart ${this.restarts}).`, this.o.logSource);
  }

  private startFailed(err: Error): void {
    const failure = this.o.classifyStartFailure?.(err) ?? 'crash';
    if (traceTags.instance) this.trace(`restart attempt failed (${failure === 'crash' ? 'crash' : `shortage of ${failure.shortage}`}): ${err.message}`);
    if (failure !== 'crash') {
      this.reason = `${this.deathCause} Restart is waiting for resources: ${err.message}`.trim();
      // Once per shortage, not once per attempt (whose texts differ in sizes and names): a long
      // shortage would flood the log.
      if (failure.shortage !== this.lastShortage) {
        this.o.logger.warn(
          `Restart of '${this.o.name}' could not get resources (${failure.shortage}), retrying every ${this.policy.transientRetryMs} ms until it can: ${err.message}`,
          this.o.logSource,
        );
      }
      this.lastShortage = failure.shortage;
      this.scheduleRestart(this.policy.transientRetryMs);
      return;
    }
    this.lastShortage = undefined;
    this.failedStarts++;
    this.lastStartError = err.message;
    this.reason = `${this.deathCause} Restart ${this.failedStarts} failed: ${err.message}`.trim();
    this.o.logger.error(`Restart of '${this.o.name}' failed (${this.failedStarts} in a row): ${err.message}`, this.o.logSource);
    this.scheduleRestart();
  }
}

/** The core's hooks as one instance's lifecycle events. */
export function lifecycleEvents(instance: BackendInstance, hooks: InstanceHooks): LifecycleEvents {
  return {
    onReadinessChange: (ready) => hooks.onReadinessChange(instance, ready),
    onRestart: () => hooks.onRestart(instance),
    warmup: () => hooks.warmup(instance),
  };
}
