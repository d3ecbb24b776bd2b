/**
 * @module backends/python/ipc/backing
 * Where the segments of a region live (docs/ipc.md, "Segments"): memfds, unless this host
 * refuses memfd_create (a kernel before 3.17, a seccomp filter) or `TRITIUM_MEMFD=0` asks for
 * /dev/shm files. Decided once per process, at the first question (the server asks at start).
 */
import { loadNative } from './native.js';

export type SegmentBacking = 'memfd' | 'dev-shm';

/** Set to 0 to put segments in /dev/shm files as before memfds (tests of that path, comparisons). */
export const MEMFD_ENV = 'TRITIUM_MEMFD';

let decided: { backing: SegmentBacking; why: string } | undefined;

function decide(): { backing: SegmentBacking; why: string } {
  const env = process.env[MEMFD_ENV]?.trim().toLowerCase();
  if (env === '0' || env === 'false' || env === 'no' || env === 'off') return { backing: 'dev-shm', why: `${MEMFD_ENV}=0` };
  const refused = loadNative().probeMemfd();
  return refused ? { backing: 'dev-shm', why: refused } : { backing: 'memfd', why: '' };
}

/** The backing of every region this process creates. */
export function segmentBacking(): SegmentBacking {
  decided ??= decide();
  return decided.backing;
}

/** One line for the verbose log: which backing, and why not memfd when it is not. */
export function describeSegmentBacking(): string {
  decided ??= decide();
  return decided.backing === 'memfd'
    ? 'Python backend shared memory: memfd segments (no /dev/shm needed)'
    : `Python backend shared memory: files in /dev/shm (memfd not used: ${decided.why})`;
}
