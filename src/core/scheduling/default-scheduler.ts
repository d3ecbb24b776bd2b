/**
 * @module core/scheduling/default-scheduler
 * The scheduler of a model without `dynamic_batching` / `sequence_batching` (protocol spec
 * §3.5): every request is its own execution, queued FIFO without size limit or timeouts and
 * handed to the next idle ready instance. Each instance runs one batch at a time.
 *
 * No timers: dispatch happens synchronously on enqueue (when an instance is idle) and when an
 * execution finishes or `kick()` reports an instance became ready.
 */
import { asTritonError, Errors, type TritonError } from '../errors.js';
import { Ring } from './queue.js';
import type { ExecutionInstance, ExecutionObserver, ExecutionTimes, PendingRequest, Scheduler } from './types.js';

export class DefaultScheduler implements Scheduler {
  private readonly instances: ExecutionInstance[];
  private readonly observer: ExecutionObserver;
  private readonly busy: boolean[];
  private readonly queue = new Ring<PendingRequest>();
  private stopped = false;
  // Re-entrancy guard: execute() or a failing request's sink may call back into enqueue().
  private pumping = false;
  private repump = false;

  constructor(instances: ExecutionInstance[], observer: ExecutionObserver) {
    this.instances = instances.slice();
    this.observer = observer;
    this.busy = instances.map(() => false);
  }

  enqueue(request: PendingRequest): void {
    if (this.stopped) {
      request.fail(Errors.schedulerStopped());
      return;
    }
    this.queue.push(request);
    this.pump();
  }

  pendingCount(): number {
    return this.queue.length;
  }

  kick(): void {
    this.pump();
  }

  stop(error: TritonError = Errors.schedulerStopped()): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const req of this.queue.drain()) if (!req.done) req.fail(error);
  }

  private idleInstance(): number {
    for (let i = 0; i < this.instances.length; i++) {
      if (!this.busy[i] && this.instances[i]!.isReady()) return i;
    }
    return -1;
  }

  private pump(): void {
    if (this.pumping) {
      this.repump = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.repump = false;
        while (!this.stopped && this.queue.length > 0) {
          const idx = this.idleInstance();
          if (idx < 0) break;
          const req = this.queue.shift()!;
          if (req.done) continue;
          if (req.cancelled) {
            req.fail(Errors.cancelled());
            continue;
          }
          this.dispatch(idx, req);
        }
      } while (this.repump);
    } finally {
      this.pumping = false;
    }
  }

  private dispatch(idx: number, req: PendingRequest): void {
    req.queueEndNs = process.hrtime.bigint();
    this.busy[idx] = true;
    const batch = [req];
    let run: Promise<ExecutionTimes>;
    try {
      run = this.instances[idx]!.execute(batch);
    } catch (err) {
      run = Promise.reject(err);
    }
    run.then(
      (times) => {
        this.busy[idx] = false;
        try {
          this.observer(batch, times, Math.max(1, req.batchSize));
        } catch {
          // Accounting must never stall the queue.
        }
        this.pump();
      },
      (err: unknown) => {
        // execute() is not supposed to reject; answer the request rather than leave it hanging.
        this.busy[idx] = false;
        if (!req.done) req.fail(asTritonError(err));
        this.pump();
      },
    );
  }
}
