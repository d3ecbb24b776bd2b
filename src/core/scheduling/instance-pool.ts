/**
 * @module core/scheduling/instance-pool
 * The instances a scheduler hands batches to: which one can take a batch and is ready, and
 * running one batch on it (slot count, execute, accounting through the observer, and the
 * answer to every request should `execute` break its promise). Both schedulers share it; they differ only in
 * how they form batches.
 */
import { asTritonError } from '../errors.js';
import type { RateLimiter } from './rate-limiter.js';
import type { DispatchObserver, ExecutionInstance, ExecutionListener, ExecutionObserver, ExecutionTimes, PendingRequest } from './types.js';

/**
 * A pipelined instance takes this many batches at once whatever its executions last; more (up
 * to its pipelineDepth) only while they are short (SHORT_EXECUTION_NS).
 */
const SHALLOW_DEPTH = 2;
/**
 * Executions averaging under this are short: Node's own delay in handing over the next batch
 * (it answers clients and reads other connections in between) is then a real share of each
 * execution, and with only one batch waiting the stub often finds its ring empty and sleeps
 * (docs/design.md, "Pipelining"). Longer executions leave Node time to refill, and a deeper
 * queue would only hold requests back from another instance that frees first. Timed by the
 * instance where it can (ExecutionTimes.ownNs): a stub's wake-up and Node's delay in reading
 * the answer are not the execution's.
 */
const SHORT_EXECUTION_NS = 1_000_000;
/** Weight of the newest execution in the running mean of an instance's execution times. */
const EXECUTION_MEAN_WEIGHT = 1 / 8;
/**
 * An execution counts in the mean as at most this long: one long execution still lifts a short
 * mean over SHORT_EXECUTION_NS at once, but a first call that took seconds (a model warming up)
 * does not keep the instance at two batches for hundreds of executions after it.
 */
const MAX_COUNTED_EXECUTION_NS = 10 * SHORT_EXECUTION_NS;

export class InstancePool {
  private readonly instances: ExecutionInstance[];
  /** Batches handed to each instance and not answered yet. */
  private readonly running: number[];
  /** How many each instance may take at once (its pipelineDepth, when the scheduler allows it). */
  private readonly maxDepth: number[];
  /** How many each instance takes at once now: maxDepth, or SHALLOW_DEPTH while its executions are long. */
  private readonly depth: number[];
  /** Running mean of each instance's execution time, ns (0 until its first one). */
  private readonly meanNs: number[];
  /** Free slots over all instances: Σ max(0, depth − running). */
  private free: number;
  /** Batches handed to an instance that wait behind the one it runs: Σ max(0, running − 1). */
  private waitingBatches = 0;

  constructor(
    instances: readonly ExecutionInstance[],
    private readonly observer: ExecutionObserver,
    /** Called after every execution, when the instance is free again. */
    private readonly onFree: () => void,
    /**
     * Hand an instance its next batch before the current one is answered, up to its
     * pipelineDepth. Only for schedulers whose batches do not grow by waiting: the dynamic
     * batcher forms a batch when an instance frees, so that the batch holds what came meanwhile.
     */
    pipeline = false,
    private readonly onDispatch?: DispatchObserver,
    /**
     * The server's rate limiter, when on (`--rate-limit=execution_count`): an instance it covers
     * runs only once it grants the resources, holds them for one execution at a time, and this
     * pool is tried again when they free.
     */
    private readonly limiter?: RateLimiter,
  ) {
    this.instances = instances.slice();
    this.running = this.instances.map(() => 0);
    const limited = (i: ExecutionInstance) => limiter?.covers(i) === true;
    this.maxDepth = this.instances.map((i) => (pipeline && !limited(i) ? Math.max(1, Math.floor(i.pipelineDepth ?? 1)) : 1));
    // Until an instance's executions are known, it takes no more than the shallow depth.
    this.depth = this.maxDepth.map((d) => Math.min(d, SHALLOW_DEPTH));
    this.meanNs = this.instances.map(() => 0);
    for (const i of this.instances) if (limited(i)) limiter!.setWake(i, () => this.onFree());
    this.free = this.depth.reduce((a, b) => a + b, 0);
  }

  /** The name of instance `idx` (debug trace lines). */
  nameOf(idx: number): string {
    return this.instances[idx]!.name;
  }

  /**
   * Batches handed to instances that wait behind the one each runs (in a stub's ring). Only
   * pipelined instances have them, and only the default scheduler pipelines, whose batches are
   * one request each: it is also the number of requests waiting there.
   */
  get waiting(): number {
    return this.waitingBatches;
  }

  /** Some instance can take a batch now (it may still be restarting). */
  get hasIdle(): boolean {
    return this.free > 0;
  }

