/**
 * @module frontends/grpc/transport/keepalive
 * The gRPC keepalive and ping policy tritonserver applies to each HTTP/2 connection, from its
 * `--grpc-keepalive-*`, `--grpc-http2-*` and `--grpc-max-connection-age*` flags (their defaults
 * and meaning: docs/protocol-notes.md, "gRPC keepalive").
 *
 * Sending: every `timeMs` the server pings the client, only while a call is open unless
 * `permitWithoutCalls`; a ping not acknowledged within `timeoutMs` closes the connection.
 * `maxPingsWithoutData` does not limit these pings: tritonserver 2.51 sends its keepalive pings
 * past it (protocol notes), and tritium sends no other pings, so it is kept and has no effect
 * on the wire, as there.
 * Receiving: a client ping that comes sooner than `minRecvPingIntervalWithoutDataMs` after the
 * previous one (two hours instead while no call is open, unless `permitWithoutCalls`) is a
 * strike; past `maxPingStrikes`
 * strikes (0 = no limit) the server sends GOAWAY ENHANCE_YOUR_CALM ("too_many_pings") and closes.
 * Sending headers or data forgives: strikes start again.
 *
 * The session does not report the frames it writes, so "sent headers or data" is taken at
 * the points where the transport writes them: when a call starts (its response headers follow),
 * at each response message, and when it ends (its trailers). The messages matter for a long
 * stream: gRPC clients send BDP pings as responses arrive, and without forgiving at each one a
 * busy decoupled stream is closed for "too_many_pings".
 */
import { H2_ENHANCE_YOUR_CALM, type H2Session } from './h2-session.js';

export interface KeepaliveOptions {
  timeMs: number;
  timeoutMs: number;
  permitWithoutCalls: boolean;
  /** Taken as tritonserver takes it; limits no ping tritium sends (see above). */
  maxPingsWithoutData: number;
  minRecvPingIntervalWithoutDataMs: number;
  maxPingStrikes: number;
  /** 0 = unlimited (Triton's default: undefined). */
  maxConnectionAgeMs: number;
  /** Time left to open calls after the age's GOAWAY; 0 = unlimited. */
  maxConnectionAgeGraceMs: number;
}

/** tritonserver 2.51's defaults (`tritonserver --help`). */
export const KEEPALIVE_DEFAULTS: Readonly<KeepaliveOptions> = {
  timeMs: 7_200_000,
  timeoutMs: 20_000,
  permitWithoutCalls: false,
  maxPingsWithoutData: 2,
  minRecvPingIntervalWithoutDataMs: 300_000,
  maxPingStrikes: 2,
  maxConnectionAgeMs: 0,
  maxConnectionAgeGraceMs: 0,
};

/** gRPC's interval for client pings while no call is open and calls are required. */
const IDLE_PING_INTERVAL_MS = 7_200_000;

/** Per-connection state; `callStarted` / `callEnded` are called by the transport. */
export interface SessionKeepalive {
  callStarted(): void;
  callEnded(): void;
  /** A response message was written on one of its calls (DATA frames: strikes are forgiven). */
  sentData(): void;
  /** Calls open on the connection now (none: it is idle, and may make room at the connection limit). */
  readonly openCalls: number;
}

export function superviseSession(session: H2Session, o: KeepaliveOptions): SessionKeepalive {
  let calls = 0;
  let lastPingRecv = Number.NEGATIVE_INFINITY;
  let strikes = 0;
  const timers: NodeJS.Timeout[] = [];
  const sentHeadersOrData = (): void => {
    strikes = 0;
    lastPingRecv = Number.NEGATIVE_INFINITY;
  };

  const sendPing = (): void => {
    if (session.destroyed || session.closed) return;
    if (calls === 0 && !o.permitWithoutCalls) return;
    const deadline = setTimeout(() => session.destroy(), o.timeoutMs);
    deadline.unref();
    const sent = session.ping((err) => {
      clearTimeout(deadline);
      if (err) session.destroy();
    });
    if (!sent) clearTimeout(deadline);
  };
  const pinger = setInterval(sendPing, o.timeMs);
  pinger.unref();
  timers.push(pinger);

  session.on('ping', () => {
    const now = Date.now();
    const interval = calls === 0 && !o.permitWithoutCalls ? IDLE_PING_INTERVAL_MS : o.minRecvPingIntervalWithoutDataMs;
    if (now < lastPingRecv + interval) strikes++;
    lastPingRecv = now;
    if (o.maxPingStrikes > 0 && strikes > o.maxPingStrikes && !session.closed) {
      session.goaway(H2_ENHANCE_YOUR_CALM, Buffer.from('too_many_pings'));
      session.close();
    }
  });

  if (o.maxConnectionAgeMs > 0) {
    const age = setTimeout(() => {
      session.close(); // GOAWAY: open calls may finish
      if (o.maxConnectionAgeGraceMs > 0) {
        const grace = setTimeout(() => session.destroy(), o.maxConnectionAgeGraceMs);
        grace.unref();
        timers.push(grace);
      }
    }, o.maxConnectionAgeMs);
    age.unref();
    timers.push(age);
  }
  session.once('close', () => {
    for (const t of timers) clearTimeout(t);
  });

  return {
    callStarted: () => {
      calls++;
      sentHeadersOrData();
    },
    callEnded: () => {
      calls--;
      sentHeadersOrData();
    },
    sentData: sentHeadersOrData,
    get openCalls() {
      return calls;
    },
  };
}
