/**
 * @module core/scheduling/default-scheduler
 * The scheduler of a model without `dynamic_batching` / `sequence_batching` (docs/protocol-notes.md,
 * "Instances and dispatch"): every request is its own execution, queued FIFO without size limit or timeouts and
 * handed to the next idle ready instance. Each instance runs one batch at a time; one that
 * accepts a pipeline (`pipelineDepth`, a Python stub) gets its next request while it runs.
 *
 * No timers: dispatch happens synchronously on enqueue (when an instance is idle) and when an
 * execution finishes or `kick()` reports an instance became ready.
 */
import { Errors, type TritonError } from '../errors.js';
import { InstancePool } from './instance-pool.js';
import type { RateLimiter } from './rate-limiter.js';
import { PumpGuard } from './pump-guard.js';
import { Ring } from './queue.js';
import type { DispatchObserver, ExecutionInstance, ExecutionObserver, PendingRequest, Scheduler } from './types.js';
import { traceLine, traceTags, traced } from '../trace-tags.js';

export class DefaultScheduler implements Scheduler {
  private readonly pool: InstancePool;
  private readonly queue = new Ring<PendingRequest>();
  private stopped = false;
  // execute() or a failing request's sink may call back into enqueue().
  private readonly guard = new PumpGuard();

  constructor(instances: ExecutionInstance[], observer: ExecutionObserver, onDispatch?: DispatchObserver, limiter?: RateLimiter) {
    // Every request is its own execution, so nothing is gained by holding the next one back
    // until the instance frees: pipeline into instances that accept it.
    this.pool = new InstancePool(instances, observer, () => this.pump(), true, onDispatch, limiter);
  }

  enqueue(request: PendingRequest): void {
    if (this.stopped) {
      if (traceTags.batcher) traceLine('batcher', `${request.request.modelName}: ${traced(request.request)} refused: the scheduler is stopped`);
      request.fail(Errors.schedulerStopped());
      return;
    }
    this.queue.push(request);
    if (traceTags.batcher) {
      traceLine(
        'batcher',
        `${request.request.modelName}: queued ${traced(request.request)} (no batching; queue: ${this.queue.length} request(s); ${this.pool.hasIdle ? 'an instance is free' : 'every instance busy'})`,
      );
    }
    this.pump();
  }

  /**
   * Requests not yet executing: the queue's, and those waiting in an instance's own queue (a
   * stub's ring) behind the batch it runs, as Triton's count has every request received and not
   * yet started.
   */
  pendingCount(): number {
    return this.queue.length + this.pool.waiting;
  }

  kick(): void {
    this.pump();
  }

  stop(error: TritonError = Errors.schedulerStopped()): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const req of this.queue.drain()) if (!req.done) req.fail(error);
  }

  private pump(): void {
    this.guard.run(this.pass);
  }

  private readonly pass = (): void => {
    while (!this.stopped && this.queue.length > 0) {
      const idx = this.pool.idleReady();
      if (idx < 0) break;
      const req = this.queue.shift()!;
      if (req.done) continue;
      if (req.cancelled) {
        if (traceTags.batcher) traceLine('batcher', `${req.request.modelName}: ${traced(req.request)} left the queue: cancelled while queued`);
        req.fail(Errors.cancelled());
        continue;
      }
      this.dispatch(idx, req);
    }
  };

  private dispatch(idx: number, req: PendingRequest): void {
    req.queueEndNs = process.hrtime.bigint();
    const batch = [req];
    if (traceTags.batcher)
      traceLine('batcher', `${req.request.modelName}: ${traced(req.request)} handed to instance ${this.pool.nameOf(idx)} (${this.queue.length} left queued)`);
    this.pool.run(idx, batch, batch, Math.max(1, req.batchSize));
  }
}