  /**
   * Index of a ready instance that can take a batch, or -1: an idle one first, else the one
   * with the fewest batches queued, so that work spreads over instances before any of them
   * queues more than the others.
   */
  idleReady(): number {
    if (this.free === 0) return -1;
    if (this.limiter !== undefined) return this.idleGranted(this.limiter);
    let queued = -1;
    for (let i = 0; i < this.instances.length; i++) {
      const n = this.running[i]!;
      if (n >= this.depth[i]! || !this.instances[i]!.isReady()) continue;
      if (n === 0) return i;
      if (queued < 0 || n < this.running[queued]!) queued = i;
    }
    return queued;
  }

  /**
   * Under the rate limiter: of the idle ready instances, the one the limiter serves first (fewest
   * executions × priority), if the limiter grants it its resources now; else -1 (the limiter
   * tries this pool again when resources free).
   */
  private idleGranted(limiter: RateLimiter): number {
    let best = -1;
    for (let i = 0; i < this.instances.length; i++) {
      if (this.running[i]! >= this.depth[i]! || !this.instances[i]!.isReady()) continue;
      if (best < 0 || limiter.weight(this.instances[i]!) < limiter.weight(this.instances[best]!)) best = i;
    }
    return best >= 0 && limiter.acquire(this.instances[best]!) ? best : -1;
  }

  /**
   * For schedulers that bind work to one instance (canTake): whether the rate limiter, if it
   * covers instance `idx`, grants it its resources now. Call it only right before run(), which
   * gives them back when the execution ends; false: the limiter tries the scheduler again later.
   */
  grant(idx: number): boolean {
    const limiter = this.limiter;
    return limiter === undefined || limiter.acquire(this.instances[idx]!);
  }

  /** Instance `idx` is ready and can take a batch now (schedulers that bind work to one instance). */
  canTake(idx: number): boolean {
    return this.running[idx]! < this.depth[idx]! && this.instances[idx]!.isReady();
  }

  /**
   * Runs `handed` on instance `idx`. `batch` is what the statistics account (the same requests,
   * possibly before a wrapper such as preserve_ordering's); `batchSize` is Σ size(r).
   */
  run(idx: number, batch: PendingRequest[], handed: PendingRequest[], batchSize: number): void {
    this.running[idx]!++;
    if (this.running[idx]! <= this.depth[idx]!) this.free--;
    if (this.running[idx]! > 1) this.waitingBatches++;
    const instance = this.instances[idx]!;
    const execution = new Execution(this, idx, batch, handed, batchSize);
    try {
      this.onDispatch?.(instance, handed);
      if (instance.run !== undefined) {
        instance.run(handed, execution);
        return;
      }
      instance.execute(handed).then(
        (times) => execution.executed(times),
        (err: unknown) => execution.failed(err),
      );
    } catch (err) {
      queueMicrotask(() => execution.failed(err));
    }
  }

  /** @internal Execution `e` is over: its instance is free, its accounting done, the scheduler goes on. */
  executed(e: Execution, times: ExecutionTimes): void {
    this.release(e.idx);
    if (this.maxDepth[e.idx]! > SHALLOW_DEPTH) this.observe(e.idx, times.ownNs ?? Number(times.inferEndNs - times.startNs));
    try {
      this.observer(e.batch, times, e.batchSize);
    } catch {
      // Accounting must never stall the queue.
    }
    this.onFree();
  }

  /** @internal execute() broke its promise (it is not supposed to): answer the requests rather than leave them hanging. */
  failed(e: Execution, err: unknown): void {
    this.release(e.idx);
    const error = asTritonError(err);
    for (const r of e.handed) if (!r.done) r.fail(error);
    this.onFree();
  }

  private release(idx: number): void {
    if (this.running[idx]! <= this.depth[idx]!) this.free++;
    if (this.running[idx]! > 1) this.waitingBatches--;
    this.running[idx]!--;
    this.limiter?.release(this.instances[idx]!);
  }

  /** Folds one execution of instance `idx` into its mean, and sets its depth from it. */
  private observe(idx: number, took: number): void {
    const ns = Math.min(took, MAX_COUNTED_EXECUTION_NS);
    const mean = this.meanNs[idx]! === 0 ? ns : this.meanNs[idx]! + (ns - this.meanNs[idx]!) * EXECUTION_MEAN_WEIGHT;
    this.meanNs[idx] = mean;
    const depth = mean < SHORT_EXECUTION_NS ? this.maxDepth[idx]! : SHALLOW_DEPTH;
    const was = this.depth[idx]!;
    if (depth === was) return;
    const running = this.running[idx]!;
    this.free += Math.max(0, depth - running) - Math.max(0, was - running);
    this.depth[idx] = depth;
  }
}

/** One batch running on instance `idx`: the listener its instance tells, in place of a promise's reactions. */
class Execution implements ExecutionListener {
  private over = false;

  constructor(
    private readonly pool: InstancePool,
    readonly idx: number,
    readonly batch: PendingRequest[],
    readonly handed: PendingRequest[],
    readonly batchSize: number,
  ) {}

  executed(times: ExecutionTimes): void {
    if (this.over) return;
    this.over = true;
    this.pool.executed(this, times);
  }

  failed(err: unknown): void {
    if (this.over) return;
    this.over = true;
    this.pool.failed(this, err);
  }
}
