/**
 * @module frontends/http/wire/connection
 * One client connection of the HTTP/1.1 server: reads request heads and bodies off the socket,
 * hands each request to the server's handler, and keeps the connection's rules:
 *
 * - one request at a time: bytes of a pipelined next request wait (bounded; the socket is
 *   paused past `PIPELINE_BUFFER`) until the current response is written out;
 * - keep-alive per HTTP/1.0 and 1.1 and `Connection`, and `Connection: close` while the
 *   server closes;
 * - `Expect: 100-continue` answered before the body is read, and no other interim response;
 * - a client's FIN (half-close) ends its requests, not its connection: what it sent whole is
 *   answered in order, then the connection closes;
 * - a body nobody reads (an early error answer) is discarded; the connection then goes on
 *   with the next request, or closes if the body is long or chunked;
 * - a head that cannot be parsed is answered with its status (400, 431, 501, 505) and the
 *   connection closes, like node:http's default; bytes that cannot even begin a head are
 *   answered as soon as they arrive (head-prefix.ts), not when the head would have ended;
 * - idle and slow-sender time is bounded by `idleTimeoutMs` (no limit while a model runs).
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { Errors } from '../../../core/errors.js';
import { traceLine, traceTags } from '../../../core/trace-tags.js';
import { ChunkedDecoder } from './chunked.js';
import { HeadPrefix } from './head-prefix.js';
import { HttpRequest, HttpResponse, type ResponseOwner } from './exchange.js';
import { WireError, findHeadEnd, parseRequestHead, type RequestHead } from './request-head.js';

export type RequestHandler = (req: HttpRequest, res: HttpResponse) => void;

export interface ConnectionOptions {
  handler: RequestHandler;
  /** No bytes for this long while waiting for a request or its body: the socket is closed. */
  idleTimeoutMs: number;
  /** The server is closing: answer what is in flight with Connection: close. */
  closing(): boolean;
}

/** Bytes of following requests held while one is in flight, before reading pauses. */
const PIPELINE_BUFFER = 1 << 20;
/** An unread Content-Length body up to this size is skipped to keep the connection. */
const DISCARD_MAX = 1 << 20;
/** After answering a broken request: how long its remaining bytes are read and dropped. */
const LINGER_MS = 5_000;

/** Numbers connections for debug trace lines. */
let nextConnectionId = 1;

export class Connection implements ResponseOwner {
  /** When it was accepted (the connection limit spares new ones a moment). */
  readonly openedAt = Date.now();
  /** The connection's number in debug trace lines (core/trace-tags.ts). */
  readonly id = nextConnectionId++;
  private pending: Buffer | undefined;
  /** Checks the next head while it arrives (its start is `pending`'s). */
  private readonly headPrefix = new HeadPrefix();
  private req: HttpRequest | undefined;
  private res: HttpResponse | undefined;
  /** Body bytes of the current request still to come (Content-Length framing). */
  private bodyLeft = 0;
  private chunked: ChunkedDecoder | undefined;
  /** The current request's body is being dropped (nobody reads it). */
  private discarding = false;
  /** No more requests on this connection (answered a broken one, or keep-alive ended). */
  private ending = false;
  private gone = false;
  /** The client half-closed (FIN): it sends nothing more, but may still read our answer. */
  private peerEnded = false;
  /** The socket's idle timer was switched off (a body reader waiting for memory). */
  private timerOff = false;

  /** ResponseOwner: the current response's last write left. */
  readonly written = (): void => {
    this.res?.writtenOut();
  };

  /**
   * A body reader holds the socket while it waits for memory: no idle timeout meanwhile (the
   * wait is the server's, not the client's), and reading resumes only if the pipeline buffer
   * allows it.
   */
  private readonly flow = {
    pause: (): void => {
      this.socket.pause();
      this.socket.setTimeout(0);
      this.timerOff = true;
    },
    resume: (): void => {
      if (this.gone) return;
      this.socket.setTimeout(this.o.idleTimeoutMs);
      this.timerOff = false;
      if (this.pending === undefined || this.pending.length <= PIPELINE_BUFFER) this.socket.resume();
    },
  };

