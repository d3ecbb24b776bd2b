/**
 * @module frontends/grpc/transport/body-hold
 * What one call holds of the frontend's body budget (frontends/body-budget.ts). A message that
 * arrives whole in one chunk is already in memory and reserves nothing (the common case: small
 * requests). One that spans chunks reserves its whole length as soon as its prefix is read; when
 * that does not fit, the call's stream is paused, holding nothing, and retried each time memory
 * is given back, so calls never wait on each other's half-read messages. HTTP/2 flow control
 * then stops the client. A unary call keeps its reservation until it ends (its tensors are
 * views of the message); a stream gives each message's back once the message is whole (the
 * stream's own backpressure bounds the requests it has in flight).
 */
import type { H2Stream } from './h2-session.js';
import type { BodyBudget } from '../../body-budget.js';
import type { MessageReader } from './message-reader.js';

export class BodyHold {
  /** Reserved for the message still arriving. */
  private reserved = 0;
  /** Reserved for whole messages still in use (unary). */
  private kept = 0;
  /** `reader.completed` when `reserved` was taken: a change means that message is whole. */
  private seen = 0;
  private waiter: (() => void) | undefined;

  constructor(
    private readonly stream: H2Stream,
    private readonly budget: BodyBudget,
    private readonly keepWhole: boolean,
  ) {}

  /** After each chunk went into `reader`. */
  afterPush(reader: MessageReader): void {
    if (this.reserved > 0 && reader.completed !== this.seen) {
      if (this.keepWhole) this.kept += this.reserved;
      else this.budget.give(this.reserved);
      this.reserved = 0;
    }
    if (this.reserved > 0 || this.waiter) return;
    const pending = reader.pendingMessageBytes;
    if (pending === undefined) return;
    this.seen = reader.completed;
    if (this.budget.tryTake(pending)) {
      this.reserved = pending;
      return;
    }
    this.stream.pause();
    const retry = (): void => {
      this.waiter = undefined;
      if (this.stream.destroyed) return;
      if (this.budget.tryTake(pending)) {
        this.reserved = pending;
        this.stream.resume();
        return;
      }
      this.waiter = retry;
      this.budget.whenFreed(retry);
    };
    this.waiter = retry;
    this.budget.whenFreed(retry);
  }

  /** The call's stream closed (its reading says so): everything held goes back. */
  close(): void {
    if (this.waiter) this.budget.cancel(this.waiter);
    this.waiter = undefined;
    if (this.reserved + this.kept > 0) this.budget.give(this.reserved + this.kept);
    this.reserved = 0;
    this.kept = 0;
  }
}
