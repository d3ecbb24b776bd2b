/**
 * @module core/scheduling/scheduler-hold
 * Triton's test-only scheduler holds, which its sequence-batcher QA suites set so that a batch
 * forms from requests sent one after another: with `TRITONSERVER_DELAY_SCHEDULER=N` the
 * sequence batcher runs nothing until its slots hold N requests together (a dynamic batcher,
 * until its queue does), and with `TRITONSERVER_BACKLOG_DELAY_SCHEDULER=M` the sequence batcher
 * also waits until M wait in its backlog. Once met, the hold is gone for good. Read once per model load; unset (the normal case) costs nothing.
 */

/** How often a held batcher looks again (Triton polls every 10 ms). */
const HOLD_POLL_MS = 10;

export class SchedulerHold {
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly queued: number,
    private readonly backlogged: number,
  ) {}

  /** The hold the environment asks for, or undefined without one (or with 0s). */
  static fromEnv(env: NodeJS.ProcessEnv = process.env): SchedulerHold | undefined {
    const n = count(env.TRITONSERVER_DELAY_SCHEDULER);
    const m = count(env.TRITONSERVER_BACKLOG_DELAY_SCHEDULER);
    return n === 0 && m === 0 ? undefined : new SchedulerHold(n, m);
  }

  /**
   * Whether the batcher must still wait, given what it holds now; while it must, `retry` runs
   * once in 10 ms. False means met: the batcher drops the hold.
   */
  holds(queued: number, backlogged: number, retry: () => void): boolean {
    if (queued >= this.queued && backlogged >= this.backlogged) return false;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      retry();
    }, HOLD_POLL_MS);
    return true;
  }

  /** The batcher stopped: no retry. */
  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

function count(v: string | undefined): number {
  const n = Number(v ?? 0);
  return Number.isInteger(n) && n > 0 ? n : 0;
}
