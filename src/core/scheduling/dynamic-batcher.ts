/**
 * @module core/scheduling/dynamic-batcher
 * The dynamic batcher (docs/protocol-notes.md, "Dynamic batcher"): one priority queue per model version, batches
 * formed from its head whenever an instance is idle, Triton's queue policies (max_queue_size,
 * timeouts with REJECT / DELAY), preferred batch sizes, max_queue_delay and preserve_ordering.
 *
 *   enqueue ──► PriorityQueue (levels 1..N, FIFO each; DELAY-expired requests behind) ──► pump
 *                                                                                         │
 *      ┌─────────────── one batch per idle ready instance ◄── form(): scan from the head ◄┘
 *      ▼
 *   instance.execute(batch) ──► observer(batch, times, rows) ──► pump again
 *
 * When pumps run:
 *   - on arrival, through one coalesced `setImmediate` (so requests that arrive in the same
 *     event-loop turn land in one batch), and only if some instance is idle and — while a
 *     partial batch waits for its delay — only if the arrival could change the decision;
 *   - when an execution finishes, or `kick()` says an instance became ready;
 *   - from a single timer, armed for the earlier of "the waiting batch's delay runs out" and
 *     "the nearest REJECT deadline" (so an expired request is answered even while every
 *     instance stays busy). No timer is left armed once the queue is empty.
 * Remaining waits under 1 ms (Node timers have 1 ms granularity, while configs commonly use
 * `max_queue_delay_microseconds: 100`) are polled with `setImmediate`: a bounded, sub-millisecond
 * wait that keeps serving I/O, instead of stretching a 100 µs delay to 1 ms.
 *
 * Not implemented: Triton's prefetch of a "next payload" (a batch formed while every instance is
 * busy and grown until one frees up). Here a batch is formed at the moment an instance is idle,
 * which sees the same queue contents — the spec marks the rule optional.
 */
import { SchedulerHold } from './scheduler-hold.js';
import { Errors, TritonError } from '../errors.js';
import type { InferRequest, InferResponse } from '../inference.js';
import { InstancePool } from './instance-pool.js';
import type { RateLimiter } from './rate-limiter.js';
import { PumpGuard } from './pump-guard.js';
import { PriorityQueue, Ring, type QueueItem } from './queue.js';
import type { DispatchObserver, ExecutionInstance, ExecutionObserver, Nanos, PendingRequest, Scheduler } from './types.js';
import { traceLine, traceTags, traced, tracedAll } from '../trace-tags.js';
import type { SchedulingParameters } from '../request/parameters.js';

/** `ModelQueuePolicy` of the model configuration. */
export interface QueuePolicy {
  timeoutAction: 'REJECT' | 'DELAY';
  /** 0 = no timeout. */
  defaultTimeoutUs: number;
  allowTimeoutOverride: boolean;
  /** 0 = unlimited. */
  maxQueueSize: number;
}

/** `dynamic_batching` of the model configuration, plus the model's `max_batch_size`. */
export interface DynamicBatchingOptions {
  maxBatchSize: number;
  preferredBatchSizes: number[];
  maxQueueDelayUs: number;
  preserveOrdering: boolean;
  /** 0 = a single level. */
  priorityLevels: number;
  defaultPriorityLevel: number;
  defaultQueuePolicy: QueuePolicy;
  /** Overrides of the default policy per priority level (1..priorityLevels). */
  priorityQueuePolicy: Map<number, QueuePolicy>;
}

export const DEFAULT_QUEUE_POLICY: Readonly<QueuePolicy> = Object.freeze({
  timeoutAction: 'REJECT',
  defaultTimeoutUs: 0,
  allowTimeoutOverride: false,
  maxQueueSize: 0,
});

