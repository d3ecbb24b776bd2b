/**
 * @module frontends/http/body
 * Reads a request body into one Buffer under a size limit and the server's body budget
 * (`body-budget.ts`), and inflates gzip / deflate bodies under `--http-max-input-size`. With a
 * Content-Length the body is read straight into a buffer of that size, reserved in the budget
 * before the first byte is buffered; a body that arrives as a single chunk is used as is,
 * without a copy. The caller releases the body once nothing reads it any more.
 */
import type { BodySink, HttpRequest } from './wire/exchange.js';
import { unzip } from 'node:zlib';
import { Errors, type TritonError } from '../../core/errors.js';
import type { BodyBudget } from '../body-budget.js';

export type RequestEncoding = 'identity' | 'gzip' | 'deflate';

/** A body and its share of the budget, given back by release() (idempotent). */
export interface Body {
  readonly data: Buffer;
  release(): void;
}

export interface BodyLimit {
  /** Most bytes this body may have. */
  max: number;
  /** The error for a body over `max` (size undefined: unknown until read). */
  tooLarge(size: number): TritonError;
  budget: BodyBudget;
}

/**
 * The request's `Content-Encoding`, or undefined for one Triton does not accept (answered with
 * 501 and `Accept-Encoding: gzip, deflate`).
 */
export function requestEncoding(header: string | undefined): RequestEncoding | undefined {
  if (header === undefined || header === '') return 'identity';
  const value = header.trim().toLowerCase();
  if (value === 'gzip' || value === 'deflate' || value === 'identity' || value === '') {
    return value === '' ? 'identity' : value;
  }
  return undefined;
}

/** The limit of an ordinary body: `--http-max-input-size` (the same object while the settings stay). */
export function inputSizeLimit(maxInputSize: number, budget: BodyBudget): BodyLimit {
  const last = lastLimit;
  if (last !== undefined && last.max === maxInputSize && last.budget === budget) return last;
  const limit: BodyLimit = { max: maxInputSize, tooLarge: (size) => Errors.bodyTooLarge(size, maxInputSize), budget };
  lastLimit = limit;
  return limit;
}
let lastLimit: BodyLimit | undefined;

/**
 * Collects the body. Rejects with a 400 TritonError when it exceeds `limit.max` bytes, or the
 * whole budget (`--http-max-body-memory`), which no wait would make room for: a declared length
 * before any byte is read, a chunked body once its chunks pass it.
 */
export function readBody(req: HttpRequest, limit: BodyLimit): Promise<Body> {
  return new Promise<Body>((resolve, reject) => {
    readBodyThen(req, limit, { onBody: (err, body) => (err === undefined ? resolve(body!) : reject(err)) });
  });
}

/**
 * Receives the outcome of readBodyThen: the body, or why there is none. An object, so that a
 * handler's own per-request record takes it rather than a closure made for it.
 */
export interface BodyListener {
  onBody(err: Error | undefined, body: Body | undefined): void;
}

/**
 * readBody with a callback, called exactly once: synchronously (before this returns) when the
 * whole body has already arrived, as it usually has, so a request costs no promise.
 */
export function readBodyThen(req: HttpRequest, limit: BodyLimit, done: BodyListener): void {
  const declared = req.headers['content-length'];
  const reader = new BodyReader(req, limit, declared === undefined ? -1 : Number(declared), done);
  reader.start();
}

/**
 * One body being read (one object per request instead of a closure per step). With a known
 * length: one buffer of that size (or the first chunk itself, if it is the whole body). Without
 * one (chunked): the chunks, joined at the end.
 */
class BodyReader implements BodySink, Body {
  data: Buffer = EMPTY;
  private whole: Buffer | undefined;
  private chunks: Buffer[] | undefined;
  private received = 0;
  private reserved = 0;
  private settled = false;
  private waiting: (() => void) | undefined;
  /**
   * A known length is reserved whole before the body is buffered. Until it fits, what already
   * arrived is held as is and the socket is paused: the client waits (TCP).
   */
  private granted: boolean;
  private held: Buffer[] | undefined;
  private ended = false;
  private readonly budget: BodyBudget;

  constructor(
    private readonly req: HttpRequest,
    private readonly limit: BodyLimit,
    private readonly expected: number,
    private readonly done: BodyListener,
  ) {
    this.budget = limit.budget;
    this.granted = expected <= 0;
  }

  start(): void {
    const refused = this.tooLarge(this.expected);
    if (refused !== undefined) {
      this.settled = true;
      this.done.onBody(refused, undefined);
      return;
    }
    this.req.read(this);
    if (this.granted || this.settled) return;
    this.reserve();
  }

