/**
 * @module backends/python/ipc/memory-limit
 * What limits memfd segments: their pages are charged to the memory cgroup of the process that
 * touches them and to the host's memory, not to /dev/shm (docs/ipc.md, "Segments"). Past that
 * limit the kernel does not fail the allocation, it OOM-kills a process (measured: a
 * posix_fallocate of more than the host's memory on a memfd ends in SIGKILL, not ENOMEM), so a
 * segment is refused beforehand when it needs more than is available (`memoryHeadroom`), and
 * the error says what the limit is (`describeMemoryLimit`). Mirrored by stub/tritium_stub/memfd.py.
 */
import fs from 'node:fs';
import path from 'node:path';
import { OWN_SHM_PREFIX } from './shm-name.js';

const CGROUP_ROOT = '/sys/fs/cgroup';
/** cgroup v1 writes "no limit" as a page-rounded 2^63 - 1. */
const V1_NO_LIMIT = 2 ** 62;

export interface MemoryHeadroom {
  /** Bytes a new segment may take now: the least of the host's and every enclosing cgroup's. */
  bytes: number;
  /** Which limit that is, in words, e.g. `memory cgroup /sys/fs/cgroup/x: 1 of 2 bytes in use (memory.max)`. */
  limit: string;
}

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function readNumber(file: string): number | undefined {
  const t = readText(file)?.trim();
  if (t === undefined || !/^\d+$/.test(t)) return undefined;
  return Number(t);
}

/** One field of a `memory.stat` file (0 when absent). */
function statField(dir: string, key: string): number {
  const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(readText(path.join(dir, 'memory.stat')) ?? '');
  return m ? Number(m[1]) : 0;
}

/** The host's MemAvailable (bytes), or undefined when /proc/meminfo cannot be read. */
function hostAvailable(): number | undefined {
  const m = /^MemAvailable:\s+(\d+) kB$/m.exec(readText('/proc/meminfo') ?? '');
  return m ? Number(m[1]) * 1024 : undefined;
}

interface CgroupLimit {
  dir: string;
  limit: number;
  used: number;
  /** Page cache the kernel reclaims before it refuses a charge. */
  reclaimable: number;
  file: string;
}

/**
 * The limited memory cgroups this process is in, innermost first, up to the root of the mounted
 * hierarchy (a container sees its own cgroup as the root; a limit may sit on any ancestor).
 */
function cgroupLimits(procCgroup = '/proc/self/cgroup'): CgroupLimit[] {
  const out: CgroupLimit[] = [];
  for (const line of (readText(procCgroup) ?? '').split('\n')) {
    const [id, controllers, rel] = line.split(':', 3) as [string, string | undefined, string | undefined];
    if (rel === undefined) continue;
    const v2 = id === '0' && controllers === '';
    const v1 = controllers?.split(',').includes('memory');
    if (!v2 && !v1) continue;
    const root = v2 ? CGROUP_ROOT : path.join(CGROUP_ROOT, 'memory');
    // Without a cgroup namespace of its own the path may not exist in this mount: the mount's
    // root is then the nearest thing to our cgroup.
    let dir = path.join(root, rel);
    if (!fs.existsSync(dir)) dir = root;
    for (;;) {
      const file = v2 ? 'memory.max' : 'memory.limit_in_bytes';
      const limit = readNumber(path.join(dir, file));
      const used = readNumber(path.join(dir, v2 ? 'memory.current' : 'memory.usage_in_bytes'));
      if (limit !== undefined && used !== undefined && limit < V1_NO_LIMIT) {
        const reclaimable = statField(dir, v2 ? 'inactive_file' : 'total_inactive_file');
        out.push({ dir, limit, used, reclaimable, file });
      }
      if (dir === root || dir.length <= root.length) break;
      dir = path.dirname(dir);
    }
  }
  return out;
}

/** How much memory a new segment may take now, and what limits it. */
export function memoryHeadroom(): MemoryHeadroom {
  const host = hostAvailable();
  let best: MemoryHeadroom = {
    bytes: host ?? Number.MAX_SAFE_INTEGER,
    limit: host === undefined ? 'no memory limit could be read' : `no memory cgroup limit; the host has ${host} bytes available (MemAvailable)`,
  };
  for (const c of cgroupLimits()) {
    const free = Math.max(0, c.limit - c.used + c.reclaimable);
    if (free < best.bytes) {
      best = { bytes: free, limit: `memory cgroup ${c.dir}: ${c.used} of ${c.limit} bytes in use (${c.file})` };
    }
  }
  return best;
}

/**
 * The error text of a segment that did not fit: what was asked, that memfd pages count against
 * memory (not /dev/shm), the limit and its use, what this server holds, and what helps.
 */
export function describeMemoryLimit(what: string, needed: number, why: string): string {
  const head = memoryHeadroom();
  const held = ownSegmentBytes();
  return (
    `out of memory for shared memory: cannot ${what} for ${needed} bytes of tensor data (${why}). ` +
    'Tensors travel in memfd segments, which are charged to the memory of the server and its stubs (their memory cgroup), ' +
    `not to /dev/shm: ${head.limit}, ${head.bytes} bytes available. ` +
    `This server holds ${held.n0 + held.other} bytes of them: ${held.n0} in the n0 segments of its ${held.n0Count} Python instances ` +
    `(each sized by --backend-config=python,shm-default-byte-size) and ${held.other} in tensors of requests in flight. ` +
    'Raise the memory limit of the container (e.g. docker run --memory, a Kubernetes memory limit), send fewer large tensors at once, ' +
    'or lower shm-default-byte-size or the instance count.'
  );
}

/** Bytes this process's own memfd segments really hold (hollowed pages count for nothing). */
function ownSegmentBytes(): { n0: number; n0Count: number; other: number } {
  const prefix = `/memfd:${OWN_SHM_PREFIX}`;
  const out = { n0: 0, n0Count: 0, other: 0 };
  let fds: string[];
  try {
    fds = fs.readdirSync('/proc/self/fd');
  } catch {
    return out;
  }
  for (const fd of fds) {
    try {
      const link = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (!link.startsWith(prefix)) continue;
      const bytes = fs.fstatSync(Number(fd)).blocks * 512;
      if (link.endsWith('.n0 (deleted)')) {
        out.n0 += bytes;
        out.n0Count++;
      } else out.other += bytes;
    } catch {
      // closed meanwhile
    }
  }
  return out;
}