interface Entry extends QueueItem {
  readonly req: PendingRequest;
  /** Index into the queue's levels (0 = highest priority). */
  readonly level: number;
  /** size(r) = max(1, batch size). */
  readonly rows: number;
  /** performance.now() at enqueue: the age that max_queue_delay compares against. */
  readonly enqMs: number;
  /** performance.now() deadline; Infinity = none. */
  readonly deadlineMs: number;
  /** Already expired and moved behind its level (DELAY): served normally from now on. */
  readonly delayed: boolean;
}

interface LevelPolicy {
  reject: boolean;
  timeoutUs: number;
  allowOverride: boolean;
  maxQueueSize: number;
  /** Deadline of the last request pushed to `main`; with `monotonic`, see sweep(). */
  lastDeadline: number;
  /** Deadlines in `main` are non-decreasing (always true without per-request overrides). */
  monotonic: boolean;
}

/** Below this a wait is polled with setImmediate instead of a (1 ms granular) timer. */
const POLL_BELOW_MS = 1;

export class DynamicBatcher implements Scheduler {
  private readonly pool: InstancePool;

  private readonly maxBatch: number;
  private readonly maxPreferred: number;
  private readonly preferred: Set<number>;
  private readonly sortedPreferred: number[];
  private readonly delayMs: number;
  private readonly priorityLevels: number;
  private readonly defaultLevel: number;
  private readonly policies: LevelPolicy[];
  private readonly ordering: ReleaseLine | null;

  private readonly queue: PriorityQueue<Entry>;
  /** Sum of `rows` over live entries. */
  private queuedRows = 0;
  private stopped = false;

  /** Earliest deadline of a queued REJECT-policy request (may be stale-early, never late). */
  private rejectDeadline = Infinity;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private immediate: NodeJS.Immediate | null = null;

  // While a partial batch waits for its delay (with an instance idle), an arrival only pumps if
  // the queue reaches `wakeRows` rows or the arrival has a different shape signature.
  private wakeRows = 0;
  private waitSig: string | undefined = undefined;

  private readonly guard = new PumpGuard();
  /** TRITONSERVER_DELAY_SCHEDULER (scheduler-hold.ts), until met. */
  private hold = SchedulerHold.fromEnv();
  private readonly retryPump = (): void => this.pump();
  // Scratch outputs of form(), to avoid an allocation per batch.
  private formRows = 0;
  private formWaitUntil = Infinity;
  /** Why form() closed the batch it returned (a constant: debug trace lines). */
  private formWhy = '';
  private readonly dropped: Array<{ req: PendingRequest; error: TritonError }> = [];

  private readonly onTimer = (): void => {
    this.timer = null;
    this.timerAt = Infinity;
    this.pump();
  };
  private readonly onImmediate = (): void => {
    this.immediate = null;
    this.pump();
  };

  constructor(
    instances: ExecutionInstance[],
    options: DynamicBatchingOptions,
    observer: ExecutionObserver,
    onDispatch?: DispatchObserver,
    limiter?: RateLimiter,
  ) {
    this.pool = new InstancePool(instances, observer, () => this.pump(), false, onDispatch, limiter);

    // A config without batching still gets sane limits: one row at a time.
    this.maxBatch = Math.max(1, Math.floor(options.maxBatchSize));
    const sizes = options.preferredBatchSizes.filter((s) => s > 0 && s <= this.maxBatch);
    this.preferred = new Set(sizes);
    this.sortedPreferred = [...this.preferred].sort((a, b) => a - b);
    this.maxPreferred = sizes.length > 0 ? Math.max(...sizes) : this.maxBatch;
    this.delayMs = Math.max(0, options.maxQueueDelayUs) / 1000;

    this.priorityLevels = Math.max(0, Math.floor(options.priorityLevels));
    const d = Math.floor(options.defaultPriorityLevel);
    // Triton's config validation requires 1 <= default <= priority_levels; fall back to the
    // lowest priority rather than fail here.
    this.defaultLevel = this.priorityLevels === 0 ? 0 : d >= 1 && d <= this.priorityLevels ? d : this.priorityLevels;

    const levelCount = Math.max(1, this.priorityLevels);
    this.policies = [];
    for (let i = 0; i < levelCount; i++) {
      const p = (this.priorityLevels > 0 ? options.priorityQueuePolicy.get(i + 1) : undefined) ?? options.defaultQueuePolicy;
      this.policies.push({
        reject: p.timeoutAction !== 'DELAY',
        timeoutUs: Math.max(0, p.defaultTimeoutUs),
        allowOverride: p.allowTimeoutOverride,
        maxQueueSize: Math.max(0, p.maxQueueSize),
        lastDeadline: -Infinity,
        monotonic: true,
      });
    }
    this.queue = new PriorityQueue<Entry>(levelCount);
    this.ordering = options.preserveOrdering ? new ReleaseLine() : null;
  }

