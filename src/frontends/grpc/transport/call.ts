/**
 * @module frontends/grpc/transport/call
 * One RPC on one HTTP/2 stream: response headers sent lazily with the first message, messages
 * framed, and the status sent last as trailers — or, for a call that fails before any message,
 * as a single trailers-only HEADERS frame. A call ends exactly once: by its handler, by a
 * client cancel (RST_STREAM, a closed connection) or by its deadline.
 */
import { compressed, type Algorithm } from './response-compression.js';
import { EventEmitter } from 'node:events';
import { headerBlock, type H2Stream } from './h2-session.js';
import { frameMessage, messagePrefix } from './message-reader.js';
import type { Metadata } from './metadata.js';
import { GrpcStatus, StatusError, encodeGrpcMessage } from './status.js';
import { traceLine, traceTags } from '../../../core/trace-tags.js';

const CONTENT_TYPE = 'application/grpc+proto';
const ACCEPT_ENCODING = 'identity,deflate,gzip';
/** Above this a message is written as prefix + payload rather than copied into one buffer. */
const COPY_LIMIT = 64 * 1024;

// Header blocks as HTTP/2 takes them: [name, value, ...]. The two every answer sends are also
// converted once for the native session (headerBlock), not per call.
const RESPONSE_FIELDS: readonly string[] = Object.freeze([':status', '200', 'content-type', CONTENT_TYPE, 'grpc-accept-encoding', ACCEPT_ENCODING]);
const OK_FIELDS: readonly string[] = Object.freeze(['grpc-status', '0']);
const RESPONSE_HEADERS = headerBlock(RESPONSE_FIELDS);
const OK_TRAILERS = headerBlock(OK_FIELDS);

/**
 * Told of each call's life: its end, whichever way (the server counts calls in flight), and
 * each response message written (the connection's ping policy forgives then). One object per
 * connection rather than closures per call.
 */
export interface CallObserver {
  callEnded(): void;
  sentData(): void;
}

export abstract class BaseCall {
  #headersSent = false;
  #ended = false;
  #timer: NodeJS.Timeout | undefined;
  /** When the call's stream opened (monotonic ns): the start of the wait for its request (traces). */
  readonly startNs = process.hrtime.bigint();
  /** The connection's number in debug trace lines (core/trace-tags.ts); set only while the `grpc` tag is on. */
  connectionId = 0;

  constructor(
    protected readonly stream: H2Stream,
    readonly metadata: Metadata,
    private readonly observer: CallObserver,
  ) {}

  /** @internal The call's stream closed: without a status yet, the client cancelled it. */
  streamClosed(): void {
    if (this.#ended) return;
    if (traceTags.grpc) traceLine('grpc', `${this.traceName}: cancelled by the client (RST_STREAM or connection closed)`);
    this.#cancel();
  }

  /** `conn C stream S`, as debug trace lines name the call. */
  get traceName(): string {
    return `conn ${this.connectionId} stream ${this.stream.id}`;
  }

  /** True once the call has a status (sent, or given up on by a cancel). */
  get ended(): boolean {
    return this.#ended;
  }

  /** Cancels the call with DEADLINE_EXCEEDED after `ms`. */
  setDeadline(ms: number): void {
    this.#timer = setTimeout(() => {
      if (this.#ended) return;
      if (traceTags.grpc) traceLine('grpc', `${this.traceName}: deadline of ${ms} ms exceeded; cancelling`);
      this.sendStatus(new StatusError(GrpcStatus.DEADLINE_EXCEEDED, 'Deadline exceeded'));
      this.cancelled();
    }, ms);
  }

  /** Compresses response messages with this algorithm (announced in `grpc-encoding`). */
  compression: Algorithm | undefined;