  /** Body: gives the body's share of the budget back (idempotent). */
  release(): void {
    if (this.waiting !== undefined) this.budget.cancel(this.waiting);
    this.waiting = undefined;
    this.budget.give(this.reserved);
    this.reserved = 0;
  }

  // --- BodySink ---

  chunk(chunk: Buffer): void {
    if (this.settled) return;
    if (this.granted) this.accept(chunk);
    else (this.held ??= []).push(chunk);
  }

  end(): void {
    if (this.granted) this.finish();
    else this.ended = true;
  }

  error(err: Error): void {
    this.fail(err);
  }

  private tooLarge(size: number): TritonError | undefined {
    const { limit, budget } = this;
    return size > limit.max ? limit.tooLarge(size) : size > budget.capacity ? Errors.bodyOverMemory(size, budget.capacity) : undefined;
  }

  private fail(err: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.release();
    this.held = undefined;
    this.req.resume();
    this.done.onBody(err, undefined);
  }

  /**
   * Chunked: reserve as chunks arrive; hold the socket while the budget is spent by others
   * (memory only this body holds is never given back while it waits: it reads on, and is
   * refused once past the budget).
   */
  private mustWait(): boolean {
    return this.budget.exhausted && this.budget.inUse > this.reserved;
  }

  private holdWhileExhausted(): void {
    if (!this.mustWait() || this.waiting !== undefined) return;
    this.req.pause();
    const waiting = (): void => {
      this.waiting = undefined;
      if (this.settled) return;
      if (this.mustWait()) this.holdWhileExhausted();
      else this.req.resume();
    };
    this.waiting = waiting;
    this.budget.whenFreed(waiting);
  }

  private accept(chunk: Buffer): void {
    const { expected, received } = this;
    const next = received + chunk.length;
    const over = this.tooLarge(next);
    if (over !== undefined) {
      this.fail(over);
      return;
    }
    if (expected > 0 && next <= expected) {
      if (received === 0 && chunk.length === expected) this.whole = chunk;
      else {
        if (this.whole === undefined) this.whole = Buffer.allocUnsafe(expected);
        chunk.copy(this.whole, received);
      }
    } else {
      // Chunked (the connection enforces a Content-Length, so never more than declared).
      if (this.chunks === undefined) this.chunks = this.whole !== undefined ? [this.whole.subarray(0, received)] : [];
      this.whole = undefined;
      this.chunks.push(chunk);
      this.budget.take(chunk.length);
      this.reserved += chunk.length;
      this.holdWhileExhausted();
    }
    this.received = next;
  }

  private finish(): void {
    if (this.settled) return;
    this.settled = true;
    const { chunks, whole, received } = this;
    if (chunks !== undefined) this.data = Buffer.concat(chunks, received);
    else if (whole !== undefined) this.data = received === whole.length ? whole : whole.subarray(0, received);
    this.chunks = undefined;
    this.whole = undefined;
    this.done.onBody(undefined, this);
  }

  private reserve(): void {
    this.waiting = undefined;
    if (this.settled) return;
    if (!this.budget.tryTake(this.expected)) {
      this.req.pause();
      const again = (): void => this.reserve();
      this.waiting = again;
      this.budget.whenFreed(again);
      return;
    }
    this.reserved = this.expected;
    this.granted = true;
    const early = this.held ?? [];
    this.held = undefined;
    for (const c of early) if (!this.settled) this.accept(c);
    if (this.ended) this.finish();
    else this.req.resume();
  }
}

const EMPTY = Buffer.alloc(0);

/**
 * Inflates a gzip or deflate body. Both go through zlib's header auto-detection, as Triton
 * inflates with windowBits 15|32, so a zlib- or gzip-wrapped stream is accepted under either
 * name. The inflated size is held to `--http-max-input-size` and counted in the budget; the
 * compressed body is released once inflated.
 */
export function decodeBody(body: Body, encoding: RequestEncoding, maxInputSize: number, budget: BodyBudget): Promise<Body> {
  if (encoding === 'identity') return Promise.resolve(body);
  return new Promise<Body>((resolve, reject) => {
    unzip(body.data, { maxOutputLength: maxInputSize }, (err, out) => {
      body.release();
      if (err === null) {
        budget.take(out.length);
        let held = out.length;
        resolve({
          data: out,
          release: () => {
            budget.give(held);
            held = 0;
          },
        });
      } else if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') reject(Errors.bodyTooLarge(undefined, maxInputSize));
      else reject(Errors.decompressFailed(encoding, err.message));
    });
  });
}