  enqueue(req: PendingRequest): void {
    if (this.stopped) {
      if (traceTags.batcher) traceLine('batcher', `${req.request.modelName}: ${traced(req.request)} refused: the scheduler is stopped`);
      req.fail(Errors.schedulerStopped());
      return;
    }
    const li = this.levelIndex(req.priority);
    const pol = this.policies[li]!;
    const level = this.queue.levels[li]!;
    if (pol.maxQueueSize > 0 && level.live >= pol.maxQueueSize) {
      if (traceTags.batcher)
        traceLine('batcher', `${req.request.modelName}: ${traced(req.request)} refused: priority level ${li + 1} holds max_queue_size ${pol.maxQueueSize}`);
      req.fail(Errors.queueFull());
      return;
    }

    const now = performance.now();
    // Triton's rule: the request's timeout only wins when it is non-zero and *smaller* than the
    // policy default — so with a default of 0 (no timeout) per-request timeouts are ignored.
    let timeoutUs = pol.timeoutUs;
    if (pol.allowOverride && req.timeoutUs > 0 && req.timeoutUs < timeoutUs) timeoutUs = req.timeoutUs;
    const deadlineMs = timeoutUs > 0 ? now + timeoutUs / 1000 : Infinity;
    const rows = Math.max(req.batchSize, 1);

    if (level.live === 0) {
      pol.lastDeadline = -Infinity;
      pol.monotonic = true;
    }
    if (deadlineMs < pol.lastDeadline) pol.monotonic = false;
    pol.lastDeadline = deadlineMs;

    this.queue.push(li, { dead: false, req, level: li, rows, enqMs: now, deadlineMs, delayed: false });
    this.queuedRows += rows;
    if (traceTags.batcher) {
      traceLine(
        'batcher',
        `${req.request.modelName}: queued ${traced(req.request)}, ${rows} row(s), priority level ${li + 1}${deadlineMs === Infinity ? '' : `, queue timeout ${timeoutUs} us`} (queue: ${this.queue.size} request(s), ${this.queuedRows} row(s); ${this.pool.hasIdle ? 'an instance is free' : 'every instance busy'})`,
      );
    }

    if (pol.reject && deadlineMs < this.rejectDeadline) {
      this.rejectDeadline = deadlineMs;
      this.armTimer(deadlineMs, now);
    }
    if (this.pool.hasIdle && (this.queuedRows >= this.wakeRows || (this.waitSig !== undefined && req.shapeSignature !== this.waitSig))) {
      this.schedulePump();
    }
  }

  pendingCount(): number {
    return this.queue.size;
  }

  kick(): void {
    this.pump();
  }

  stop(error: TritonError = Errors.schedulerStopped()): void {
    if (this.stopped) return;
    this.stopped = true;
    this.clearTimer();
    this.hold?.stop();
    if (this.immediate !== null) {
      clearImmediate(this.immediate);
      this.immediate = null;
    }
    const left = this.queue.drainLive();
    this.queuedRows = 0;
    this.rejectDeadline = Infinity;
    for (const e of left) if (!e.req.done) e.req.fail(error);
  }

  // ───────────────────────────────────────────────────────────────────────────────────────────

