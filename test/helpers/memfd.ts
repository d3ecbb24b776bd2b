/**
 * Test helper: the memfd segments a process holds (docs/ipc.md, "Segments"). A memfd has no
 * name in any filesystem; its label shows in /proc/<pid>/fd links and /proc/<pid>/maps as
 * `/memfd:<label> (deleted)`, and stat() through the fd link gives the pages it really holds.
 */
import fs from 'node:fs';
import { descendantsOf } from './processes.js';

const LINK_RE = /^\/memfd:(.*) \(deleted\)$/;

/** Labels starting with `prefix` of the memfds `pid` holds open, with the bytes each holds. */
export function memfdsOf(pid: number, prefix = 'tritium_'): Map<string, number> {
  return memfdStats(pid, prefix, (st) => st.blocks * 512);
}

function memfdStats(pid: number, prefix: string, measure: (st: fs.Stats) => number): Map<string, number> {
  const out = new Map<string, number>();
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out; // gone
  }
  for (const fd of fds) {
    try {
      const label = LINK_RE.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      if (label?.startsWith(prefix)) out.set(label, measure(fs.statSync(`/proc/${pid}/fd/${fd}`)));
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/** Labels starting with `prefix` of the memfds `pid` has mapped (a peer's segments it closed after mapping). */
export function mappedMemfdsOf(pid: number, prefix = 'tritium_'): Set<string> {
  const out = new Set<string>();
  let maps = '';
  try {
    maps = fs.readFileSync(`/proc/${pid}/maps`, 'utf8');
  } catch {
    return out;
  }
  for (const line of maps.split('\n')) {
    const at = line.indexOf('/memfd:');
    if (at < 0) continue;
    const label = LINK_RE.exec(line.slice(at))?.[1];
    if (label?.startsWith(prefix)) out.add(label);
  }
  return out;
}

/**
 * The segments of server `pid` and its stubs, each counted once (a segment may be open in both):
 * memfds either process holds and `/dev/shm` files of the server's prefix, with their size
 * (`'size'`) or the pages they really hold (`'allocated'`), by label.
 */
export function segmentsOf(pid: number, measure: 'size' | 'allocated'): Map<string, number> {
  const prefix = `tritium_${pid}_`;
  const bytes = (st: fs.Stats) => (measure === 'size' ? st.size : st.blocks * 512);
  const held = new Map<string, number>();
  for (const p of [pid, ...descendantsOf(pid)]) for (const [label, b] of memfdStats(p, prefix, bytes)) held.set(label, b);
  for (const f of fs.readdirSync('/dev/shm')) {
    if (!f.startsWith(prefix)) continue;
    try {
      held.set(f, bytes(fs.statSync(`/dev/shm/${f}`)));
    } catch {
      // removed meanwhile
    }
  }
  return held;
}

/** Total bytes of `segmentsOf(pid, measure)`. */
export function segmentBytes(pid: number, measure: 'size' | 'allocated'): number {
  let n = 0;
  for (const b of segmentsOf(pid, measure).values()) n += b;
  return n;
}
