/**
 * @module frontends/http/wire/exchange
 * One request and its response on a connection (`connection.ts`): the small surface the
 * handlers use, in place of node:http's `IncomingMessage` / `ServerResponse`. Neither is a
 * stream or an EventEmitter: a request costs two plain objects, which is most of why this
 * server spends fewer CPU microseconds per request than node:http (docs/benchmarks.md).
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { writeToSocket } from '../../socket-write.js';
import type { RequestHead } from './request-head.js';

/** Receives the body of a request (see HttpRequest.read). */
export interface BodySink {
  chunk(chunk: Buffer): void;
  end(): void;
  error(err: Error): void;
}

/** Holds and releases the flow of a request's body on its connection. */
export interface BodyFlow {
  pause(): void;
  resume(): void;
}

export class HttpRequest {
  readonly method: string;
  readonly url: string;
  /** Lower-cased names; repeated fields joined with ", ". */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly httpVersionMinor: number;
  /** The whole body has been received. */
  complete = false;
  private sink: BodySink | undefined;
  private early: Buffer[] | undefined;
  private failure: Error | undefined;
  private paused = false;
  /** @internal Set by the connection. */
  flow: BodyFlow | undefined;

  constructor(head: RequestHead) {
    this.method = head.method;
    this.url = head.url;
    this.headers = head.headers;
    this.httpVersionMinor = head.versionMinor;
  }

  /** Somebody reads the body (a handler that never calls read() has its body discarded). */
  get reading(): boolean {
    return this.sink !== undefined;
  }

  /**
   * Streams the body to `sink`: what already arrived at once, the rest as it comes, then
   * `end()`, or `error()` if the connection goes first. Call at most once.
   */
  read(sink: BodySink): void {
    this.sink = sink;
    const early = this.early;
    this.early = undefined;
    if (early !== undefined) for (const c of early) sink.chunk(c);
    if (this.failure !== undefined) sink.error(this.failure);
    else if (this.complete) sink.end();
  }

  /**
   * Stops reading the body off the socket (the client is held back by TCP) until resume():
   * a reader waiting for memory to buffer it into.
   */
  pause(): void {
    if (this.paused || this.complete) return;
    this.paused = true;
    this.flow?.pause();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.flow?.resume();
  }

  // --- fed by the connection ---

  /** @internal */
  pushData(chunk: Buffer): void {
    if (this.sink !== undefined) this.sink.chunk(chunk);
    else (this.early ??= []).push(chunk);
  }

  /** @internal */
  pushEnd(): void {
    this.complete = true;
    this.sink?.end();
  }

  /** @internal The connection closed before the body was complete. */
  pushError(err: Error): void {
    if (this.complete || this.failure !== undefined) return;
    this.failure = err;
    this.sink?.error(err);
  }

  /** @internal Drops what was buffered for a handler that does not read the body. */
  discardEarly(): void {
    this.early = undefined;
  }
}

type HeaderValue = string | number | readonly string[];

/** How a response body is framed on the wire. */
type Framing = 'length' | 'chunked' | 'close';

export interface ResponseOwner {
  readonly socket: Socket;
  /** The connection's number in debug trace lines (core/trace-tags.ts). */
  readonly id: number;
  /** The response has been written out (or abandoned); the connection may go on. */
  responseDone(res: HttpResponse, keepAlive: boolean): void;
  /**
   * The callback of a response's last write: the connection's one function, calling the
   * current response's writtenOut() (a connection writes one response at a time), rather than
   * a closure made per response.
   */
  readonly written: () => void;
}

export class HttpResponse {
  statusCode = 200;
  headersSent = false;
  /** The connection is gone: nothing written from now on reaches the client. */
  destroyed = false;
  /** end() was called. */
  finished = false;
  /** Whether the connection stays open after this response; handlers may clear it. */
  shouldKeepAlive: boolean;
  private extra: Record<string, HeaderValue> | undefined;
  /** The first close listener, and any after it. */
  private firstClose: CloseListener | undefined;
  private closeListeners: CloseListener[] | undefined;
  private framing: Framing = 'length';
  /** writeHead saw a Content-Length field. */
  private hasLength = false;
  private pendingHead: string | undefined;
  private corked = false;
  private closed = false;