  private levelIndex(priority: number): number {
    if (this.priorityLevels === 0) return 0;
    const p = priority >= 1 && priority <= this.priorityLevels && Number.isInteger(priority) ? priority : this.defaultLevel;
    return p - 1;
  }

  private schedulePump(): void {
    if (this.immediate === null && !this.stopped) this.immediate = setImmediate(this.onImmediate);
  }

  private armTimer(atMs: number, nowMs: number): void {
    if (atMs === Infinity || this.stopped) return;
    if (this.timer !== null && this.timerAt <= atMs) return;
    const wait = atMs - nowMs;
    if (wait < POLL_BELOW_MS) {
      this.schedulePump();
      return;
    }
    this.clearTimer();
    this.timerAt = atMs;
    this.timer = setTimeout(this.onTimer, Math.ceil(wait));
    // Requests waiting here belong to connections that keep the process alive anyway; the
    // timer alone must not.
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
      this.timerAt = Infinity;
    }
  }

  private pump(): void {
    this.guard.run(this.pass);
  }

  private readonly pass = (): void => {
    if (this.stopped) return;
    // TRITONSERVER_DELAY_SCHEDULER: nothing runs until the queue holds N (scheduler-hold.ts).
    if (this.hold?.holds(this.queue.size, Number.MAX_SAFE_INTEGER, this.retryPump)) return;
    this.hold = undefined;
    const now = performance.now();
    if (this.rejectDeadline <= now) this.sweep(now);
    this.wakeRows = 0;
    this.waitSig = undefined;
    let waitUntil = Infinity;

    while (this.queue.size > 0) {
      const idx = this.pool.idleReady();
      if (idx < 0) break;
      const n = this.form(now);
      if (n > 0) {
        this.dispatch(idx, n, this.formRows);
      } else if (n < 0) {
        waitUntil = this.formWaitUntil;
        break;
      }
      // n === 0: everything scanned was dropped; the loop re-checks the queue size.
    }

    this.failDropped();

    if (this.queue.size === 0) {
      this.clearTimer();
      this.rejectDeadline = Infinity;
      this.wakeRows = 0;
      this.waitSig = undefined;
    } else {
      this.armTimer(Math.min(waitUntil, this.rejectDeadline), now);
    }
  };

  /** Answers the requests form()/sweep() dropped, outside the scans (a sink may re-enter). */
  private failDropped(): void {
    const d = this.dropped;
    for (let i = 0; i < d.length; i++) {
      const { req, error } = d[i]!;
      if (!req.done) req.fail(error);
    }
    d.length = 0;
  }

  private drop(e: Entry, error: TritonError | null): void {
    if (traceTags.batcher) {
      const r = e.req.request;
      traceLine('batcher', `${r.modelName}: ${traced(r)} left the queue unbatched: ${error === null ? 'already answered' : error.message}`);
    }
    this.queue.kill(e.level, e);
    this.queuedRows -= e.rows;
    if (error !== null) this.dropped.push({ req: e.req, error });
  }

  /**
   * Fails expired requests of REJECT levels (called when the earliest such deadline passed) and
   * recomputes the earliest remaining deadline. Levels whose deadlines are monotonic only look
   * at their head; others are scanned in full and compacted.
   */
  private sweep(now: number): void {
    let next = Infinity;
    for (let li = 0; li < this.policies.length; li++) {
      const pol = this.policies[li]!;
      const level = this.queue.levels[li]!;
      if (!pol.reject || level.live === 0) continue;
      const ring = level.main;
      for (let i = 0; i < ring.length; i++) {
        const e = ring.at(i);
        if (e.dead) continue;
        if (e.deadlineMs <= now) {
          this.drop(e, Errors.timeoutExpired());
        } else {
          if (e.deadlineMs < next) next = e.deadlineMs;
          if (pol.monotonic) break;
        }
      }
      if (!pol.monotonic && level.live > 0) ring.retain((e) => !e.dead);
    }
    this.rejectDeadline = next;
  }

  /**
   * One pass of batch formation (protocol-notes, "Dynamic batcher") from the head of the queue. Returns the
   * number of requests to send (their rows in `formRows`), 0 when nothing is left to send, or
   * -1 to wait until `formWaitUntil` (or an arrival that could change the decision).
   */
  private form(now: number): number {
    let count = 0;
    let rows = 0;
    let bestCount = 0;
    let bestRows = 0;
    let sig: string | undefined;
    let sendNow = false;
    let oldestEnq = Infinity;
    let nearestDeadline = Infinity;
    const maxPreferred = this.maxPreferred;
    const maxBatch = this.maxBatch;

    scan: for (let li = 0; li < this.queue.levels.length; li++) {
      const level = this.queue.levels[li]!;
      if (level.live === 0) continue;
      const reject = this.policies[li]!.reject;
      for (let r = 0; r < 2; r++) {
        // Re-read the ring each step: drop() may clear a level that became empty.
        const ring = r === 0 ? level.main : level.delayed;
        for (let i = 0; i < ring.length; i++) {
          const e = ring.at(i);
          if (e.dead) continue;
          const req = e.req;
          if (req.done) {
            this.drop(e, null);
            continue;
          }
          if (req.cancelled) {
            this.drop(e, Errors.cancelled());
            continue;
          }
          if (!e.delayed && e.deadlineMs <= now) {
            if (reject) {
              this.drop(e, Errors.timeoutExpired());
            } else {
              // DELAY: behind every non-expired request of the level; the scan meets it again
              // when it reaches the delayed ring.
              this.queue.moveToDelayed(li, e, { ...e, dead: false, delayed: true });
            }
            continue;
          }

          const n = e.rows;
          if (count === 0) {
            sig = req.shapeSignature;
          } else {
            if (rows + n > maxPreferred && bestCount === 0) {
              // The batch can't grow past the largest preferred size: that's the candidate.
              bestCount = count;
              bestRows = rows;
            }
            if (rows + n > maxBatch || req.shapeSignature !== sig) {
              sendNow = true;
              this.formWhy = req.shapeSignature !== sig ? 'the next request has other shapes' : 'full (the next request does not fit max_batch_size)';
              break scan;
            }
          }
          count++;
          rows += n;
          if (e.enqMs < oldestEnq) oldestEnq = e.enqMs;
          if (!e.delayed && e.deadlineMs < nearestDeadline) nearestDeadline = e.deadlineMs;
          if (this.preferred.has(rows)) {
            bestCount = count;
            bestRows = rows;
          }
        }
      }
    }

    if (count === 0) return 0;
    const delayExceeded = this.delayMs > 0 && now - oldestEnq >= this.delayMs;
    if (bestCount > 0 && !delayExceeded) {
      this.formRows = bestRows;
      this.formWhy = this.preferred.has(bestRows) ? 'a preferred batch size' : 'full (the next request does not fit the largest preferred size)';
      return bestCount;
    }
    if (sendNow || rows >= maxPreferred || delayExceeded || this.delayMs === 0) {
      this.formRows = rows;
      if (!sendNow) this.formWhy = rows >= maxPreferred ? 'full' : delayExceeded ? 'max_queue_delay reached' : 'no max_queue_delay (sent at once)';
      return count;
    }

    // Wait: the whole queue is the pending batch (nothing stopped the scan) and it's below
    // every useful size. Re-check at the delay's end, when a pending request's deadline passes,
    // or when arrivals reach the next preferred size (or the largest one).
    this.formWaitUntil = Math.min(oldestEnq + this.delayMs, nearestDeadline);
    let wake = maxPreferred;
    for (const s of this.sortedPreferred) {
      if (s > rows) {
        wake = s;
        break;
      }
    }
    this.wakeRows = wake;
    this.waitSig = sig;
    return -1;
  }

  private dispatch(idx: number, n: number, rows: number): void {
    const batch: PendingRequest[] = new Array<PendingRequest>(n);
    for (let k = 0; k < n; k++) batch[k] = this.queue.shiftLive()!.req;
    this.queuedRows -= rows;
    const t: Nanos = process.hrtime.bigint();
    for (let k = 0; k < n; k++) batch[k]!.queueEndNs = t;

    const handed = this.ordering === null ? batch : batch.map((r) => this.ordering!.admit(r));
    if (traceTags.batcher) {
      traceLine(
        'batcher',
        `${batch[0]!.request.modelName}: batch of ${n} request(s), ${rows} row(s) for instance ${this.pool.nameOf(idx)} (closed: ${this.formWhy}): ${tracedAll(batch)}; ${this.queue.size} left queued`,
      );
    }
    this.pool.run(idx, batch, handed, rows);
  }
}

