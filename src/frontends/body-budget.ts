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
import { waitAsync } from './wait-async.js';

/** The default budget: a quarter of the RAM, at most 2 GiB, at least one request of `atLeast` bytes. */
export function defaultBodyMemory(atLeast: number): number {
  return Math.max(atLeast, Math.min(2 * 1024 ** 3, Math.floor(os.totalmem() / 4)));
}

/**
 * The words of a budget that frontend threads share (frontends/threads/): bytes in use (one
 * int64) and a counter bumped by each give-back (one int32), which a thread waiting for memory
 * watches with `Atomics.waitAsync`, so memory freed by one thread wakes readers of the others.
 */
export function sharedBodyBudgetMemory(): SharedArrayBuffer {
  return new SharedArrayBuffer(16);
}

export class BodyBudget {
  private used = 0;
  private readonly waiters: Array<() => void> = [];
  private readonly shared: { used: BigInt64Array; freed: Int32Array } | undefined;
  private watching = false;

  /** @param shared from sharedBodyBudgetMemory(): one budget for every thread given the same memory */
  constructor(
    readonly capacity: number,
    shared?: SharedArrayBuffer,
  ) {
    if (shared !== undefined) this.shared = { used: new BigInt64Array(shared, 0, 1), freed: new Int32Array(shared, 8, 1) };
  }

  /** Bytes reserved by bodies being read or still in use. */
  get inUse(): number {
    return this.shared === undefined ? this.used : Number(Atomics.load(this.shared.used, 0));
  }

  /** Reserves `n` bytes if they fit now. */
  tryTake(n: number): boolean {
    const s = this.shared;
    if (s === undefined) {
      if (this.used + n > this.capacity && this.used > 0) return false;
      this.used += n;
      return true;
    }
    for (;;) {
      const cur = Atomics.load(s.used, 0);
      const used = Number(cur);
      if (used + n > this.capacity && used > 0) return false;
      if (Atomics.compareExchange(s.used, 0, cur, cur + BigInt(n)) === cur) return true;
    }
  }

  /** Reserves `n` bytes even past the capacity: a chunk that is already in memory. */
  take(n: number): void {
    if (this.shared === undefined) this.used += n;
    else Atomics.add(this.shared.used, 0, BigInt(n));
  }

  /** Whether readers should wait before buffering more. */
  get exhausted(): boolean {
    return this.inUse >= this.capacity;
  }

  give(n: number): void {
    const s = this.shared;
    if (s === undefined) {
      this.used -= n;
      if (this.used < 0) this.used = 0;
    } else {
      for (;;) {
        const cur = Atomics.load(s.used, 0);
        const next = cur - BigInt(n);
        if (Atomics.compareExchange(s.used, 0, cur, next < 0n ? 0n : next) === cur) break;
      }
      Atomics.add(s.freed, 0, 1);
      Atomics.notify(s.freed, 0);
    }
    this.wake();
  }

  /** Calls `fn` once some memory was given back (by this thread or, when shared, by any). */
  whenFreed(fn: () => void): void {
    this.waiters.push(fn);
    const s = this.shared;
    if (s === undefined || this.watching) return;
    // One watch per thread, however many readers wait: the next give-back anywhere wakes them all.
    this.watching = true;
    const w = waitAsync(s.freed, 0, Atomics.load(s.freed, 0));
    const woke = (): void => {
      this.watching = false;
      this.wake();
    };
    if (w.async) void (w.value as Promise<string>).then(woke);
    else queueMicrotask(woke);
  }

  /** Forgets a waiter whose reader went away. */
  cancel(fn: () => void): void {
    const i = this.waiters.indexOf(fn);
    if (i >= 0) this.waiters.splice(i, 1);
  }

  /** Wakes in arrival order; each waiter retries and waits again if it still does not fit. */
  private wake(): void {
    const ready = this.waiters.splice(0);
    for (const w of ready) w();
  }
}
