/**
 * @module core/instance/fd-reserve
 * Descriptors held back for recovery. Clients can take every descriptor the process may open
 * (idle keep-alive connections cost them nothing); a stub that dies then could not be restarted,
 * since its launch needs a few (shared-memory segment, wake eventfd, stdio and readiness pipes).
 * The server keeps a small set of descriptors open on /dev/null and releases them only around a
 * launch. The launch is synchronous (shm_open, eventfd, pipe, fork), so nothing else on the event
 * loop can take the released descriptors in between; afterwards the set is refilled with what is
 * free again.
 */
import fs from 'node:fs';

/** Enough for two launches in a row (each keeps ~5 descriptors open in Node and briefly uses a few more). */
export const DEFAULT_RESERVED_FDS = 24;

export class FdReserve {
  private readonly fds: number[] = [];

  constructor(private readonly size = DEFAULT_RESERVED_FDS) {
    this.refill();
  }

  /** How many descriptors are held now. */
  get held(): number {
    return this.fds.length;
  }

  /** Tops the reserve up with whatever descriptors are free (none may be). */
  refill(): void {
    while (this.fds.length < this.size) {
      try {
        this.fds.push(fs.openSync('/dev/null', 'r'));
      } catch {
        return; // out of descriptors: keep what we have, try again at the next use
      }
    }
  }

  /** Runs `fn` (synchronous) with the reserve released, then refills it. */
  use<T>(fn: () => T): T {
    for (const fd of this.fds.splice(0)) fs.closeSync(fd);
    try {
      return fn();
    } finally {
      this.refill();
    }
  }
}

let shared: FdReserve | undefined;

/** The process's reserve, made on first use (the server makes it at start-up, before clients). */
export function recoveryFds(): FdReserve {
  shared ??= new FdReserve();
  return shared;
}
