/**
 * @module backends/python/ipc/shm-cleanup
 * Housekeeping of /dev/shm files. Region names start with `tritium_<serverPid>_`, so files left
 * by a crashed server can be recognised and removed at the next start (docs/ipc.md, "Segments").
 */
import fs from 'node:fs';
import path from 'node:path';
import { SHM_DIR } from './shm-layout.js';

const STALE_RE = /^tritium_(\d+)_/;

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
    const m = STALE_RE.exec(f);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid) continue;
    let live = alive.get(pid);
    if (live === undefined) alive.set(pid, (live = pid > 0 && pidAlive(pid)));
    if (!live && unlinkQuiet(path.join(dir, f))) removed.push(f);
  }
  return removed;
}

/** Free bytes of the /dev/shm filesystem, or undefined when it cannot be read. */
export function shmFreeBytes(dir: string = SHM_DIR): number | undefined {
  try {
    const st = fs.statfsSync(dir);
    return st.bavail * st.bsize;
  } catch {
    return undefined;
  }
}
