/**
 * @module backends/python/ipc/shm-reserve
 * Space in /dev/shm held back for restarting a stub. A stub's region needs its n0 segment
 * (shm-default-byte-size) at once; when the stub dies its n0 is freed, but anything else writing
 * to /dev/shm (clients' registered system shared memory, other processes, tensors of the other
 * instances) can take that space before the restart, which would then fail with "/dev/shm is
 * full" for as long as they hold it. The backend keeps one n0's worth allocated in a file of
 * its own and lets go of it only around a launch that would not fit otherwise (which creates
 * the region synchronously, so the space goes to the new region); afterwards it takes back what
 * is free again, which may be nothing until space returns. Created at the first launch, so a backend that never starts a
 * stub holds nothing; removed when the process exits (and by the next start's stale-file
 * cleanup after a crash, since the name starts with `tritium_<pid>_`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadNative } from './native.js';
import { newShmName, SHM_DIR } from './shm-name.js';

export class ShmReserve {
  readonly name = newShmName('reserve');
  private readonly file = path.join(SHM_DIR, this.name);
  private held = false;
  private exitHooked = false;

  constructor(readonly bytes: number) {}

  /** Takes `bytes` of /dev/shm if it can (none may be free: then it tries at the next use). */
  refill(): void {
    if (this.held) return;
    const file = this.file;
    try {
      fs.writeFileSync(file, '', { mode: 0o600 });
      if (!this.exitHooked) {
        this.exitHooked = true;
        process.once('exit', () => this.drop());
      }
      fs.truncateSync(file, this.bytes);
      // Allocated, not just sized: tmpfs gives a sparse file no pages.
      loadNative().reserveShm(this.name, 0, this.bytes);
      this.held = true;
    } catch {
      this.drop(); // out of space or descriptors: hold nothing rather than part
    }
  }

  /**
   * Runs `fn` (synchronous) with the space given back when /dev/shm lacks it otherwise, then
   * takes it again. With room to spare (the usual case) the reserve stays as it is: a launch
   * then costs no re-allocation of it, which matters at start-up with many instances.
   */
  use<T>(fn: () => T): T {
    if (this.held && freeBytes() < 2 * this.bytes) this.drop();
    try {
      return fn();
    } finally {
      this.refill();
    }
  }

  /** Gives the space back for good (shutdown). */
  drop(): void {
    this.held = false;
    try {
      fs.unlinkSync(this.file);
    } catch {
      // not there
    }
  }
}

/** Bytes of /dev/shm free now (0 when it cannot be told). */
function freeBytes(): number {
  try {
    const st = fs.statfsSync(SHM_DIR);
    return st.bavail * st.bsize;
  } catch {
    return 0;
  }
}
