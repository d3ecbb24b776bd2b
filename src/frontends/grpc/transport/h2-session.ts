/**
 * @module frontends/grpc/transport/h2-session
 * One HTTP/2 connection of the gRPC frontend: the socket is JavaScript's, the protocol is the
 * nghttp2 inside Node, reached through the addon's `H2Session` (native/src/h2_session.cc). Bytes
 * read go into `receive`, which reports headers, data, ends and closes per stream; what the
 * calls answer is queued in nghttp2 and leaves in one write per turn (`flush`), so a unary
 * answer — headers, message, trailers — is one `write(2)`. Why not node:http2: docs/design.md,
 * "gRPC transport".
 *
 * `H2Stream` keeps the few stream semantics the transport relies on: it starts paused (data
 * waits, unconsumed, so HTTP/2 flow control holds the client) until `resume()`, `pause()` stops
 * it again, and every byte taken in is given back to the windows (`consume`) as it is read.
 * What a stream reports goes to one `H2StreamHandler`, the call reading it, and a new stream
 * to the session's `onStream`: plain method calls, not events. A unary call used to register
 * four listeners (two of them `once` wrappers) and three closures, about 2 % of the gRPC
 * server's samples (docs/benchmarks.md, "The floor").
 */
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { loadNative, type H2Fields, type NativeH2Session } from '../../../backends/python/ipc/native.js';
import { SlotTable } from '../../../core/slot-table.js';
import { writeToSocket } from '../../socket-write.js';

/** HTTP/2 error codes used here (RFC 9113, section 7). */
export const H2_NO_ERROR = 0;
export const H2_REFUSED_STREAM = 0x7;
export const H2_CANCEL = 0x8;
export const H2_ENHANCE_YOUR_CALM = 0xb;

const EV_HEADERS = 1;
const EV_DATA = 2;
const EV_END = 3;
const EV_CLOSE = 4;
const EV_PING = 5;
const EV_PING_ACK = 6;
const EV_GOAWAY = 7;
const EV_DATA_COPY = 8;

/**
 * Event fields one receive() or flush() hands over at most (more() gives the rest): room for
 * about a hundred unary calls, 8 KiB per connection.
 */
const EVENT_FIELDS = 1024;

/** flush()'s buffer: some fifty small unary answers; more is returned in a buffer of its own. */
const OUT_BYTES = 8 * 1024;

/** A request's headers: lower-case names, pseudo-headers included, repeated names joined by ", ". */
export type H2Headers = Record<string, string | undefined>;

/** Hears one stream: its request body, the end of it, and the stream's close. */
export interface H2StreamHandler {
  /** A DATA chunk (only while the stream flows, and not after `discard()`). */
  data(chunk: Buffer): void;
  /** The client ended its side (after the last `data`). */
  end(): void;
  /** The stream closed (either side's RST_STREAM, both sides ended, or the connection went), with the HTTP/2 error code. */
  closed(code: number): void;
}

export interface H2Settings {
  maxConcurrentStreams: number;
  initialWindowSize: number;
  /** The connection's receive window (WINDOW_UPDATE on stream 0). */
  sessionWindow: number;
}

export class H2Stream {
  /** True once the stream closed (either side's RST_STREAM, both sides ended, or the connection went). */
  destroyed = false;
  /** Who hears this stream; data and an end with no handler are dropped. */
  handler: H2StreamHandler | undefined = undefined;
  private flowing = false;
  /** discard(): data is taken in (windows given back) and dropped. */
  private dropping = false;
  private held: Buffer[] | undefined;
  private endHeld = false;
  private drainFns: Array<() => void> | undefined;

  constructor(
    readonly session: H2Session,
    readonly id: number,
  ) {}

  /** Response headers (`[name, value, ...]`, or a headerBlock()); `body` false ends the stream with them (trailers-only). */
  respond(headers: H2Fields, body: boolean): void {
    if (this.destroyed) return;
    this.session.native.respond(this.id, headers, body);
    this.session.scheduleFlush();
  }

