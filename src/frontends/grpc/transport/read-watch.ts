/**
 * @module frontends/grpc/transport/read-watch
 * The read timeout (TransportOptions.readTimeoutMs): a call whose request message stops arriving
 * is ended with DEADLINE_EXCEEDED and its stream reset, so a slow or stuck sender cannot hold a
 * call, and the connection it keeps busy, for ever. A unary call waits for data until its
 * request side ends; a stream only in the middle of a message (between messages it may stay
 * quiet); a stream the server paused (the body budget is full) waits on the server, not the
 * client, and is not counted.
 *
 * One sweep per transport, every quarter of the timeout (at most every second) while any call
 * is watched, looks at the calls still reading; a call's progress is its reader's byte count.
 * So a call costs the request path a push and a swap-remove in an array, not a timer and
 * listeners of its own (the call's reading unwatches it when its request side ends), and a
 * stall is seen between one timeout and one timeout plus a sweep interval after the last
 * byte. An array rather than a Set: a Set with an insert and a delete per call rehashes every
 * few calls and keeps its young entries alive through scavenges (core/slot-table.ts says how).
 */
import { H2_NO_ERROR, type H2Stream } from './h2-session.js';
import { DuplexCall, type UnaryCall } from './call.js';
import type { MessageReader } from './message-reader.js';
import { GrpcStatus, StatusError } from './status.js';

/** A call under watch (ReadWatch.watch), handed back to unwatch. */
export interface Watched {
  stream: H2Stream;
  call: UnaryCall | DuplexCall;
  reader: MessageReader;
  /** A stream, which waits for data only in the middle of a message. */
  midMessageOnly: boolean;
  /** The reader's byte count at `since`. */
  bytes: number;
  /** Last progress (or last moment nothing was due), Date.now(). */
  since: number;
  /** Its index in ReadWatch.calls; -1 once removed. */
  at: number;
}

export class ReadWatch {
  private readonly calls: Watched[] = [];
  /** Armed by the first call watched, disarmed by a sweep that finds none: an idle server never sweeps. */
  private timer: NodeJS.Timeout | undefined = undefined;
  private stopped = false;

  constructor(private readonly timeoutMs: number) {}

  /** Watches `call`; give what it returns to `unwatch` when its request side ends (or the stream closes). */
  watch(stream: H2Stream, call: UnaryCall | DuplexCall, reader: MessageReader): Watched {
    const w: Watched = { stream, call, reader, midMessageOnly: call instanceof DuplexCall, bytes: reader.bytesRead, since: Date.now(), at: this.calls.length };
    this.calls.push(w);
    if (this.timer === undefined && !this.stopped) {
      this.timer = setInterval(() => this.sweep(), Math.min(1000, Math.ceil(this.timeoutMs / 4)));
      this.timer.unref();
    }
    return w;
  }

  unwatch(w: Watched): void {
    if (w.at < 0) return;
    const last = this.calls.pop()!;
    if (last !== w) {
      this.calls[w.at] = last;
      last.at = w.at;
    }
    w.at = -1;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private sweep(): void {
    if (this.calls.length === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    const now = Date.now();
    // From the end: a removal moves the last entry into the removed one's place, already seen
    // (ending a call may unwatch others: an entry then seen twice is harmless).
    for (let i = this.calls.length - 1; i >= 0; i--) {
      const w = this.calls[i];
      if (w === undefined) continue;
      if (w.call.ended || w.stream.destroyed) {
        this.unwatch(w);
      } else if (w.reader.bytesRead !== w.bytes || w.stream.isPaused() || (w.midMessageOnly && !w.reader.midMessage)) {
        w.bytes = w.reader.bytesRead;
        w.since = now;
      } else if (now - w.since >= this.timeoutMs) {
        this.unwatch(w);
        this.end(w, now - w.since);
      }
    }
  }

  private end(w: Watched, idleMs: number): void {
    const { stream, call } = w;
    stream.discard();
    call.sendStatus(
      new StatusError(
        GrpcStatus.DEADLINE_EXCEEDED,
        `The request message stopped arriving: no data for ${Math.round(idleMs / 1000)} s (--grpc-read-timeout-secs=${this.timeoutMs / 1000})`,
      ),
    );
    // A stream's handler drops what it started, as for a bad message.
    if (call instanceof DuplexCall) call.events.emit('cancelled');
    // Trailers first (written after the last response frame), then the reset that stops a
    // sender that never ends its side.
    setTimeout(() => {
      stream.close(H2_NO_ERROR); // nothing when the stream has closed meanwhile
    }, 500).unref();
  }
}