// ─── preserve_ordering ───────────────────────────────────────────────────────────────────────

type Released = InferResponse | TritonError;

/**
 * Releases responses in dispatch order (= enqueue order within a priority level): the instance
 * gets an `OrderedSlot` per request; responses of the oldest unfinished slot pass straight
 * through, later slots buffer until every slot before them delivered its final response.
 */
class ReleaseLine {
  private readonly slots = new Ring<OrderedSlot>();
  private flushing = false;

  admit(inner: PendingRequest): OrderedSlot {
    const slot = new OrderedSlot(inner, this);
    this.slots.push(slot);
    return slot;
  }

  deliver(slot: OrderedSlot, item: Released, final: boolean): void {
    if (!this.flushing && slot.buffer === null && this.slots.peek() === slot) {
      forward(slot.inner, item);
      if (final) {
        this.slots.shift();
        this.flush();
      }
      return;
    }
    (slot.buffer ??= []).push(item);
    if (!this.flushing) this.flush();
  }

  private flush(): void {
    this.flushing = true;
    try {
      for (let head = this.slots.peek(); head !== undefined; head = this.slots.peek()) {
        const buf = head.buffer;
        if (buf !== null) {
          // Items may be appended while forwarding (a sink that re-enters): index, don't iterate.
          for (let i = 0; i < buf.length; i++) forward(head.inner, buf[i]!);
          head.buffer = null;
        }
        if (!head.finished) break;
        this.slots.shift();
      }
    } finally {
      this.flushing = false;
    }
  }
}

