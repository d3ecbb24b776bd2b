/**
 * @module core/ensemble/scheduler
 * The scheduler of an ensemble version: no queue and no instances, every request starts its run
 * at once (core/ensemble/run.ts) and its steps queue at their own models, as Triton's ensemble
 * scheduler does. Its queue time is therefore ~0, and each finished request counts as one
 * execution whose compute phases are the sums of its steps' (docs/protocol-notes.md,
 * "Ensembles").
 */
import { Errors, type TritonError } from '../errors.js';
import type { InternalClient } from '../internal-client.js';
import type { ExecutionObserver, PendingRequest, Scheduler } from '../scheduling/types.js';
import type { EnsembleBinding } from './binding.js';
import type { EnsemblePlan } from './plan.js';
import { EnsembleRun } from './run.js';

export class EnsembleScheduler implements Scheduler {
  private stopped: TritonError | undefined;

  constructor(
    private readonly plan: EnsemblePlan,
    private readonly binding: EnsembleBinding,
    private readonly client: InternalClient,
    private readonly onExecution: ExecutionObserver,
  ) {}

  enqueue(request: PendingRequest): void {
    if (this.stopped) {
      request.fail(this.stopped);
      return;
    }
    this.run(request, true);
  }

  /** Runs a request outside the statistics (ensemble warmup). */
  runUncounted(request: PendingRequest): void {
    this.run(request, false);
  }

  private run(request: PendingRequest, counted: boolean): void {
    request.queueEndNs = process.hrtime.bigint();
    new EnsembleRun(
      {
        plan: this.plan,
        binding: this.binding,
        client: this.client,
        onExecution: counted ? (r, times) => this.onExecution([r], times, Math.max(1, r.batchSize)) : () => {},
      },
      request,
    ).start();
  }

  pendingCount(): number {
    return 0;
  }

  kick(): void {}

  stop(error: TritonError = Errors.schedulerStopped()): void {
    this.stopped ??= error;
  }
}
