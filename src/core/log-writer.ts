/**
 * @module core/log-writer
 * Where the server log's lines go: a file descriptor (stderr, or the `--log-file`) written
 * asynchronously, so a slow reader of stderr holds a thread of libuv's pool, never the event
 * loop. Unwritten lines are bounded: past `maxPending` bytes a line is dropped (and counted, for
 * the logger to report). At exit what is still queued is written synchronously.
 *
 * A write that fails for good (EPIPE: the reader of stderr is gone; EBADF; a full disk) stops
 * the writer: later lines are dropped without trying, and the flush at exit writes nothing. A
 * reader that is alive but takes nothing more (EAGAIN) gets a bounded wait at exit. Either way
 * the server exits: a log nobody can read must not keep it running. (sonic-boom, used before,
 * retried a failed write forever in its exit flush; docs/design.md, "Not used, on purpose".)
 *
 * A write handed to libuv's pool when the process exits is not repeated by the flush, since it
 * may have happened already; its lines can then land after the ones the flush writes.
 */
import fs from 'node:fs';

export interface LogWriterOptions {
  /** Unwritten bytes past which new lines are dropped. */
  maxPending: number;
  /** How long the flush at exit waits, in all, for a reader that takes nothing (EAGAIN). */
  exitFlushMs?: number;
}

/** While the fd takes nothing (EAGAIN), how long before the next try. */
const RETRY_MS = 10;

export class LogWriter {
  readonly #fd: number;
  readonly #maxPending: number;
  readonly #exitFlushMs: number;
  /** Lines waiting for the next write, and their size in bytes. */
  #queue: string[] = [];
  #queued = 0;
  /** An asynchronous write is on its way, or waits to be tried again: its bytes. */
  #writing = false;
  #inFlight = 0;
  /** Bytes the fd refused (EAGAIN), waiting for `#retryTimer`: no thread is writing them. */
  #retry: Buffer | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #broken = false;

  constructor(fd: number, o: LogWriterOptions) {
    this.#fd = fd;
    this.#maxPending = o.maxPending;
    this.#exitFlushMs = o.exitFlushMs ?? 1000;
  }

  /** A write failed for good: nothing is written any more. */
  get broken(): boolean {
    return this.#broken;
  }

  /** Queues `line`; false when it was dropped (too much unwritten, or the writer stopped). */
  write(line: string): boolean {
    if (this.#broken) return false;
    const n = Buffer.byteLength(line);
    if (this.#inFlight + this.#queued + n > this.#maxPending) return false;
    this.#queue.push(line);
    this.#queued += n;
    if (!this.#writing) this.#next();
    return true;
  }

  /**
   * Writes what is queued now, synchronously (for the process's `exit` event): first the bytes
   * waiting to be tried again, then the queue. A write already handed to libuv's pool is not
   * repeated: its thread finishes it, or the process ends it.
   */
  flushSync(): void {
    if (this.#broken) return;
    clearTimeout(this.#retryTimer);
    const parts = this.#retry ? [this.#retry] : [];
    if (this.#queue.length > 0) parts.push(Buffer.from(this.#queue.join('')));
    this.#retry = undefined;
    this.#queue = [];
    this.#queued = 0;
    if (parts.length === 0) return;
    let buf = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    const deadline = Date.now() + this.#exitFlushMs;
    while (buf.length > 0) {
      try {
        buf = buf.subarray(fs.writeSync(this.#fd, buf));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() >= deadline) {
          this.#stop();
          return;
        }
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, RETRY_MS);
      }
    }
  }

  /** Hands everything queued to one asynchronous write. */
  #next(): void {
    this.#inFlight = 0;
    if (this.#queue.length === 0) {
      this.#writing = false;
      return;
    }
    this.#writing = true;
    const buf = Buffer.from(this.#queue.length === 1 ? this.#queue[0]! : this.#queue.join(''));
    this.#queue = [];
    this.#queued = 0;
    this.#send(buf);
  }

  #send(buf: Buffer): void {
    this.#inFlight = buf.length;
    fs.write(this.#fd, buf, 0, buf.length, null, (err, written) => {
      if (this.#broken) return;
      if (err) {
        if (err.code === 'EAGAIN') {
          // The reader is slow, not gone: try the same bytes again shortly.
          this.#retryLater(buf);
          return;
        }
        this.#stop();
        return;
      }
      if (written < buf.length) this.#send(buf.subarray(written));
      else this.#next();
    });
  }

  #retryLater(buf: Buffer): void {
    this.#retry = buf;
    this.#retryTimer = setTimeout(() => this.#retryNow(), RETRY_MS).unref();
  }

  /**
   * The retry is synchronous: EAGAIN means the fd is non-blocking, so the try cannot hold the
   * event loop, and the bytes never leave `#retry` for a pool thread, where the exit flush
   * could not see them (it would write the queue behind them first).
   */
  #retryNow(): void {
    const buf = this.#retry!;
    let written: number;
    try {
      written = fs.writeSync(this.#fd, buf);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EAGAIN') this.#retryLater(buf);
      else this.#stop();
      return;
    }
    this.#retry = undefined;
    if (written < buf.length) this.#send(buf.subarray(written));
    else this.#next();
  }

  #stop(): void {
    this.#broken = true;
    this.#writing = false;
    this.#inFlight = 0;
    this.#retry = undefined;
    clearTimeout(this.#retryTimer);
    this.#queue = [];
    this.#queued = 0;
  }
}