  /**
   * A whole unary answer: headers, `message` framed (copied), trailers; one call into nghttp2.
   * False when the stream closed or has already responded (use respond/write/end then).
   */
  answer(headers: H2Fields, message: Uint8Array, trailers: H2Fields): boolean {
    if (this.destroyed || !this.session.native.answer(this.id, headers, message, trailers)) return false;
    this.session.scheduleFlush();
    return true;
  }

  /** Queues bytes of the response body (kept by reference until HTTP/2 takes them). */
  write(bytes: Uint8Array): void {
    if (this.destroyed) return;
    this.session.native.write(this.id, bytes);
    this.session.scheduleFlush();
  }

  /** Ends the response body with these trailers. */
  end(trailers: H2Fields): void {
    if (this.destroyed) return;
    this.session.native.end(this.id, trailers);
    this.session.scheduleFlush();
  }

  /** RST_STREAM with `code`. */
  close(code: number = H2_NO_ERROR): void {
    if (this.destroyed) return;
    this.session.native.reset(this.id, code);
    this.session.scheduleFlush();
  }

  /** Response bytes written and not yet taken by HTTP/2 (the client's window holds them). */
  get writableLength(): number {
    return this.destroyed ? 0 : this.session.native.queued(this.id);
  }

  /** `fn` runs once what is queued has been taken by HTTP/2, or when the stream closes. */
  whenDrained(fn: () => void): void {
    (this.drainFns ??= []).push(fn);
    this.session.drainWaiters.add(this);
  }

  /** @internal Nothing is queued any more (or the stream closed). */
  drained(): void {
    const fns = this.drainFns;
    this.drainFns = undefined;
    if (fns !== undefined) for (const fn of fns) fn();
  }

  /** Reads the rest of the request body only to drop it (the call was answered or refused); the end is still reported. */
  discard(): void {
    this.dropping = true;
    this.resume();
  }

  pause(): this {
    this.flowing = false;
    return this;
  }

  resume(): this {
    if (this.flowing || this.destroyed) return this;
    this.flowing = true;
    const held = this.held;
    this.held = undefined;
    if (held !== undefined) for (const chunk of held) this.data(chunk);
    if (this.endHeld && this.flowing) {
      this.endHeld = false;
      this.handler?.end();
    }
    return this;
  }

  isPaused(): boolean {
    return !this.flowing;
  }

  /** @internal A DATA chunk arrived. */
  data(chunk: Buffer): void {
    if (!this.flowing) {
      (this.held ??= []).push(chunk);
      return;
    }
    // Taking bytes in reopens the windows; the WINDOW_UPDATE leaves with the next flush (at the
    // end of receive(), or scheduled when data held while paused is read later).
    this.session.native.consume(this.id, chunk.length);
    this.session.scheduleFlush();
    if (!this.dropping) this.handler?.data(chunk);
  }

  /** @internal The client ended its side. */
  ended(): void {
    if (this.flowing && this.held === undefined) this.handler?.end();
    else this.endHeld = true;
  }

  /** @internal */
  closedWith(code: number): void {
    if (this.destroyed) return;
    this.destroyed = true;
    // Bytes held while paused count against the connection's window until given back.
    if (this.held !== undefined) for (const chunk of this.held) this.session.native.consume(this.id, chunk.length);
    this.held = undefined;
    this.handler?.closed(code);
    this.drained();
  }
}

/**
 * The server side of one connection. Hands each new stream to `onStream` (set it before
 * `start()`); emits `'ping'` for each PING the client sends (nghttp2 acknowledges it) and
 * `'close'` once.
 */
