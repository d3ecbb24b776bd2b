/**
 * @module frontends/body-budget
 * The memory request bodies may hold at once, one budget per frontend. `--http-max-input-size`
 * bounds the JSON part of one HTTP request, as Triton does, but not the binary tensor data behind
 * `Inference-Header-Content-Length`, and a gRPC message may be up to 2 GiB; without a bound
 * across requests, many large uploads at once would exhaust the heap. HTTP: each body reserves
 * its bytes here before they are buffered (the whole Content-Length up front, or chunk by chunk
 * when chunked); a reader that cannot reserve pauses its socket and waits, and TCP holds the
 * client back. A single body larger than the whole budget can never fit and is refused. gRPC:
 * a message that does not arrive whole in one chunk reserves its length once its prefix is read
 * (grpc/transport/body-hold.ts); a call that cannot pauses its stream, and HTTP/2 flow control
 * holds the client back.
 */
import os from 'node:os';

/** The default budget: a quarter of the RAM, at most 2 GiB, at least one request of `atLeast` bytes. */
export function defaultBodyMemory(atLeast: number): number {
  return Math.max(atLeast, Math.min(2 * 1024 ** 3, Math.floor(os.totalmem() / 4)));
}

export class BodyBudget {
  private used = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly capacity: number) {}

  /** Bytes reserved by bodies being read or still in use. */
  get inUse(): number {
    return this.used;
  }

  /** Reserves `n` bytes if they fit now. */
  tryTake(n: number): boolean {
    if (this.used + n > this.capacity && this.used > 0) return false;
    this.used += n;
    return true;
  }

  /** Reserves `n` bytes even past the capacity: a chunk that is already in memory. */
  take(n: number): void {
    this.used += n;
  }

  /** Whether readers should wait before buffering more. */
  get exhausted(): boolean {
    return this.used >= this.capacity;
  }

  give(n: number): void {
    this.used -= n;
    if (this.used < 0) this.used = 0;
    // Wake in arrival order; each waiter retries and waits again if it still does not fit.
    const ready = this.waiters.splice(0);
    for (const w of ready) w();
  }

  /** Calls `fn` once some memory was given back. */
  whenFreed(fn: () => void): void {
    this.waiters.push(fn);
  }

  /** Forgets a waiter whose reader went away. */
  cancel(fn: () => void): void {
    const i = this.waiters.indexOf(fn);
    if (i >= 0) this.waiters.splice(i, 1);
  }
}