  constructor(
    private readonly owner: ResponseOwner,
    private readonly versionMinor: number,
    keepAlive: boolean,
    /** HEAD: headers only, never a body. */
    private readonly headOnly: boolean,
  ) {
    this.shouldKeepAlive = keepAlive;
  }

  /** The number of the connection this response goes out on (debug trace lines). */
  get connectionId(): number {
    return this.owner.id;
  }

  setHeader(name: string, value: HeaderValue): void {
    (this.extra ??= {})[name] = value;
  }

  /**
   * Sets status and headers; they leave with the first write() or end(). Without a
   * Content-Length the body is chunked (HTTP/1.1) or ends with the connection (HTTP/1.0).
   */
  writeHead(status: number, headers?: Record<string, HeaderValue>): this {
    if (this.headersSent) return this;
    this.statusCode = status;
    this.headersSent = true;
    let head = statusLine(this.versionMinor, status);
    this.hasLength = false;
    if (this.extra !== undefined) head = this.addFields(head, this.extra);
    if (headers !== undefined) head = this.addFields(head, headers);
    if (!this.hasLength) {
      if (this.versionMinor === 1) {
        this.framing = 'chunked';
        head += 'Transfer-Encoding: chunked\r\n';
      } else {
        this.framing = 'close';
        this.shouldKeepAlive = false;
      }
    }
    this.pendingHead = head + connectionField(this.versionMinor, this.shouldKeepAlive) + '\r\n';
    return this;
  }

  /** `head` with the fields of `all` appended; notes a Content-Length in `hasLength`. */
  private addFields(head: string, all: Record<string, HeaderValue>): string {
    for (const name in all) {
      const v = all[name]!;
      if (name.length === 14 && name.toLowerCase() === 'content-length') this.hasLength = true;
      if (typeof v === 'object') for (const one of v) head += `${name}: ${one}\r\n`;
      else head += `${name}: ${v}\r\n`;
    }
    return head;
  }

  /** Collects the following writes into one system call (writev), until end() or uncork(). */
  cork(): void {
    if (this.destroyed || this.corked) return;
    this.corked = true;
    this.owner.socket.cork();
  }

  uncork(): void {
    if (!this.corked) return;
    this.corked = false;
    this.owner.socket.uncork();
  }

  /**
   * Corks until the current turn of the event loop ends: a stream's events that arrive together
   * (a stub's ring is drained in one turn) then leave in one writev instead of one each, which
   * was most of a streamed token's cost in the server.
   */
  corkForTurn(): void {
    if (this.corked || this.destroyed || this.finished) return;
    this.cork();
    process.nextTick(() => this.uncork());
  }

  write(chunk: string | Buffer): boolean {
    if (this.destroyed || this.finished) return false;
    if (!this.headersSent) this.writeHead(this.statusCode);
    const socket = this.owner.socket;
    // Head, chunk framing and data leave in one writev; a caller's cork() spans more writes.
    const own = !this.corked;
    if (own) socket.cork();
    this.flushHead();
    let ok = true;
    if (!this.headOnly && chunk.length > 0) {
      if (this.framing === 'chunked') {
        const n = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
        socket.write(`${n.toString(16)}\r\n`, 'latin1');
        socket.write(chunk);
        ok = socket.write('\r\n', 'latin1');
      } else {
        ok = socket.write(chunk);
      }
    }
    if (own) socket.uncork();
    return ok;
  }

