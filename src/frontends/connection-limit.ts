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

/**
 * The words frontend threads share for one limit: open connections, refused, evicted (int32),
 * and when the last refusal was (int64 ms), so a burst is logged once per server.
 */
export function sharedConnectionLimitMemory(): SharedArrayBuffer {
  return new SharedArrayBuffer(24);
}

const OPEN = 0;
const REFUSED = 1;
const EVICTED = 2;
const LAST_REFUSAL_BYTE = 16;

export class ConnectionLimit {
  readonly counts: ConnectionLimitCounts;
  private lastRefusal = 0;
  private readonly shared: Int32Array | undefined;
  private readonly sharedLastRefusal: BigInt64Array | undefined;

  /**
   * @param max connections kept open (0 = no limit)
   * @param warn logs the start of a refusal burst (once per burst)
   * @param shared from sharedConnectionLimitMemory(): one limit across every thread given it
   *   (see decide()).
   */
  constructor(
    readonly max: number,
    private readonly frontend: string,
    private readonly warn: (line: string) => void,
    shared?: SharedArrayBuffer,
  ) {
    if (shared === undefined) {
      this.counts = { refused: 0, evicted: 0 };
      return;
    }
    const words = new Int32Array(shared, 0, 3);
    this.shared = words;
    this.sharedLastRefusal = new BigInt64Array(shared, LAST_REFUSAL_BYTE, 1);
    this.counts = {
      get refused() {
        return Atomics.load(words, REFUSED);
      },
      get evicted() {
        return Atomics.load(words, EVICTED);
      },
    } as ConnectionLimitCounts;
  }

  /**
   * Whether a new connection may stay, given this thread's open ones in the order they were
   * opened and how many they are; makes room by evicting the oldest idle one when at the limit.
   * With shared memory the count is the server's, and an admitted connection is counted until
   * `closed()`.
   */
  admit(open: Iterable<LimitedConnection>, size: number): boolean {
    if (this.underLimit(size)) return true;
    if (this.evictIdle(open)) return true;
    this.refuse();
    return false;
  }

  /**
   * admit() for a frontend thread, which holds only some of the server's connections. At the
   * limit it closes the server's oldest idle connection as far as it can tell: its own oldest
   * idle one if past its grace; else one past its grace of another thread (`elsewhere(t)` asks
   * the others to close their oldest idle connection opened before `t`, and resolves whether one
   * did); else another thread's idle one older than its own oldest idle one; else that one of its
   * own; else, when none is idle anywhere, it refuses. So idle clients of one thread cannot keep
   * a probe out of another, and a new connection still sending its request goes last.
   */
  decide(
    /** This thread's open connections, read afresh at each step (the others are asked in between). */
    open: () => Iterable<LimitedConnection>,
    size: number,
    /** Undefined on one loop, which holds every connection: then this is admit(). */
    elsewhere: ((olderThan: number) => Promise<boolean>) | undefined,
    verdict: (admitted: boolean) => void,
  ): void {
    if (elsewhere === undefined) return verdict(this.admit(open(), size));
    if (this.underLimit(size)) return verdict(true);
    const admitted = (): void => verdict(true);
    const pastGrace = Date.now() - NEW_CONNECTION_GRACE_MS + 1;
    if (this.evictIdle(open(), pastGrace)) return admitted();
    const fail = (): void => {
      this.refuse();
      verdict(false);
    };
    elsewhere(pastGrace).then((evicted) => {
      if (evicted) return admitted();
      // While the others were asked, room may have come on its own: connections whose clients
      // left close in their own threads.
      if (this.underLimit(size)) return verdict(true);
      const mine = oldestIdle(open());
      elsewhere(mine?.openedAt ?? Number.POSITIVE_INFINITY).then((older) => {
        if (older) return admitted();
        if (this.underLimit(size)) return verdict(true);
        if (this.evictIdle(open())) return admitted();
        fail();
      }, fail);
    }, fail);
  }

  /**
   * Closes the oldest idle connection of `open` if it was opened before `olderThan` (epoch ms;
   * any by default) and hands its slot to the connection that asked; false when none
   * qualifies. `open` is in the order the connections were opened, so the first idle one is
   * the oldest; when it is past its grace so is no younger one, and a younger one is closed
   * only when none older is idle.
   */
  evictIdle(open: Iterable<LimitedConnection>, olderThan = Number.POSITIVE_INFINITY): boolean {
    const c = oldestIdle(open);
    if (c === undefined || c.openedAt >= olderThan) return false;
    c.evict();
    // Counted here, not when the asking thread hears of it: the evicted one's close event in
    // this thread would otherwise free its slot first, for a third connection to take.
    this.countEviction();
    return true;
  }

  /** An admitted connection closed (counts only with shared memory). */
  closed(): void {
    if (this.shared !== undefined && this.max > 0) Atomics.sub(this.shared, OPEN, 1);
  }

  /** Room without evicting: under the limit (with shared memory, the new connection is counted). */
  private underLimit(size: number): boolean {
    if (this.max <= 0) return true;
    return this.shared === undefined ? size < this.max : reserve(this.shared, this.max);
  }

  private countEviction(): void {
    if (this.shared === undefined) {
      this.counts.evicted++;
    } else {
      // The evicted one is still counted until its close event; the new one is counted now.
      Atomics.add(this.shared, EVICTED, 1);
      Atomics.add(this.shared, OPEN, 1);
    }
  }

  private refuse(): void {
    if (this.shared === undefined) this.counts.refused++;
    else Atomics.add(this.shared, REFUSED, 1);
    const now = Date.now();
    const last = this.sharedLastRefusal === undefined ? this.lastRefusal : Number(Atomics.exchange(this.sharedLastRefusal, 0, BigInt(now)));
    if (now - last > BURST_QUIET_MS) {
      this.warn(
        `${this.frontend}: ${this.max} connections are open and every one has a request in flight; refusing new connections until one is free (--${this.frontend.toLowerCase()}-max-connections)`,
      );
    }
    this.lastRefusal = now;
  }
}

/** The first idle connection of `open` (the oldest: `open` is in opening order). */
function oldestIdle(open: Iterable<LimitedConnection>): LimitedConnection | undefined {
  for (const c of open) if (c.idle) return c;
  return undefined;
}

/** Counts one more open connection if the server is under `max`. */
function reserve(words: Int32Array, max: number): boolean {
  for (;;) {
    const cur = Atomics.load(words, OPEN);
    if (cur >= max) return false;
    if (Atomics.compareExchange(words, OPEN, cur, cur + 1) === cur) return true;
  }
}
