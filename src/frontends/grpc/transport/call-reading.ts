/**
 * @module frontends/grpc/transport/call-reading
 * Reads a call's request messages off its stream for its route: a unary call's one message
 * when the client ends its side, a streaming call's messages as they arrive. The reading is
 * the stream's handler (`H2StreamHandler`), and it also undoes, once, what lasts only while
 * the request side is open (the connection's count of unary calls still arriving, the read
 * timeout's watch), gives the call's body budget back and tells the call when the stream
 * closes. One object per call with methods the stream calls: no listener, `once` wrapper or
 * closure per call (docs/benchmarks.md, "The floor", priced those at about 2 % of the gRPC
 * server's samples).
 */
import { gunzipSync, inflateSync } from 'node:zlib';
import type { BodyHold } from './body-hold.js';
import type { DuplexCall, UnaryCall } from './call.js';
import type { H2Stream, H2StreamHandler } from './h2-session.js';
import type { MessageReader, RawMessage } from './message-reader.js';
import type { ReadWatch, Watched } from './read-watch.js';
import { GrpcStatus, StatusError } from './status.js';

export interface UnaryRoute {
  kind: 'unary';
  /** Responses may be compressed (`--grpc-infer-response-compression-level`: inference only). */
  compressResponses?: boolean;
  decode(bytes: Buffer): unknown;
  /** Answers with `call.sendLast` / `call.sendStatus`, now or later. */
  run(call: UnaryCall): void;
}

export interface BidiRoute {
  kind: 'bidi';
  compressResponses?: boolean;
  decode(bytes: Buffer): unknown;
  run(call: DuplexCall): void;
}

export type Route = UnaryRoute | BidiRoute;

/** The connection's count of unary calls whose request is still arriving (the connection limit reads it). */
export interface ArrivingCount {
  arriving: number;
}

/** What every call's reading shares: the message framing, limits and the request side's bookkeeping. */
export interface ReadingSetup {
  encoding: string;
  /** Cuts the body into messages; its limit also bounds an inflated message. */
  reader: MessageReader;
  hold: BodyHold | undefined;
  /** Counted while a unary call's request arrives. */
  arrivals: ArrivingCount | undefined;
  reads: ReadWatch | undefined;
}

abstract class CallReading<C extends UnaryCall | DuplexCall, R extends Route> implements H2StreamHandler {
  protected readonly messages: RawMessage[] = [];
  private requestOpen = true;
  private readonly watched: Watched | undefined;

  constructor(
    protected readonly stream: H2Stream,
    protected readonly call: C,
    protected readonly route: R,
    protected readonly s: ReadingSetup,
  ) {
    if (s.arrivals !== undefined) s.arrivals.arriving++;
    this.watched = s.reads?.watch(stream, call, s.reader);
  }

  abstract data(chunk: Buffer): void;

  /** The request side ended; its messages are in. */
  protected abstract requestEnded(): void;

  end(): void {
    this.requestSideDone();
    this.requestEnded();
  }

  closed(): void {
    this.call.streamClosed();
    this.requestSideDone();
    this.s.hold?.close();
  }

  private requestSideDone(): void {
    if (!this.requestOpen) return;
    this.requestOpen = false;
    if (this.s.arrivals !== undefined) this.s.arrivals.arriving--;
    if (this.watched !== undefined) this.s.reads!.unwatch(this.watched);
  }

  /** Cuts `chunk` into `messages` (whole ones appended), reserving the body budget for a message it starts. */
  protected take(chunk: Buffer): void {
    this.s.reader.push(chunk, this.messages);
    this.s.hold?.afterPush(this.s.reader);
  }

  protected decode(m: RawMessage): unknown {
    const payload = payloadOf(m, this.s.encoding, this.s.reader.maxMessageBytes);
    try {
      return this.route.decode(payload);
    } catch (err) {
      throw new StatusError(GrpcStatus.INTERNAL, `Error deserializing request: ${(err as Error).message}`);
    }
  }
}

/** A unary call: exactly one message, run when the client ends its side. */
export class UnaryReading extends CallReading<UnaryCall, UnaryRoute> {
  data(chunk: Buffer): void {
    try {
      this.take(chunk);
      if (this.messages.length > 1) throw new StatusError(GrpcStatus.UNIMPLEMENTED, 'Received a second request message for a unary call');
    } catch (err) {
      this.fail(asStatus(err));
    }
  }

  protected requestEnded(): void {
    const call = this.call;
    if (call.ended) return;
    if (this.messages.length !== 1 || this.s.reader.midMessage) {
      this.fail(new StatusError(GrpcStatus.UNIMPLEMENTED, 'Expected exactly one request message for a unary call'));
      return;
    }
    try {
      call.request = this.decode(this.messages[0]!);
    } catch (err) {
      this.fail(asStatus(err));
      return;
    }
    this.route.run(call);
  }

  private fail(status: StatusError): void {
    this.stream.discard();
    this.call.sendStatus(status);
  }
}

/** A bidirectional stream: each message decoded and handed to the call as it is whole. */
export class BidiReading extends CallReading<DuplexCall, BidiRoute> {
  data(chunk: Buffer): void {
    const call = this.call;
    if (call.ended) return;
    const messages = this.messages;
    try {
      this.take(chunk);
      for (let i = 0; i < messages.length && !call.ended; i++) call.events.emit('data', this.decode(messages[i]!));
    } catch (err) {
      // The stream cannot be trusted past a bad message: end the call, which cancels the rest.
      call.sendStatus(asStatus(err));
      call.events.emit('cancelled');
    } finally {
      messages.length = 0;
    }
  }

  protected requestEnded(): void {
    if (!this.call.ended) this.call.events.emit('end');
  }
}

/** The payload of a message, inflated when its flag says so (bounded by the message limit). */
function payloadOf(m: RawMessage, encoding: string, maxBytes: number): Buffer {
  if (!m.compressed) return m.data;
  if (encoding === 'identity') {
    throw new StatusError(GrpcStatus.INTERNAL, 'Compressed message received without grpc-encoding');
  }
  // Request compression is rare (tritonclient's compression_algorithm): inflating in place
  // keeps messages in order, and maxOutputLength keeps a small bomb from growing unbounded.
  try {
    return encoding === 'gzip' ? gunzipSync(m.data, { maxOutputLength: maxBytes }) : inflateSync(m.data, { maxOutputLength: maxBytes });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new StatusError(GrpcStatus.RESOURCE_EXHAUSTED, `Received message larger than max (decompressed size over ${maxBytes})`);
    }
    throw new StatusError(GrpcStatus.INTERNAL, `Failed to decompress the request message: ${(err as Error).message}`);
  }
}

function asStatus(err: unknown): StatusError {
  return err instanceof StatusError ? err : new StatusError(GrpcStatus.INTERNAL, err instanceof Error ? err.message : String(err));
}
