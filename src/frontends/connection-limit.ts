/**
 * @module frontends/connection-limit
 * How many client connections a frontend keeps open, shared by HTTP and gRPC.
 *
 * Idle keep-alive connections cost a client nothing and the server one descriptor each; without
 * a bound, a few hundred of them take every descriptor and the server can no longer accept a
 * health probe or restart a stub. Past the limit a new connection replaces the oldest *idle* one
 * (a pooled client reconnects when it needs to; a Kubernetes probe gets through), and is refused
 * only when every connection has a request in flight. Connections accepted in the last 250 ms
 * go last, so a new client gets to send its request. The default leaves room under the
 * process's descriptor limit for stubs, shared memory and the recovery reserve
 * (core/instance/fd-reserve.ts).
 */
import fs from 'node:fs';

/** Descriptors kept out of the connection budget: stubs' pipes and eventfds, files, listeners. */
const NON_CLIENT_FDS = 128;
const MIN_CONNECTIONS = 8;
/** A refusal burst ends after this long without refusals (then the next one is logged again). */
const BURST_QUIET_MS = 10_000;

/** The soft RLIMIT_NOFILE of this process, from /proc (Node has no getrlimit). */
export function descriptorLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    return m && m[1] !== 'unlimited' ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Each frontend's default: half of what the descriptor limit leaves after NON_CLIENT_FDS. */
export function defaultMaxConnections(limit = descriptorLimit()): number {
  if (limit === undefined) return 65_536;
  return Math.max(MIN_CONNECTIONS, Math.floor((limit - NON_CLIENT_FDS) / 2));
}

/**
 * How long a new connection is spared from eviction: time to send its first request. Without
 * it, a burst of connections larger than the limit could evict a client whose request bytes
 * arrived but were not read yet (an accepted connection looks idle until its head is parsed).
 */
const NEW_CONNECTION_GRACE_MS = 250;

export interface LimitedConnection {
  /** No request in flight (idle, or an HTTP request head still arriving): may be closed to make room. */
  readonly idle: boolean;
  /** When it was accepted (Date.now()). */
  readonly openedAt: number;
  /** Closes it now. */
  evict(): void;
}

export interface ConnectionLimitCounts {
  /** Connections closed at once because every open one was busy. */
  refused: number;
  /** Idle connections closed to make room for a new one. */
  evicted: number;
}

export class ConnectionLimit {
  readonly counts: ConnectionLimitCounts = { refused: 0, evicted: 0 };
  private lastRefusal = 0;

  /**
   * @param max connections kept open (0 = no limit)
   * @param warn logs the start of a refusal burst (once per burst)
   */
  constructor(
    readonly max: number,
    private readonly frontend: string,
    private readonly warn: (line: string) => void,
  ) {}

  /**
   * Whether a new connection may stay, given the open ones in the order they were opened;
   * makes room by evicting the oldest idle one when at the limit.
   */
  admit(open: Iterable<LimitedConnection>, size: number): boolean {
    if (this.max <= 0 || size < this.max) return true;
    // The oldest idle one past its grace; failing that (a burst), the oldest idle one.
    const spared = Date.now() - NEW_CONNECTION_GRACE_MS;
    let oldestIdle: LimitedConnection | undefined;
    for (const c of open) {
      if (!c.idle) continue;
      oldestIdle ??= c;
      if (c.openedAt <= spared) {
        oldestIdle = c;
        break;
      }
    }
    if (oldestIdle) {
      oldestIdle.evict();
      this.counts.evicted++;
      return true;
    }
    this.counts.refused++;
    const now = Date.now();
    if (now - this.lastRefusal > BURST_QUIET_MS) {
      this.warn(
        `${this.frontend}: ${this.max} connections are open and every one has a request in flight; refusing new connections until one is free (--${this.frontend.toLowerCase()}-max-connections)`,
      );
    }
    this.lastRefusal = now;
    return false;
  }
}
