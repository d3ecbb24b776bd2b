/**
 * @module backends/python/ipc/shm-name
 * The one spelling of the names of this server's shared memory: every region, memfd label and
 * /dev/shm file starts with `tritium_<serverPid>_` (docs/ipc.md, "Segments"). The pid is what
 * lets the next start recognise and remove files a dead server left, and what tells this
 * server's files and memfds from anyone else's. The stub receives its names from Node.
 */
import crypto from 'node:crypto';

/** Where POSIX shared memory lives: the fallback for segments, and clients' regions. */
export const SHM_DIR = '/dev/shm';

const HEAD = 'tritium_';
const OWNER_RE = new RegExp(`^${HEAD}(\\d+)_`);

/** The start of every name this server process creates. */
export const OWN_SHM_PREFIX = `${HEAD}${process.pid}_`;

/** `tritium_<serverPid>_<8 hex random>_<tail>`: a fresh name no earlier one of this server shares. */
export function newShmName(tail: string): string {
  return `${OWN_SHM_PREFIX}${crypto.randomBytes(4).toString('hex')}_${tail}`;
}

/** The server pid a name carries, or undefined for a name that is not a tritium one. */
export function shmOwnerPid(name: string): number | undefined {
  const m = OWNER_RE.exec(name);
  return m ? Number(m[1]) : undefined;
}