  /** Finishes the response; the connection goes on (or closes) once it is written out. */
  end(chunk?: string | Buffer): void {
    if (this.finished) return;
    if (this.destroyed) {
      this.finished = true;
      return;
    }
    if (!this.headersSent) this.writeHead(this.statusCode);
    const socket = this.owner.socket;
    const body = this.headOnly ? undefined : chunk;
    if (this.pendingHead !== undefined && this.framing === 'length' && body !== undefined && body.length > 0 && typeof body === 'string') {
      // The common small answer: head and JSON in one string, one write.
      const head = this.pendingHead;
      this.pendingHead = undefined;
      this.finished = true;
      writeToSocket(socket, Buffer.from(head + body), this.owner.written);
      this.uncork();
      return;
    }
    if (body !== undefined && body.length > 0) this.write(body);
    else this.flushHead();
    this.finished = true;
    const tail = this.framing === 'chunked' && !this.headOnly ? '0\r\n\r\n' : '';
    socket.write(tail, 'latin1', this.owner.written);
    this.uncork();
  }

  /**
   * Finishes the response with `text` (UTF-8, `textBytes` long) followed by `blobs`: head, text
   * and blobs are copied into one buffer and leave in one write, so the blobs are free for
   * reuse as soon as this returns. For small bodies, where one copy costs less than a writev of
   * several buffers.
   */
  endCopied(text: string, textBytes: number, blobs: readonly Buffer[], blobBytes: number): void {
    if (this.finished) return;
    if (this.destroyed) {
      this.finished = true;
      return;
    }
    if (!this.headersSent) this.writeHead(this.statusCode);
    const head = this.pendingHead;
    const size = textBytes + blobBytes;
    if (head === undefined || this.framing !== 'length' || this.headOnly) {
      const body = Buffer.allocUnsafe(size);
      let at = body.write(text, 0, 'utf8');
      for (let i = 0; i < blobs.length; i++) at += blobs[i]!.copy(body, at);
      this.end(body);
      return;
    }
    this.pendingHead = undefined;
    this.finished = true;
    const buf = Buffer.allocUnsafe(head.length + size);
    let at = buf.write(head, 0, 'latin1');
    at += buf.write(text, at, 'utf8');
    for (let i = 0; i < blobs.length; i++) at += blobs[i]!.copy(buf, at);
    writeToSocket(this.owner.socket, at === buf.length ? buf : buf.subarray(0, at), this.owner.written);
    this.uncork();
  }

  /**
   * Finishes a 200 answer to an infer request: `text` (its JSON, `textBytes` long in UTF-8) and
   * `blobs` copied after the head into one buffer, as endCopied does, with the fields
   * writeInferResponse gives such an answer: Content-Type (application/octet-stream and
   * Inference-Header-Content-Length when there are blob bytes, else application/json) and
   * Content-Length. The head is what writeHead builds from those fields, kept from the last
   * answer of the same lengths and connection form (answerHead): under a steady load it is the
   * same text for every answer, and building it anew was a dozen strings per request.
   */
  endInferAnswer(text: string, textBytes: number, blobs: readonly Buffer[], blobBytes: number): void {
    if (this.headersSent || this.extra !== undefined) {
      this.writeHead(200, inferAnswerFields(textBytes, blobBytes));
      this.endCopied(text, textBytes, blobs, blobBytes);
      return;
    }
    this.statusCode = 200;
    this.headersSent = true;
    this.hasLength = true;
    this.framing = 'length';
    this.pendingHead = answerHead(this.versionMinor, this.shouldKeepAlive, textBytes, blobBytes);
    this.endCopied(text, textBytes, blobs, blobBytes);
  }

  /** Abandons the response and the connection. */
  destroy(): void {
    if (this.destroyed) return;
    this.owner.socket.destroy();
  }

  /** `fn` runs once, when the response is written out or the connection is gone first. */
  onClose(fn: CloseListener): void {
    if (this.closed) {
      callClose(fn);
      return;
    }
    // Usually the only one: kept without an array.
    if (this.firstClose === undefined && this.closeListeners === undefined) this.firstClose = fn;
    else (this.closeListeners ??= []).push(fn);
  }

  /** Bytes written and not yet taken by the kernel: they grow while the client does not read. */
  get queuedBytes(): number {
    return this.owner.socket.writableLength;
  }