  constructor(
    readonly socket: Socket,
    private readonly o: ConnectionOptions,
  ) {
    socket.setNoDelay(true);
    socket.setTimeout(o.idleTimeoutMs);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('timeout', () => this.onTimeout());
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.onClose());
    socket.on('end', () => this.onEnd());
    if (traceTags.http) traceLine('http', `conn ${this.id}: opened from ${socket.remoteAddress}:${socket.remotePort}`);
  }

  /**
   * The client sent FIN: it sends nothing more but may still read (a client may shut down its
   * sending side once its requests are out). The requests it sent whole are answered in order
   * and the connection closes after the last (start(), next()); a request whose body will never
   * be complete means the client is gone.
   *
   * A client that closed altogether sends the same FIN, and only a write would tell the two
   * apart (a closed peer answers it with RST). Nothing may come before an answer but an interim
   * response the client asked for (no probing 1xx), so such a client's request runs to its end
   * and its answer goes nowhere; a streamed answer finds it out at its next write
   * (docs/design.md, "Policies beyond Triton").
   */
  private onEnd(): void {
    this.peerEnded = true;
    const req = this.req;
    if (req === undefined || this.ending) {
      // Nothing whole is buffered either: advance() starts a request as soon as it is.
      this.socket.end();
      return;
    }
    if (!req.complete) {
      this.socket.destroy();
      return;
    }
    this.closeAfterIfLast(this.res);
  }

  /** After the client's FIN: `res` says the connection closes when no whole head waits behind it. */
  private closeAfterIfLast(res: HttpResponse | undefined): void {
    if (res === undefined || res.headersSent) return;
    let more = false;
    try {
      more = this.pending !== undefined && findHeadEnd(this.pending, 0) >= 0;
    } catch {
      // An oversized head: refused when its turn comes, so not an answer to wait for.
    }
    if (!more) res.shouldKeepAlive = false;
  }

  /**
   * The socket's timer ran out. It is armed once, at `idleTimeoutMs`, and every read and write
   * restarts it, so it measures the client's idle and slow-sender time without being set again
   * per request (each `setTimeout` of a socket makes a new timer). While a whole request waits
   * for its answer the time is the model's, not the client's: the expiry is ignored then, and
   * the answer's write starts the timer again.
   */
  private onTimeout(): void {
    if (this.req?.complete === true && !this.ending) return;
    this.socket.destroy();
  }

  /** No request in flight and nothing buffered: safe to close during shutdown. */
  get idle(): boolean {
    return this.req === undefined && this.pending === undefined;
  }

  /**
   * No request in flight: idle, or still sending a request head. The connection limit may close
   * it to make room; otherwise clients stuck in a head (slowloris) would hold their slots until
   * the idle timeout and lock everyone else out.
   */
  get evictable(): boolean {
    // A destroyed socket stays in the server's set until its 'close' event: evicting it again
    // would count a second eviction and close nothing.
    return this.req === undefined && !this.socket.destroyed;
  }

  /** Server shutdown: close now if idle, else after the response in flight. */
  shutdown(): void {
    if (this.idle) this.socket.destroy();
    else if (this.res !== undefined && !this.res.headersSent) this.res.shouldKeepAlive = false;
  }

  private onData(chunk: Buffer): void {
    if (this.ending) return; // lingering after a final answer: drop
    if (this.req !== undefined && this.inBody()) {
      const used = this.feedBody(chunk, 0);
      if (used === chunk.length) return;
      chunk = chunk.subarray(used);
    }
    this.pending = this.pending === undefined ? chunk : Buffer.concat([this.pending, chunk]);
    this.advance();
  }

  private inBody(): boolean {
    return this.bodyLeft > 0 || this.chunked !== undefined;
  }

  /** Parses and starts the next request when none is in flight. */
  private advance(): void {
    while (this.req === undefined && this.pending !== undefined && !this.ending && !this.gone) {
      const buf = this.pending;
      let head: RequestHead;
      let end: number;
      try {
        end = findHeadEnd(buf, 0);
        if (end < 0) {
          // Not whole yet: what can never become a head is refused now, not at the idle timeout.
          this.headPrefix.check(buf);
          return;
        }
        this.headPrefix.reset();
        head = parseRequestHead(buf, 0, end);
      } catch (err) {
        this.refuse(err instanceof WireError ? err.status : 400);
        return;
      }
      this.pending = end === buf.length ? undefined : buf.subarray(end);
      this.start(head);
    }
    if (this.pending !== undefined && this.pending.length > PIPELINE_BUFFER) this.socket.pause();
  }

  private start(head: RequestHead): void {
    const req = new HttpRequest(head);
    req.flow = this.flow;
    const keepAlive = head.keepAlive && !this.o.closing();
    const res = new HttpResponse(this, head.versionMinor, keepAlive, head.method === 'HEAD');
    this.req = req;
    this.res = res;
    this.discarding = false;
    if (head.chunked) this.chunked = new ChunkedDecoder();
    else this.bodyLeft = head.contentLength;
    const hasBody = head.chunked || head.contentLength > 0;
    if (traceTags.http)
      traceLine('http', `conn ${this.id}: ${head.method} ${head.url} (${head.chunked ? 'chunked body' : `${head.contentLength} body bytes`})`);
    if (hasBody && head.expectContinue && head.versionMinor === 1) this.socket.write('HTTP/1.1 100 Continue\r\n\r\n', 'latin1');
    if (this.inBody()) {
      // The body follows the head in the buffer (usually all of it, in the same read).
      const buf = this.pending;
      if (buf !== undefined) {
        const used = this.feedBody(buf, 0);
        this.pending = used === buf.length ? undefined : buf.subarray(used);
      }
    } else {
      this.bodyDone();
    }
    if (this.peerEnded) {
      // A request after the client's FIN (next()): its body can only be what is buffered.
      if (this.inBody()) {
        this.socket.destroy();
        return;
      }
      this.closeAfterIfLast(res);
    }
    this.o.handler(req, res);
    // A handler that did not start reading the body will not: drop it instead of holding it.
    if (!req.reading && !req.complete && this.req === req) {
      this.discarding = true;
      req.discardEarly();
    }
  }

  /** Feeds the current body from `buf[start..]`; returns the index after the body's bytes. */
  private feedBody(buf: Buffer, start: number): number {
    const req = this.req!;
    const deliver = (c: Buffer): void => {
      if (!this.discarding) req.pushData(c);
    };
    let i = start;
    if (this.chunked !== undefined) {
      try {
        i = this.chunked.push(buf, start, deliver);
      } catch (err) {
        const e = err as WireError;
        req.pushError(Errors.malformedBody(e.message));
        this.chunked = undefined;
        if (this.res !== undefined && !this.res.headersSent) this.res.shouldKeepAlive = false;
        this.ending = true;
        return buf.length;
      }
      if (this.chunked.done) {
        this.chunked = undefined;
        this.bodyDone();
      }
      return i;
    }
    const n = Math.min(this.bodyLeft, buf.length - start);
    if (n > 0) deliver(start === 0 && n === buf.length ? buf : buf.subarray(start, start + n));
    this.bodyLeft -= n;
    if (this.bodyLeft === 0) this.bodyDone();
    return start + n;
  }

  private bodyDone(): void {
    // From here the model may take as long as it needs: no idle limit until the answer
    // (onTimeout ignores the timer while the request is complete and unanswered).
    this.req!.pushEnd();
  }

  /** ResponseOwner: the current response is written out. */
  responseDone(res: HttpResponse, keepAlive: boolean): void {
    if (res !== this.res) return;
    const bodyUnread = this.inBody();
    this.req = undefined;
    this.res = undefined;
    if (bodyUnread) {
      // Answered before the body was in: skip a short rest, close on anything else.
      if (keepAlive && this.chunked === undefined && this.bodyLeft <= DISCARD_MAX) {
        this.discardThen(keepAlive);
        return;
      }
      this.finish();
      return;
    }
    this.next(keepAlive);
  }

  /** Drops the rest of an unread Content-Length body, then goes on. */
  private discardThen(keepAlive: boolean): void {
    const skip = Math.min(this.bodyLeft, this.pending?.length ?? 0);
    this.bodyLeft -= skip;
    if (this.pending !== undefined) this.pending = skip === this.pending.length ? undefined : this.pending.subarray(skip);
    if (this.bodyLeft === 0) {
      this.next(keepAlive);
      return;
    }
    // The rest is still on its way: a placeholder request swallows it.
    const sink = new HttpRequest({
      method: 'DISCARD',
      url: '',
      versionMinor: 1,
      headers: {},
      contentLength: this.bodyLeft,
      chunked: false,
      keepAlive,
      expectContinue: false,
    });
    this.req = sink;
    this.discarding = true;
    this.timerOff = false;
    this.socket.setTimeout(this.o.idleTimeoutMs);
    sink.read({
      chunk: () => {},
      end: () =>
        queueMicrotask(() => {
          this.req = undefined;
          this.next(keepAlive);
        }),
      error: () => {},
    });
  }

  private next(keepAlive: boolean): void {
    if (!keepAlive || this.o.closing()) {
      this.finish();
      return;
    }
    if (this.timerOff) {
      this.timerOff = false;
      this.socket.setTimeout(this.o.idleTimeoutMs);
    }
    if (this.socket.isPaused()) this.socket.resume();
    this.advance();
    // After the client's FIN no more bytes come: done once no whole request is left.
    if (this.peerEnded && this.req === undefined && !this.ending && !this.gone) this.finish();
  }

  /** No more requests: end our side, then drop what the client still sends for a while. */
  private finish(): void {
    this.ending = true;
    this.pending = undefined;
    this.socket.end();
    this.socket.setTimeout(LINGER_MS);
    if (this.socket.isPaused()) this.socket.resume();
  }

  /** Answers an unreadable request with `status` and closes. */
  private refuse(status: number): void {
    this.ending = true;
    this.pending = undefined;
    this.socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, 'latin1');
    this.socket.setTimeout(LINGER_MS);
  }

  private onClose(): void {
    this.gone = true;
    const req = this.req;
    const res = this.res;
    if (traceTags.http) {
      const open = res !== undefined && !res.finished ? `, with ${req?.method} ${req?.url} unanswered` : '';
      traceLine('http', `conn ${this.id}: closed${this.peerEnded ? ' after the client ended its side' : ''}${open}`);
    }
    this.req = undefined;
    this.res = undefined;
    this.pending = undefined;
    req?.pushError(Errors.clientClosed());
    res?.connectionLost();
  }
}