export class H2Session extends EventEmitter {
  readonly native: NativeH2Session;
  /** Open calls by stream id (client streams are odd: shift 1; a SlotTable, not a Map, see there). */
  readonly streams = new SlotTable<H2Stream>(256, 1);
  readonly drainWaiters = new Set<H2Stream>();
  /** Told of each new stream (a call) with its request headers; a stream nobody takes is reset. */
  onStream: ((stream: H2Stream, headers: H2Headers) => void) | undefined = undefined;
  destroyed = false;
  /** A GOAWAY went out (close()): no new call, the connection ends when its calls have. */
  closed = false;
  private flushQueued = false;
  private inReceive = false;
  private blocked = false;
  private goawaySent = false;
  private readonly pings: Array<(err: Error | null) => void> = [];
  /** The headers of the connection's last call: a client's calls mostly repeat them exactly. */
  private lastHeaders: H2Headers | undefined;
  /** Events from the native session: ev[0] fields from ev[2], ev[1] = 1 when more() has more (h2_session.cc). */
  private readonly ev = new Float64Array(2 + EVENT_FIELDS);
  /** The objects events refer to by index (new header blocks, copied chunks); emptied after each batch. */
  private readonly objects: unknown[] = [];
  /** Where flush() puts what it has to send when that fits (a copy per flush cost a new ArrayBuffer each time). */
  private out = Buffer.allocUnsafeSlow(OUT_BYTES);

  constructor(
    readonly socket: Socket,
    settings: H2Settings,
  ) {
    super();
    const { H2Session: Native } = loadNative();
    this.native = new Native({ maxConcurrentStreams: settings.maxConcurrentStreams, initialWindowSize: settings.initialWindowSize });
    this.native.setLocalWindowSize(settings.sessionWindow);
    this.native.bind(this.ev, this.objects);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('drain', () => {
      this.blocked = false;
      this.flush();
    });
    socket.on('error', () => {}); // 'close' follows and ends every call
    socket.once('close', () => this.destroy());
  }

  /** Starts the connection: the server's SETTINGS go out. */
  start(): void {
    this.flush();
  }

  private receive(chunk: Buffer): void {
    if (this.destroyed) return;
    let rv: number;
    try {
      rv = this.native.receive(chunk);
    } catch {
      rv = -1; // the session's own failure: this connection ends, the server goes on
    }
    if (rv < 0) {
      // A protocol error: nghttp2 queued a GOAWAY saying why; send it, then hang up.
      this.flush();
      this.socket.end();
      this.destroy();
      return;
    }
    this.inReceive = true;
    try {
      this.events(chunk);
    } finally {
      this.inReceive = false;
    }
    this.flush();
  }

  /** Handles the events receive() or flush() left in `ev`, and those more() gives after them. */
  private events(chunk: Buffer | undefined): void {
    const ev = this.ev;
    const objects = this.objects;
    for (;;) {
      const end = 2 + ev[0]!;
      for (let i = 2; i < end; ) {
        switch (ev[i]) {
          case EV_HEADERS: {
            const id = ev[i + 1]!;
            const stream = new H2Stream(this, id);
            this.streams.set(id, stream);
            // -1: the same block as this connection's last call; its object is reused (read only).
            const at = ev[i + 2]!;
            // (An empty first block also reads as a repeat: the last block starts empty.)
            const headers = at < 0 ? (this.lastHeaders ??= toHeaders([])) : (this.lastHeaders = toHeaders(objects[at] as string[]));
            if (ev[i + 3] === 1) stream.ended();
            i += 4;
            if (this.onStream !== undefined) this.onStream(stream, headers);
            else stream.close(H2_REFUSED_STREAM);
            break;
          }
          case EV_DATA: {
            const at = ev[i + 2]!;
            this.dataChunk(ev[i + 1]!, chunk!.subarray(at, at + ev[i + 3]!));
            i += 4;
            break;
          }
          case EV_DATA_COPY:
            this.dataChunk(ev[i + 1]!, objects[ev[i + 2]!] as Buffer);
            i += 3;
            break;
          case EV_END:
            this.streams.get(ev[i + 1]!)?.ended();
            i += 2;
            break;
          case EV_CLOSE:
            this.streamClosed(ev[i + 1]!, ev[i + 2]!);
            i += 3;
            break;
          case EV_PING:
            this.emit('ping');
            i += 1;
            break;
          case EV_PING_ACK:
            this.pings.shift()?.(null);
            i += 1;
            break;
          case EV_GOAWAY:
            // The client opens no new call; the open ones finish, then it hangs up.
            i += 2;
            break;
          default:
            throw new Error(`h2-session: unknown event ${String(ev[i])}`);
        }
      }
      if (ev[1] === 0) break;
      this.native.more();
    }
    if (objects.length > 0) objects.length = 0;
  }

