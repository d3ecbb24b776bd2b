/**
 * @module backends/python/live-stubs
 * Every stub process of this server that has not exited yet (spawned, forked, and the fork
 * servers that fork them), so an abnormal exit of the server can still kill them.
 */

interface Killable {
  kill(signal?: NodeJS.Signals): boolean;
}

const live = new Set<Killable>();

/** Tracks `p` until `forget` is called (on its exit). */
export function trackStub(p: Killable): () => void {
  live.add(p);
  return () => live.delete(p);
}

/**
 * Last resort on an exit path that skips the normal teardown (a signal during start-up, an
 * uncaught error): SIGKILLs every stub still running. Synchronous, so it can run in 'exit'.
 */
export function killAllStubs(): void {
  for (const p of live) {
    try {
      p.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}