function forward(inner: PendingRequest, item: Released): void {
  if (item instanceof TritonError) inner.fail(item);
  else inner.respond(item);
}

/** What the instance sees of a request under preserve_ordering. */
class OrderedSlot implements PendingRequest {
  buffer: Released[] | null = null;
  /** The instance delivered the final response or an error (maybe still buffered). */
  finished = false;

  constructor(
    readonly inner: PendingRequest,
    private readonly line: ReleaseLine,
  ) {}

  get request(): InferRequest {
    return this.inner.request;
  }
  get batchSize(): number {
    return this.inner.batchSize;
  }
  get shapeSignature(): string {
    return this.inner.shapeSignature;
  }
  get priority(): number {
    return this.inner.priority;
  }
  get timeoutUs(): number {
    return this.inner.timeoutUs;
  }
  get parameters(): Readonly<SchedulingParameters> | undefined {
    return this.inner.parameters;
  }
  get arrivalNs(): Nanos {
    return this.inner.arrivalNs;
  }
  get queueEndNs(): Nanos | undefined {
    return this.inner.queueEndNs;
  }
  set queueEndNs(v: Nanos | undefined) {
    this.inner.queueEndNs = v;
  }
  get cancelled(): boolean {
    return this.inner.cancelled;
  }
  get done(): boolean {
    return this.finished || this.inner.done;
  }

  respond(response: InferResponse): void {
    if (this.finished) return;
    if (response.final) this.finished = true;
    this.line.deliver(this, response, response.final);
  }

  fail(error: TritonError): void {
    if (this.finished) return;
    this.finished = true;
    this.line.deliver(this, error, true);
  }
}