  /** Writes one serialised response message. */
  sendMessage(payload: Uint8Array): void {
    if (this.#ended || this.stream.destroyed) return;
    this.#sendHeaders();
    this.observer.sentData();
    const packed = this.compression === undefined ? undefined : compressed(this.compression, payload);
    if (packed !== undefined) {
      const prefix = messagePrefix(packed.length, 0);
      prefix[0] = 1; // the compressed flag
      this.stream.write(prefix);
      this.stream.write(packed);
    } else if (payload.length <= COPY_LIMIT) {
      this.stream.write(frameMessage(payload));
    } else {
      this.stream.write(messagePrefix(payload.length, 0));
      this.stream.write(payload);
    }
  }

  /** Ends the call with `status` (OK when undefined). */
  sendStatus(status?: StatusError): void {
    if (this.#ended) return;
    this.#finish();
    const stream = this.stream;
    if (stream.destroyed) return;
    const ok = status === undefined || status.code === GrpcStatus.OK;
    if (!this.#headersSent) {
      // Trailers-only: one HEADERS frame carries the status and ends the stream.
      this.#headersSent = true;
      stream.respond(trailersOnlyHeaders(ok ? OK_FIELDS : errorTrailers(status)), false);
      return;
    }
    stream.end(ok ? OK_TRAILERS : errorTrailers(status));
  }

  /** Sends one message and the OK status (a unary answer). */
  sendLast(payload: Uint8Array): void {
    if (this.#ended) return;
    if (!this.#headersSent && this.compression === undefined && payload.length <= COPY_LIMIT && !this.stream.destroyed) {
      // The usual unary answer: headers, message and OK trailers in one call into nghttp2.
      this.#headersSent = true;
      this.observer.sentData();
      this.stream.answer(RESPONSE_HEADERS, payload, OK_TRAILERS);
      // After the answer is queued: the call's end may let the connection close.
      this.#finish();
      return;
    }
    this.sendMessage(payload);
    this.sendStatus();
  }

  /** Called once when the call ends without a status from its handler. */
  protected abstract cancelled(): void;

  #sendHeaders(): void {
    if (this.#headersSent) return;
    this.#headersSent = true;
    this.stream.respond(this.compression === undefined ? RESPONSE_HEADERS : [...RESPONSE_FIELDS, 'grpc-encoding', this.compression], true);
  }

  #cancel(): void {
    this.#finish();
    this.cancelled();
  }

  #finish(): void {
    this.#ended = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.observer.callEnded();
  }
}

/** Headers of a trailers-only response: one HEADERS frame that also carries the status. */
export function trailersOnlyHeaders(trailers: readonly string[]): string[] {
  return [...RESPONSE_FIELDS, ...trailers];
}

export function errorTrailers(status: StatusError): string[] {
  return ['grpc-status', String(status.code), 'grpc-message', encodeGrpcMessage(status.details)];
}

/** What a unary call aborts when its client gives up: e.g. the core's CancelToken of its request. */
export interface CallCanceller {
  abort(): void;
}

/** A unary call as its handler sees it. */
export class UnaryCall<I = unknown> extends BaseCall {
  request!: I;
  /**
   * Set by a handler that must know when the client gives up (cancel, deadline, lost
   * connection) while it works; cleared when it answers. An object with `abort()`, not a
   * callback: a closure made per request and kept in this field (the handler's context with
   * the request, the call and its promise) made V8 keep every call's objects alive through
   * the scavenges and then pretenure their allocation sites, which tripled the young
   * generation's cost per gRPC request (docs/benchmarks.md, "Garbage collection and the
   * young generation").
   */
  canceller: CallCanceller | undefined = undefined;

  protected cancelled(): void {
    const c = this.canceller;
    if (c === undefined) return;
    this.canceller = undefined;
    c.abort();
  }
}

/**
 * A bidirectional streaming call: emits `data` (a decoded request message), `end` (the client
 * half-closed) and `cancelled` (cancel, deadline or connection loss); `write` sends a
 * serialised response, `end(status?)` ends the call.
 */
export class DuplexCall<I = unknown> extends BaseCall {
  readonly events = new EventEmitter();

  on(event: 'data', fn: (msg: I) => void): this;
  on(event: 'end' | 'cancelled', fn: () => void): this;
  on(event: string, fn: (...args: any[]) => void): this {
    // eslint-disable-line @typescript-eslint/no-explicit-any
    this.events.on(event, fn);
    return this;
  }

  write(payload: Uint8Array): void {
    this.sendMessage(payload);
  }

  /** Bytes written and not yet taken by HTTP/2: flow control holds them while the client does not read. */
  get queuedBytes(): number {
    return this.stream.writableLength;
  }

  /** Stops reading request messages (HTTP/2 flow control then holds the client back) until resumeReading(). */
  pauseReading(): void {
    this.stream.pause();
  }

  resumeReading(): void {
    if (!this.ended) this.stream.resume();
  }

  /** `fn` runs once when the queued responses have been taken by HTTP/2, or the stream closed. */
  onDrain(fn: () => void): void {
    this.stream.whenDrained(fn);
  }

  end(status?: StatusError): void {
    this.sendStatus(status);
  }

  protected cancelled(): void {
    this.events.emit('cancelled');
  }
}
