/**
 * @module frontends/descriptor-watch
 * Notices when the process has run out of file descriptors, which the frontends cannot see on
 * their own: when accept() fails with EMFILE/ENFILE, libuv closes a descriptor it keeps in
 * reserve, accepts and closes the waiting connections with it, and reopens it, so the server
 * neither spins nor crashes but Node gets no event. Clients just see their connections closed.
 * The connection limits (connection-limit.ts) normally stop clients before this point; this
 * watch is for when they do not (limits set above what the descriptor limit allows, or
 * descriptors taken by something else).
 *
 * A probe opens and closes one descriptor once a second (on the server's housekeeping timer,
 * core/second-tick.ts): EMFILE/ENFILE means none is free, which is exactly when accepts fail.
 * The condition is logged once per burst (a warning when it starts, a line when descriptors
 * are free again) and each burst is counted (`tritium_descriptor_exhaustion_total`). A
 * listening server's own EMFILE/ENFILE error, which libuv passes on in rare cases, joins the
 * same burst instead of being logged per connection.
 */
import fs from 'node:fs';
import { descriptorLimit } from './connection-limit.js';
import { joinSecondTick, leaveSecondTick, type EverySecond } from '../core/second-tick.js';

const SHORTAGE_CODES = new Set(['EMFILE', 'ENFILE']);

/** Whether `err` is a descriptor shortage (per process or system-wide). */
export function isDescriptorShortage(err: unknown): boolean {
  return SHORTAGE_CODES.has((err as NodeJS.ErrnoException | undefined)?.code ?? '');
}

/** Descriptors this process has open now (undefined when /proc cannot be read, e.g. none is free). */
export function openDescriptors(): number | undefined {
  try {
    // The listing's own directory descriptor is counted too, and closed again.
    return fs.readdirSync('/proc/self/fd').length - 1;
  } catch {
    return undefined;
  }
}

export interface DescriptorWatchOptions {
  warn: (line: string) => void;
  info: (line: string) => void;
  /** The soft RLIMIT_NOFILE (read from /proc by default). */
  limit?: number;
  /** Tries to take one descriptor and gives it back; throws EMFILE/ENFILE when none is free. */
  probe?: () => void;
}

export class DescriptorWatch implements EverySecond {
  /** Bursts of exhaustion seen since start. */
  exhaustions = 0;
  readonly limit: number | undefined;
  private since: number | undefined;
  private readonly probe: () => void;

  constructor(private readonly o: DescriptorWatchOptions) {
    this.limit = o.limit ?? descriptorLimit();
    this.probe = o.probe ?? (() => fs.closeSync(fs.openSync('/dev/null', 'r')));
  }

  /** Whether the process is out of descriptors now (as of the last probe or report). */
  get exhausted(): boolean {
    return this.since !== undefined;
  }

  start(): void {
    joinSecondTick(this);
  }

  stop(): void {
    leaveSecondTick(this);
  }

  onSecond(): void {
    this.check();
  }

  /** One probe: starts or ends a burst. */
  check(): void {
    try {
      this.probe();
    } catch (err) {
      if (isDescriptorShortage(err)) this.shortage();
      return;
    }
    if (this.since === undefined) return;
    const seconds = ((Date.now() - this.since) / 1000).toFixed(1);
    this.since = undefined;
    const open = openDescriptors();
    const inUse = open !== undefined && this.limit !== undefined ? ` (${open} of ${this.limit} in use)` : '';
    this.o.info(`file descriptors are available again after ${seconds} s${inUse}; new connections are accepted`);
  }

  /**
   * A listening server's error: true when it was a descriptor shortage (taken into the current
   * burst), false when the caller should report it as it is.
   */
  report(err: unknown): boolean {
    if (!isDescriptorShortage(err)) return false;
    this.shortage();
    return true;
  }

  private shortage(): void {
    if (this.since !== undefined) return;
    this.since = Date.now();
    this.exhaustions++;
    const limit = this.limit !== undefined ? `all ${this.limit} file descriptors` : 'every file descriptor';
    this.o.warn(
      `${limit} of the server are in use: new client connections are closed as soon as they arrive until some are free; lower --http-max-connections / --grpc-max-connections, or raise the limit (ulimit -n)`,
    );
  }
}
