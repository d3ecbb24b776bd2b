/**
 * @module backends/python/readiness-probe
 * Node's side of a model's own readiness check, `is_ready()` (docs/protocol-notes.md, "A model's own readiness check"), for one
 * instance. One call is in flight in the stub at a time: a check that arrives meanwhile waits
 * for that call's answer and shares it. Each check waits at most READY_TIMEOUT_MS (Triton's
 * bound) and is then not ready; the call in the stub may still run, and a later check joins it
 * instead of asking again, so a hanging `is_ready()` never piles up calls.
 *
 * Requests go to the stub through the instance's readiness pipe, answers come back on ring B
 * as `ready_done` (docs/ipc.md, "Readiness requests").
 */
import type { Writable } from 'node:stream';
import { Errors, type TritonError } from '../../core/errors.js';
import type { ReadyDoneMsg } from './ipc/messages.js';

/** Triton's bound on one `is_ready()` answer (kUserModelReadinessTimeoutMs). */
export const READY_TIMEOUT_MS = 5000;

/**
 * `{t:"ready_done", seq, ready, err?}` from the stub (ipc/messages.ts); `err` is the exception
 * `is_ready()` raised, or the non-bool complaint: the instance is not ready.
 */
export type ReadyDone = Pick<ReadyDoneMsg, 'seq' | 'ready' | 'err'>;

type Waiter = (result: TritonError | undefined) => void;

export class ReadinessProbe {
  private lastSeq = 0;
  private pending: { seq: number; waiters: Set<Waiter> } | undefined;

  constructor(
    private readonly pipe: Writable,
    private readonly instance: string,
    private readonly timeoutMs = READY_TIMEOUT_MS,
  ) {}

  /** Resolves with why the instance is not ready, or undefined when `is_ready()` said True. */
  check(): Promise<TritonError | undefined> {
    return new Promise((resolve) => {
      let pending = this.pending;
      if (!pending) {
        this.lastSeq = (this.lastSeq + 1) >>> 0;
        pending = this.pending = { seq: this.lastSeq, waiters: new Set() };
        const word = Buffer.alloc(4);
        word.writeUInt32LE(this.lastSeq, 0);
        this.pipe.write(word);
      }
      const waiters = pending.waiters;
      const done: Waiter = (result) => {
        clearTimeout(timer);
        waiters.delete(done);
        resolve(result);
      };
      const timer = setTimeout(() => done(Errors.userReadyTimeout()), this.timeoutMs);
      timer.unref();
      waiters.add(done);
    });
  }

  /** The stub's answer; one for an older request (a restarted probe) is ignored. */
  answered(m: ReadyDone): void {
    const pending = this.pending;
    if (!pending || pending.seq !== m.seq) return;
    this.pending = undefined;
    let result: TritonError | undefined;
    if (m.err !== undefined) result = Errors.userReadyFailed(m.err);
    else if (m.ready !== true) result = Errors.userNotReady(this.instance);
    for (const done of [...pending.waiters]) done(result);
  }

  /** The stub is gone: every waiting check ends with `error`. */
  abandon(error: TritonError): void {
    const pending = this.pending;
    this.pending = undefined;
    if (pending) for (const done of [...pending.waiters]) done(error);
  }
}
