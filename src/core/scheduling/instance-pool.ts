/**
 * @module core/scheduling/instance-pool
 * The instances a scheduler hands batches to: which one is idle and ready, and running one
 * batch on it (busy flag, execute, accounting through the observer, and the answer to every
 * request should `execute` break its promise). Both schedulers share it; they differ only in
 * how they form batches.
 */
import { asTritonError } from '../errors.js';
import type { ExecutionInstance, ExecutionObserver, ExecutionTimes, PendingRequest } from './types.js';

export class InstancePool {
  private readonly instances: ExecutionInstance[];
  private readonly busy: boolean[];
  private idle: number;

  constructor(
    instances: readonly ExecutionInstance[],
    private readonly observer: ExecutionObserver,
    /** Called after every execution, when the instance is free again. */
    private readonly onFree: () => void,
  ) {
    this.instances = instances.slice();
    this.busy = this.instances.map(() => false);
    this.idle = this.instances.length;
  }

  /** Some instance is not running a batch (it may still be restarting). */
  get hasIdle(): boolean {
    return this.idle > 0;
  }

  /** Index of an idle, ready instance, or -1. */
  idleReady(): number {
    if (this.idle === 0) return -1;
    for (let i = 0; i < this.instances.length; i++) {
      if (!this.busy[i] && this.instances[i]!.isReady()) return i;
    }
    return -1;
  }

  /**
   * Runs `handed` on instance `idx`. `batch` is what the statistics account (the same requests,
   * possibly before a wrapper such as preserve_ordering's); `batchSize` is Σ size(r).
   */
  run(idx: number, batch: PendingRequest[], handed: PendingRequest[], batchSize: number): void {
    this.busy[idx] = true;
    this.idle--;
    let run: Promise<ExecutionTimes>;
    try {
      run = this.instances[idx]!.execute(handed);
    } catch (err) {
      run = Promise.reject(err);
    }
    run.then(
      (times) => {
        this.free(idx);
        try {
          this.observer(batch, times, batchSize);
        } catch {
          // Accounting must never stall the queue.
        }
        this.onFree();
      },
      (err: unknown) => {
        // execute() is not supposed to reject; answer the requests rather than leave them hanging.
        this.free(idx);
        const error = asTritonError(err);
        for (const r of handed) if (!r.done) r.fail(error);
        this.onFree();
      },
    );
  }

  private free(idx: number): void {
    this.busy[idx] = false;
    this.idle++;
  }
}