  /**
   * `fn` runs once, when the socket has written out what it buffered (after a write() that
   * returned false) or the connection is gone: the pace of a response streamed in parts.
   */
  onDrain(fn: () => void): void {
    if (this.destroyed) {
      fn();
      return;
    }
    const socket = this.owner.socket;
    const done = (): void => {
      socket.off('drain', done);
      socket.off('close', done);
      fn();
    };
    socket.on('drain', done);
    socket.on('close', done);
  }

  offClose(fn: CloseListener): void {
    if (this.firstClose === fn) {
      this.firstClose = undefined;
      return;
    }
    const all = this.closeListeners;
    if (all === undefined) return;
    const i = all.indexOf(fn);
    if (i >= 0) all.splice(i, 1);
  }

  // --- for the connection ---

  /** @internal The socket closed under this response. */
  connectionLost(): void {
    this.destroyed = true;
    this.corked = false;
    this.fireClose();
  }

  private flushHead(): void {
    const head = this.pendingHead;
    if (head === undefined) return;
    this.pendingHead = undefined;
    this.owner.socket.write(head, 'latin1');
  }

  /** @internal The last write of this response left (ResponseOwner.written). */
  writtenOut(): void {
    if (this.destroyed) return;
    this.fireClose();
    this.owner.responseDone(this, this.shouldKeepAlive && this.framing !== 'close');
  }

  private fireClose(): void {
    if (this.closed) return;
    this.closed = true;
    const first = this.firstClose;
    const all = this.closeListeners;
    this.firstClose = undefined;
    this.closeListeners = undefined;
    if (first !== undefined) callClose(first);
    if (all !== undefined) for (const fn of all) callClose(fn);
  }
}

/**
 * Told when a response is written out or its connection is gone first: a function, or an object
 * a handler keeps per request anyway (so no closure is made for it).
 */
export type CloseListener = (() => void) | { onResponseClosed(): void };

function callClose(l: CloseListener): void {
  if (typeof l === 'function') l();
  else l.onResponseClosed();
}

/** A response head's first line. */
function statusLine(versionMinor: number, status: number): string {
  return `HTTP/1.${versionMinor} ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
}

/** The Connection field a response carries on a connection of this version and keep-alive ('' for none). */
function connectionField(versionMinor: number, keepAlive: boolean): string {
  if (!keepAlive) return 'Connection: close\r\n';
  return versionMinor === 0 ? 'Connection: keep-alive\r\n' : '';
}

/**
 * The header fields of an infer answer whose JSON is `textBytes` long, followed by `blobBytes` of
 * blobs: its content type, Inference-Header-Content-Length when there are blob bytes, and
 * (`withLength`) the Content-Length of that body sent as it is.
 */
export function inferAnswerFields(textBytes: number, blobBytes: number, withLength = true): Record<string, string | number> {
  const fields: Record<string, string | number> =
    blobBytes > 0 ? { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': textBytes } : { 'Content-Type': 'application/json' };
  if (withLength) fields['Content-Length'] = textBytes + blobBytes;
  return fields;
}

/** The last infer answer's head and what it was built from (one per thread, like the module). */
const lastAnswer = { versionMinor: -1, keepAlive: false, textBytes: -1, blobBytes: -1, head: '' };

/**
 * The head writeHead(200, inferAnswerFields(textBytes, blobBytes)) gives a response with no
 * other fields on a connection of this HTTP minor version and keep-alive, kept for the next.
 */
function answerHead(versionMinor: number, keepAlive: boolean, textBytes: number, blobBytes: number): string {
  const last = lastAnswer;
  if (last.textBytes === textBytes && last.blobBytes === blobBytes && last.versionMinor === versionMinor && last.keepAlive === keepAlive) return last.head;
  let head = statusLine(versionMinor, 200);
  const fields = inferAnswerFields(textBytes, blobBytes);
  for (const name in fields) head += `${name}: ${fields[name]}\r\n`;
  head += connectionField(versionMinor, keepAlive) + '\r\n';
  last.versionMinor = versionMinor;
  last.keepAlive = keepAlive;
  last.textBytes = textBytes;
  last.blobBytes = blobBytes;
  last.head = head;
  return head;
}
