/**
 * Benchmark helper: CPU time and resident memory of a server process and of the processes it
 * started (its Python stubs), read from /proc. Linux only.
 *
 * CPU is what the kernel charged to each live process (utime + stime, all threads); a process
 * that exits between two snapshots takes its share with it, so compare snapshots only across a
 * window in which the process tree is stable.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

let ticksPerSecond;

/** sysconf(_SC_CLK_TCK): the unit of the CPU times in /proc/<pid>/stat (100 on Linux). */
export function clockTicks() {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/**
 * The fields of /proc/<pid>/stat that follow the command name, or undefined once the process
 * is gone. The name is cut at the LAST ')' because it may itself hold spaces and parentheses;
 * index 0 is then field 3 (state) of proc(5).
 */
function statFields(pid, file = `/proc/${pid}/stat`) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
}

const PPID = 4 - 3;
const UTIME = 14 - 3;
const STIME = 15 - 3;

/** User + system CPU seconds of `pid` so far (0 once it is gone). */
export function cpuSeconds(pid) {
  const f = statFields(pid);
  return f ? (Number(f[UTIME]) + Number(f[STIME])) / clockTicks() : 0;
}

/** User + system CPU seconds of `pid`'s main thread alone (its event loop), 0 once it is gone. */
export function mainThreadCpuSeconds(pid) {
  const f = statFields(pid, `/proc/${pid}/task/${pid}/stat`);
  return f ? (Number(f[UTIME]) + Number(f[STIME])) / clockTicks() : 0;
}

/** Every live process below `root` (children, grandchildren...), found through their ppid. */
export function descendants(root) {
  const children = new Map();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statFields(name);
    if (!f) continue;
    const ppid = Number(f[PPID]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid).push(Number(name));
  }
  const found = [];
  const queue = [root];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** CPU seconds of `pid` itself (`server`) and summed over its descendants (`children`). */
export function treeCpu(pid) {
  const kids = descendants(pid);
  return { server: cpuSeconds(pid), children: kids.reduce((sum, k) => sum + cpuSeconds(k), 0), processes: kids.length };
}

/** A `<field>: N kB` line of a /proc file of `pid`, in bytes; 0 when the file or line is missing. */
function procKb(pid, file, field) {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/${file}`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** VmRSS of `pid` in bytes (0 once it is gone, or for a kernel thread). */
export function rssBytes(pid) {
  return procKb(pid, 'status', 'VmRSS');
}

/**
 * The proportional set size of `pid` in bytes (0 once it is gone): each page it shares counted
 * as a share. Processes forked from one parent (tritium's stubs, from its fork server) share
 * pages that a sum of their RSS counts once per process.
 */
export function pssBytes(pid) {
  return procKb(pid, 'smaps_rollup', 'Pss');
}

/**
 * Resident memory of `pid` plus all its descendants, in bytes (`bytes`: RSS summed; `pss`: PSS
 * summed, shared pages counted once), and how many processes that is.
 */
export function treeRss(pid) {
  const pids = [pid, ...descendants(pid)];
  return { bytes: pids.reduce((sum, p) => sum + rssBytes(p), 0), pss: pids.reduce((sum, p) => sum + pssBytes(p), 0), processes: pids.length };
}

/** The command line of `pid` as its argv, or [] once it is gone. */
export function cmdline(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/** Voluntary context switches of `pid`'s main thread: how often it went to sleep (NaN once it is gone). */
export function voluntarySwitches(pid) {
  try {
    return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

/**
 * CPU µs per request of the server process and of its descendants (its stubs) between two
 * treeCpu() snapshots `before` and `after`, over `requests` requests.
 */
export function cpuPerRequest(before, after, requests) {
  return {
    serverCpuUs: ((after.server - before.server) / requests) * 1e6,
    stubCpuUs: ((after.children - before.children) / requests) * 1e6,
  };
}

/** SIGKILLs every live process below `root` (for an exit handler: nothing may outlive the run). */
export function killDescendants(root) {
  for (const pid of descendants(root)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
