/**
 * @module frontends/http/infer-response-stream
 * Sends an infer response whose JSON holds a large output (infer-response.ts decides which).
 * The array text is rendered a slice at a time and each slice goes to the socket before the
 * next is made, so the JS heap never holds the whole text (a 512 MiB tensor's text is longer
 * than V8's longest string) and the event loop serves other connections between slices.
 *
 * - JSON only, identity encoding: chunked transfer coding (HTTP/1.1) or a body ended by close
 *   (HTTP/1.0); the next slice waits for the socket to drain when a write says it is full, so
 *   a slow reader holds at most one slice and the socket's buffer.
 * - Binary outputs after the JSON (Inference-Header-Content-Length needs the JSON's length
 *   first) or a compressed body: the slices are rendered into Buffers, still yielding between
 *   slices, then sent as the small path sends them.
 */
import type { HttpResponse } from './wire/exchange.js';
import type { ResponseEncoding } from './compression.js';
import { compress } from './compression.js';
import type { JsonArrayText } from './tensor-json.js';

/** Elements per slice: a few milliseconds of rendering, a few hundred KiB of text. */
const SLICE_ELEMENTS = 32 * 1024;

export interface LargeJsonResponse {
  pieces: Array<string | JsonArrayText>;
  blobs: Buffer[];
  blobBytes: number;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Sends the response and calls `release` once the output buffers are no longer read. Never throws. */
export function sendLargeJsonResponse(
  res: HttpResponse,
  enc: LargeJsonResponse,
  headers: Record<string, string | number>,
  encoding: ResponseEncoding,
  release: () => void,
): void {
  const run = enc.blobBytes === 0 && encoding === 'identity' ? streamChunked(res, enc, headers) : renderThenSend(res, enc, headers, encoding);
  run.then(
    () => release(),
    () => {
      release();
      res.destroy(); // the head is out: a broken body can only end the connection
    },
  );
}

/** Yields the text of the pieces a slice at a time. */
function* slices(pieces: Array<string | JsonArrayText>): Generator<string> {
  for (const p of pieces) {
    if (typeof p === 'string') yield p;
    else
      do yield p.next(SLICE_ELEMENTS);
      while (!p.done);
  }
}

async function streamChunked(res: HttpResponse, enc: LargeJsonResponse, headers: Record<string, string | number>): Promise<void> {
  res.writeHead(200, headers);
  for (const text of slices(enc.pieces)) {
    if (res.destroyed) return;
    // A full socket is waited for; either way the next slice waits for the next turn of the
    // loop: a write the kernel takes at once reports 'drain' from process.nextTick, and a
    // chain of those would render the whole text without letting the loop run.
    if (!res.write(text)) await new Promise<void>((resolve) => res.onDrain(resolve));
    await nextTurn();
  }
  if (res.destroyed) return;
  await new Promise<void>((resolve) => {
    res.onClose(resolve);
    res.end();
  });
}

async function renderThenSend(res: HttpResponse, enc: LargeJsonResponse, headers: Record<string, string | number>, encoding: ResponseEncoding): Promise<void> {
  const json: Buffer[] = [];
  let jsonBytes = 0;
  for (const text of slices(enc.pieces)) {
    if (res.destroyed) return;
    const b = Buffer.from(text);
    json.push(b);
    jsonBytes += b.length;
    await nextTurn();
  }
  if (res.destroyed) return;
  if (enc.blobBytes > 0) headers['Inference-Header-Content-Length'] = jsonBytes;
  const parts = [...json, ...enc.blobs];
  if (encoding !== 'identity') {
    const packed = await compress(parts, encoding);
    if (res.destroyed) return;
    if (packed !== undefined) {
      headers['Content-Encoding'] = encoding;
      headers['Content-Length'] = packed.length;
      res.writeHead(200, headers);
      res.end(packed);
      return;
    }
  }
  headers['Content-Length'] = jsonBytes + enc.blobBytes;
  await new Promise<void>((resolve) => {
    res.onClose(resolve);
    res.writeHead(200, headers);
    res.cork();
    for (const p of parts) res.write(p);
    res.end();
  });
}