  /** A DATA chunk for stream `id`; one of a stream no longer open is only given back to the windows. */
  private dataChunk(id: number, bytes: Buffer): void {
    const stream = this.streams.get(id);
    if (stream === undefined) this.native.consume(id, bytes.length);
    else stream.data(bytes);
  }

  private streamClosed(id: number, code: number): void {
    const stream = this.streams.get(id);
    if (stream === undefined) return;
    this.streams.delete(id);
    this.drainWaiters.delete(stream);
    stream.closedWith(code);
    if (this.streams.size === 0 && this.closed) this.scheduleFlush();
  }

  /** What the calls queued leaves at the end of this turn (one write for all of them). */
  scheduleFlush(): void {
    if (this.flushQueued || this.inReceive || this.destroyed) return;
    this.flushQueued = true;
    queueMicrotask(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.destroyed || this.blocked) return;
    const out = this.out;
    const r = this.native.flush(out);
    const want = this.native.wantIo();
    const bytes = typeof r !== 'number' ? r : r > 0 ? out.subarray(0, r) : undefined;
    if (bytes !== undefined && this.socket.writable) {
      // A flush returns at most about 1 MiB; more (a large answer) follows when the socket drains.
      const ok = writeToSocket(this.socket, bytes);
      // Bytes the kernel did not take at once stay queued in the socket, `out` with them if they
      // are in it: the next flush gets a buffer of its own.
      if (typeof r === 'number' && this.socket.writableLength > 0) this.out = Buffer.allocUnsafeSlow(OUT_BYTES);
      if (!ok) this.blocked = true;
      else if ((want & 2) !== 0) this.scheduleFlush();
    }
    // The streams nghttp2 closed while sending (EV_CLOSE events only).
    if (this.ev[0] !== 0) this.events(undefined);
    if (this.drainWaiters.size > 0) {
      for (const s of this.drainWaiters) {
        if (this.native.queued(s.id) === 0) {
          this.drainWaiters.delete(s);
          s.drained();
        }
      }
    }
    // nghttp2 is done with the connection (GOAWAY exchanged and no stream left, or a fatal error).
    if ((want === 0 || (this.closed && this.streams.size === 0)) && this.socket.writable) {
      this.socket.end(() => this.destroy());
    }
  }

  /** Sends a PING; `done` gets null at its acknowledgement, an error if the connection goes first. */
  ping(done: (err: Error | null) => void): boolean {
    if (this.destroyed || !this.native.ping()) return false;
    this.pings.push(done);
    this.scheduleFlush();
    return true;
  }

  /** GOAWAY with `code` (and opaque debug data), naming the last stream taken in. */
  goaway(code: number, debug?: Uint8Array): void {
    if (this.destroyed) return;
    this.goawaySent = true;
    this.native.goaway(code, debug);
    this.scheduleFlush();
  }

  /** Graceful close: GOAWAY, calls in flight may finish, then the connection ends. */
  close(): void {
    if (this.closed || this.destroyed) return;
    this.closed = true;
    if (!this.goawaySent) this.native.goaway(H2_NO_ERROR);
    this.goawaySent = true;
    this.scheduleFlush();
  }

  /** Closes the connection now; open calls see their streams close. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.closed = true;
    this.socket.destroy();
    const streams = this.streams.drain();
    this.drainWaiters.clear();
    for (const s of streams) s.closedWith(H2_CANCEL);
    for (const p of this.pings.splice(0)) p(new Error('connection closed'));
    this.native.destroy();
    this.emit('close');
  }
}

/** A header block converted once for the native session, for blocks many calls send. */
export function headerBlock(fields: readonly string[]): H2Fields {
  return new (loadNative().H2HeaderBlock)(fields);
}

export type { H2Fields };

function toHeaders(flat: string[]): H2Headers {
  const headers: H2Headers = {};
  for (let i = 0; i < flat.length; i += 2) {
    const name = flat[i]!;
    const prior = headers[name];
    headers[name] = prior === undefined ? flat[i + 1]! : `${prior}, ${flat[i + 1]!}`;
  }
  // Frozen: the object may serve later calls of the connection (receive()).
  return Object.freeze(headers);
}
