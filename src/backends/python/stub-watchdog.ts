/**
 * @module backends/python/stub-watchdog
 * A stub's heartbeat watchdog: once a second (on the server's one housekeeping timer,
 * core/second-tick.ts, so an idle server does not wake once per stub) it reads the stub's
 * heartbeat word, written every 0.5 s by a thread of the stub that needs the GIL, and tells its
 * launcher when the word has not moved for the bound.
 */
import { joinSecondTick, leaveSecondTick, type EverySecond } from '../../core/second-tick.js';

/** Before the first beat (interpreter start, imports) a stub gets at least this many seconds. */
const START_SECONDS = 60;

/** Where a stub's heartbeat is read (its channel's header). */
export interface HeartbeatSource {
  /** The last beat (CLOCK_MONOTONIC ms), 0 before the first. */
  heartbeatMs(): number;
}

/** One watched stub; `stop()` ends its watch (the stub ended, or it was reported stale). */
export class HeartbeatWatch implements EverySecond {
  private last: number;
  private stale = 0;
  /** Joined since the last tick: the next tick, under a second away, only takes its reading. */
  private fresh = true;
  private readonly limit: number;
  private readonly startLimit: number;

  constructor(
    private readonly source: HeartbeatSource,
    timeoutSeconds: number,
    /** Called once, with the seconds without a beat, when the bound is reached. */
    private readonly onStale: (seconds: number) => void,
  ) {
    this.limit = Math.max(1, Math.ceil(timeoutSeconds));
    this.startLimit = Math.max(this.limit, START_SECONDS);
    this.last = source.heartbeatMs();
    joinSecondTick(this);
  }

  stop(): void {
    leaveSecondTick(this);
  }

  onSecond(): void {
    const hb = this.source.heartbeatMs();
    if (this.fresh || hb !== this.last) {
      this.fresh = false;
      this.last = hb;
      this.stale = 0;
      return;
    }
    if (++this.stale < (hb === 0 ? this.startLimit : this.limit)) return;
    this.stop();
    this.onStale(this.stale);
  }
}
