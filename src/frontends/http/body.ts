/**
 * @module frontends/http/body
 * Reads a request body into one Buffer under `--http-max-input-size`, and inflates gzip /
 * deflate bodies under the same limit. With a Content-Length the body is read straight into a
 * buffer of that size; a body that arrives as a single chunk is used as is, without a copy.
 */
import type { HttpRequest } from './wire/exchange.js';
import { unzip } from 'node:zlib';
import { Errors } from '../../core/errors.js';

export type RequestEncoding = 'identity' | 'gzip' | 'deflate';

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

/** Collects the body. Rejects with a 400 TritonError when it exceeds `limit` bytes. */
export function readBody(req: HttpRequest, limit: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const declared = req.headers['content-length'];
    const expected = declared === undefined ? -1 : Number(declared);
    if (expected > limit) {
      reject(Errors.bodyTooLarge(expected, limit));
      return;
    }
    // With a known length: one buffer of that size (or the first chunk itself, if it is the
    // whole body). Without one (chunked): the chunks, joined at the end.
    let whole: Buffer | undefined;
    let chunks: Buffer[] | undefined;
    let received = 0;
    let settled = false;
    req.read({
      data(chunk: Buffer): void {
        if (settled) return;
        const next = received + chunk.length;
        if (next > limit) {
          settled = true;
          reject(Errors.bodyTooLarge(next, limit));
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
        }
        received = next;
      },
      end(): void {
        if (settled) return;
        settled = true;
        if (chunks !== undefined) resolve(Buffer.concat(chunks, received));
        else if (whole !== undefined) resolve(received === whole.length ? whole : whole.subarray(0, received));
        else resolve(EMPTY);
      },
      error(err: Error): void {
        if (settled) return;
        settled = true;
        reject(err);
      },
    });
  });
}

const EMPTY = Buffer.alloc(0);

/**
 * Inflates a gzip or deflate body. Both go through zlib's header auto-detection, as Triton
 * inflates with windowBits 15|32, so a zlib- or gzip-wrapped stream is accepted under either
 * name. The inflated size is held to the same limit as a plain body.
 */
export function decodeBody(body: Buffer, encoding: RequestEncoding, limit: number): Promise<Buffer> {
  if (encoding === 'identity') return Promise.resolve(body);
  return new Promise<Buffer>((resolve, reject) => {
    unzip(body, { maxOutputLength: limit }, (err, out) => {
      if (err === null) resolve(out);
      else if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') reject(Errors.bodyTooLarge(undefined, limit));
      else reject(Errors.decompressFailed(encoding, err.message));
    });
  });
}
