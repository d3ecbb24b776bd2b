/**
 * The processes below a server (Linux /proc): its stubs are its children when spawned and its
 * fork server's children when forked (src/backends/python/fork-server.ts), so tests look at
 * every descendant, not only the direct children.
 */
import fs from 'node:fs';

function childrenOf(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return []; // gone
  }
}

/** Every live descendant of `pid`, children first. */
export function descendantsOf(pid: number): number[] {
  const out: number[] = [];
  for (let queue = childrenOf(pid); queue.length > 0; ) {
    const next = queue.shift()!;
    out.push(next);
    queue.push(...childrenOf(next));
  }
  return out;
}

/** The command line of `pid` (arguments NUL-separated), '' once it is gone. */
export function cmdlineOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** The stub processes of server `serverPid` (running stub/main.py), optionally only those whose command line has `part`. */
export function stubPidsOf(serverPid: number, part?: string): number[] {
  return descendantsOf(serverPid).filter((p) => {
    const cmd = cmdlineOf(p);
    return cmd.includes('stub/main.py') && (part === undefined || cmd.includes(part));
  });
}

/** The parent of `pid` (from /proc/<pid>/stat). */
export function parentOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}
