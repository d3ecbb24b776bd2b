/**
 * @module cli/node-flags
 * The V8 flags the server runs with. Node reads them only when it starts, so bin/tritium.js
 * restarts the process once with those missing, before it has loaded or opened anything: an
 * execve(2) through the addon, which keeps the pid, the parent and stdio. Measured on add_sub
 * under a steady load (docs/benchmarks.md, "Garbage collection and the young generation"):
 * - `--max-semi-space-size=4`: V8 otherwise doubles the young generation up to 32 MiB while
 *   the load lasts, 22 MiB more of the server's memory for fewer scavenges.
 * - `--no-parallel-scavenge`: a scavenge here keeps a few tens of KiB alive; done by the main
 *   thread alone it pauses it half as long as with V8's helper threads, which it does not wake.
 * A flag the operator gave (node's arguments or NODE_OPTIONS, either spelling, negated or not)
 * is theirs; the restart adds only the others. With a debugger's port open there is no restart,
 * which would open a second one.
 */
import inspector from 'node:inspector';
import { loadNative } from '../backends/python/ipc/native.js';

export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--no-parallel-scavenge'];

/** Set in the restarted process's environment only, and taken out of it at once. */
const RESTARTED = 'TRITIUM_NODE_FLAGS_RESTART';

/** `--no-parallel_scavenge=x` → `parallel-scavenge`: what a flag sets, however it is spelled. */
function flagSubject(flag: string): string {
  return flag.replace(/^--?/, '').replace(/=.*$/s, '').replace(/_/g, '-').replace(/^no-/, '');
}

/** The server's flags that neither Node's own arguments nor NODE_OPTIONS set. */
export function missingNodeFlags(execArgv: readonly string[], nodeOptions = ''): string[] {
  const given = new Set([...execArgv, ...nodeOptions.split(/\s+/)].filter((f) => f.startsWith('-')).map(flagSubject));
  return SERVER_NODE_FLAGS.filter((f) => !given.has(flagSubject(f)));
}

/** Restarts this process with the missing flags; returns where it does not (nothing missing, a debugger, a failed exec). */
export function restartWithNodeFlags(): void {
  if (process.env[RESTARTED] !== undefined) {
    delete process.env[RESTARTED];
    return;
  }
  // A debugger's port is open already (from node's arguments or NODE_OPTIONS): the restarted
  // process would open another, and a client would be left holding the first.
  if (inspector.url() !== undefined) return;
  const missing = missingNodeFlags(process.execArgv, process.env['NODE_OPTIONS']);
  if (missing.length === 0) return;
  // The environment goes as it is (process.env writes through to it), with the marker.
  process.env[RESTARTED] = '1';
  try {
    loadNative().execve(process.execPath, [process.argv0, ...missing, ...process.execArgv, ...process.argv.slice(1)]);
  } catch {
    // No addon, or the exec failed (it changes nothing then): serve with Node's defaults.
    delete process.env[RESTARTED];
  }
}
