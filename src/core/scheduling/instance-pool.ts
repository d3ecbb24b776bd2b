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

export class InstancePool {
  private readonly instances: ExecutionInstance[];
  /** Batches handed to each instance and not answered yet. */
  private readonly running: number[];
  /** How many each instance takes at once (its pipelineDepth, when the scheduler allows it). */
  private readonly depth: number[];
  /** Free slots over all instances. */
  private free: number;

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
    this.depth = this.instances.map((i) => (pipeline && !limited(i) ? Math.max(1, Math.floor(i.pipelineDepth ?? 1)) : 1));
    for (const i of this.instances) if (limited(i)) limiter!.setWake(i, () => this.onFree());
    this.free = this.depth.reduce((a, b) => a + b, 0);
  }

  /** The name of instance `idx` (debug trace lines). */
  nameOf(idx: number): string {
    return this.instances[idx]!.name;
  }

  /** Some instance can take a batch now (it may still be restarting). */
  get hasIdle(): boolean {
    return this.free > 0;
  }

  /**
   * Index of a ready instance that can take a batch, or -1: an idle one first, so that work
   * spreads over instances before any of them queues a second batch.
   */
  idleReady(): number {
    if (this.free === 0) return -1;
    if (this.limiter !== undefined) return this.idleGranted(this.limiter);
    let queued = -1;
    for (let i = 0; i < this.instances.length; i++) {
      const n = this.running[i]!;
      if (n >= this.depth[i]! || !this.instances[i]!.isReady()) continue;
      if (n === 0) return i;
      if (queued < 0) queued = i;
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
    this.free--;
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
    this.running[idx]!--;
    this.free++;
    this.limiter?.release(this.instances[idx]!);
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
