/**
 * @module backends/python/ipc/shm-cleanup
 * Housekeeping of /dev/shm files. Region names start with `tritium_<serverPid>_`, so files left
 * by a crashed server can be recognised and removed at the next start (docs/ipc.md, "Segments").
 */
import fs from 'node:fs';
import path from 'node:path';
import { OWN_SHM_PREFIX, SHM_DIR, shmOwnerPid } from './shm-name.js';

function listShm(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

function unlinkQuiet(file: string): boolean {
  try {
    fs.unlinkSync(file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false; // raced with its owner
    throw e;
  }
}

/** True if a process with this pid exists (EPERM means it exists but is not ours). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Names (not paths) of the files of one region: `<region>.<segment>`. */
export function listRegionFiles(region: string, dir: string = SHM_DIR): string[] {
  const prefix = `${region}.`;
  return listShm(dir).filter((f) => f.startsWith(prefix));
}

/** Unlinks every `<region>.*` file; returns the names removed. */
export function removeRegion(region: string, dir: string = SHM_DIR): string[] {
  return listRegionFiles(region, dir).filter((f) => unlinkQuiet(path.join(dir, f)));
}

/** Unlinks `tritium_<pid>_*` files whose pid is not a live process; returns the names removed. */
export function removeStaleFiles(dir: string = SHM_DIR): string[] {
  const removed: string[] = [];
  const alive = new Map<number, boolean>();
  for (const f of listShm(dir)) {
    const pid = shmOwnerPid(f);
    if (pid === undefined || pid === process.pid) continue;
    let live = alive.get(pid);
    if (live === undefined) alive.set(pid, (live = pid > 0 && pidAlive(pid)));
    if (!live && unlinkQuiet(path.join(dir, f))) removed.push(f);
  }
  return removed;
}

/**
 * Unlinks every file of this server process. Synchronous, and never throws: it runs in the
 * process's 'exit' handler, so that no file outlives the server on any exit path Node sees.
 */
export function removeOwnFiles(dir: string = SHM_DIR): void {
  for (const f of listShm(dir)) {
    if (!f.startsWith(OWN_SHM_PREFIX)) continue;
    try {
      fs.unlinkSync(path.join(dir, f));
    } catch {
      // raced with a channel closing it, or not ours to remove: nothing more can be done at exit
    }
  }
}

/**
 * The second half of a "/dev/shm is full" error: how full it is, what holds the space (this
 * server's instances — their n0 segments, sized by shm-default-byte-size, and tensors of
 * requests in flight — and other files, the largest named) and what helps. Sizes are the pages
 * each file really holds (hollowed segments count for nothing).
 */
export function describeShmUse(dir: string = SHM_DIR): string {
  let head = '';
  try {
    const st = fs.statfsSync(dir);
    head = `${st.bavail * st.bsize} of ${st.blocks * st.bsize} bytes of ${dir} are free. `;
  } catch {
    // unknown; the rest still helps
  }
  let n0Bytes = 0;
  let n0Count = 0;
  let tensorBytes = 0;
  let reserveBytes = 0;
  const others: Array<{ name: string; bytes: number }> = [];
  for (const name of listShm(dir)) {
    let bytes: number;
    try {
      bytes = fs.statSync(path.join(dir, name)).blocks * 512;
    } catch {
      continue; // removed meanwhile
    }
    if (!name.startsWith(OWN_SHM_PREFIX)) others.push({ name, bytes });
    else if (name.endsWith('.n0')) {
      n0Bytes += bytes;
      n0Count++;
    } else if (name.endsWith('_reserve')) reserveBytes += bytes;
    else tensorBytes += bytes;
  }
  others.sort((a, b) => b.bytes - a.bytes);
  const otherBytes = others.reduce((n, o) => n + o.bytes, 0);
  const largest = others
    .slice(0, 3)
    .map((o) => `${o.name} ${o.bytes}`)
    .join(', ');
  return (
    head +
    `This server holds ${n0Bytes + tensorBytes + reserveBytes} bytes: ${n0Bytes} in the n0 segments of its ${n0Count} Python instances ` +
    `(each sized by --backend-config=python,shm-default-byte-size), ${tensorBytes} in tensors of requests in flight ` +
    `and ${reserveBytes} held back for restarting a stub; ` +
    `other files hold ${otherBytes} bytes${largest ? ` (largest: ${largest})` : ''}. ` +
    'Give /dev/shm more room (e.g. docker run --shm-size), send fewer large tensors at once, or, when the n0 segments fill it, ' +
    'lower shm-default-byte-size or the instance count.'
  );
}
