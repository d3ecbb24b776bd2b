/**
 * @module core/extensions/shm-file
 * A client's POSIX shared-memory object (`/dev/shm/<key>`), reached through an open descriptor
 * with pread/pwrite instead of a mapping. The client owns the object and may shrink, replace or
 * unlink it at any time after registering it; through a mapping, touching a page past the new
 * end raises SIGBUS and kills the whole server. Through the descriptor the same access is a
 * short read (inputs) or a size check that fails (outputs): an error for that request only.
 *
 * The descriptor is opened once at register, as Triton maps once: unlinking or replacing the
 * name afterwards leaves the registered region on the object that was there at register.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Where glibc's shm_open puts objects on Linux. */
const SHM_DIR = '/dev/shm';

// O_NOFOLLOW as shm_open does (a link in /dev/shm must not lead elsewhere); O_NONBLOCK so that a
// FIFO planted under the key cannot block the event loop before fstat refuses it.
const OPEN_FLAGS = fs.constants.O_RDWR | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

export interface ShmFile {
  /** The object's size now; the client may have changed it since register. */
  size(): number;
  /** Reads `into.length` bytes from `position`; returns how many were there (fewer past the end). */
  read(into: Buffer, position: number): number;
  /** Writes all of `from` at `position` (the caller checks the size first; see size()). */
  write(from: Buffer, position: number): void;
  close(): void;
}

/** Opens client shared-memory objects by key; throws when one cannot be opened. */
export interface ShmFiles {
  open(key: string): ShmFile;
}

class DescriptorShmFile implements ShmFile {
  constructor(private fd: number) {}

  size(): number {
    return fs.fstatSync(this.fd).size;
  }

  read(into: Buffer, position: number): number {
    let done = 0;
    while (done < into.length) {
      const n = fs.readSync(this.fd, into, done, into.length - done, position + done);
      if (n === 0) break; // end of the object
      done += n;
    }
    return done;
  }

  write(from: Buffer, position: number): void {
    let done = 0;
    while (done < from.length) done += fs.writeSync(this.fd, from, done, from.length - done, position + done);
  }

  close(): void {
    if (this.fd < 0) return;
    fs.closeSync(this.fd);
    this.fd = -1;
  }
}

/** shm_open's name rules: one optional leading slash and no other, so a key stays in /dev/shm. */
function objectPath(key: string): string {
  const name = key.startsWith('/') ? key.slice(1) : key;
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new Error(`invalid shared memory key '${key}'`);
  }
  return path.join(SHM_DIR, name);
}

export const descriptorShmFiles: ShmFiles = {
  open(key: string): ShmFile {
    const fd = fs.openSync(objectPath(key), OPEN_FLAGS);
    try {
      if (!fs.fstatSync(fd).isFile()) throw new Error(`shared memory key '${key}' is not a regular file`);
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
    return new DescriptorShmFile(fd);
  },
};
