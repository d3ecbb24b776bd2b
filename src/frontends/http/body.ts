/**
 * @module frontends/http/body
 * Reads a request body into one Buffer under a size limit and the server's body budget
 * (`body-budget.ts`), and inflates gzip / deflate bodies under `--http-max-input-size`. With a
 * Content-Length the body is read straight into a buffer of that size, reserved in the budget
 * before the first byte is buffered; a body that arrives as a single chunk is used as is,
 * without a copy. The caller releases the body once nothing reads it any more.
 */
import type { HttpRequest } from './wire/exchange.js';
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

/** The limit of an ordinary body: `--http-max-input-size`. */
export function inputSizeLimit(maxInputSize: number, budget: BodyBudget): BodyLimit {
  return { max: maxInputSize, tooLarge: (size) => Errors.bodyTooLarge(size, maxInputSize), budget };
}

/**
 * Collects the body. Rejects with a 400 TritonError when it exceeds `limit.max` bytes, or the
 * whole budget (`--http-max-body-memory`), which no wait would make room for: a declared length
 * before any byte is read, a chunked body once its chunks pass it.
 */
export function readBody(req: HttpRequest, limit: BodyLimit): Promise<Body> {
  const { budget } = limit;
  return new Promise<Body>((resolve, reject) => {
    const declared = req.headers['content-length'];
    const expected = declared === undefined ? -1 : Number(declared);
    const tooLarge = (size: number): TritonError | undefined =>
      size > limit.max ? limit.tooLarge(size) : size > budget.capacity ? Errors.bodyOverMemory(size, budget.capacity) : undefined;
    const refused = tooLarge(expected);
    if (refused !== undefined) {
      reject(refused);
      return;
    }
    // With a known length: one buffer of that size (or the first chunk itself, if it is the
    // whole body). Without one (chunked): the chunks, joined at the end.
    let whole: Buffer | undefined;
    let chunks: Buffer[] | undefined;
    let received = 0;
    let reserved = 0;
    let settled = false;
    let waiting: (() => void) | undefined;
    // A known length is reserved whole before the body is buffered. Until it fits, what
    // already arrived is held as is and the socket is paused: the client waits (TCP).
    let granted = expected <= 0;
    let held: Buffer[] | undefined;
    let ended = false;
    const giveBack = (): void => {
      if (waiting !== undefined) budget.cancel(waiting);
      waiting = undefined;
      budget.give(reserved);
      reserved = 0;
    };
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      giveBack();
      held = undefined;
      req.resume();
      reject(err);
    };
    // Chunked: reserve as chunks arrive; hold the socket while the budget is spent by others
    // (memory only this body holds is never given back while it waits: it reads on, and is
    // refused once past the budget).
    const mustWait = (): boolean => budget.exhausted && budget.inUse > reserved;
    const holdWhileExhausted = (): void => {
      if (!mustWait() || waiting !== undefined) return;
      req.pause();
      waiting = () => {
        waiting = undefined;
        if (settled) return;
        if (mustWait()) holdWhileExhausted();
        else req.resume();
      };
      budget.whenFreed(waiting);
    };
    const accept = (chunk: Buffer): void => {
      const next = received + chunk.length;
      const over = tooLarge(next);
      if (over !== undefined) {
        fail(over);
        return;
      }
      if (expected > 0 && next <= expected) {
        if (received === 0 && chunk.length === expected) whole = chunk;
        else {
          if (whole === undefined) whole = Buffer.allocUnsafe(expected);
          chunk.copy(whole, received);
        }
      } else {
        // Chunked (the connection enforces a Content-Length, so never more than declared).
        if (chunks === undefined) chunks = whole !== undefined ? [whole.subarray(0, received)] : [];
        whole = undefined;
        chunks.push(chunk);
        budget.take(chunk.length);
        reserved += chunk.length;
        holdWhileExhausted();
      }
      received = next;
    };
    const finish = (): void => {
      if (settled) return;
      settled = true;
      let data: Buffer;
      if (chunks !== undefined) data = Buffer.concat(chunks, received);
      else if (whole !== undefined) data = received === whole.length ? whole : whole.subarray(0, received);
      else data = EMPTY;
      resolve({ data, release: giveBack });
    };
    req.read({
      data(chunk: Buffer): void {
        if (settled) return;
        if (granted) accept(chunk);
        else (held ??= []).push(chunk);
      },
      end(): void {
        if (granted) finish();
        else ended = true;
      },
      error: fail,
    });
    if (granted || settled) return;
    const reserve = (): void => {
      waiting = undefined;
      if (settled) return;
      if (!budget.tryTake(expected)) {
        req.pause();
        waiting = reserve;
        budget.whenFreed(reserve);
        return;
      }
      reserved = expected;
      granted = true;
      const early = held ?? [];
      held = undefined;
      for (const c of early) if (!settled) accept(c);
      if (ended) finish();
      else req.resume();
    };
    reserve();
  });
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
