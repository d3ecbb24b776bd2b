/**
 * @module core/model/version-drain
 * Retiring a version that no longer takes new requests (unloaded, or replaced by a reload): the
 * requests it already accepted finish, for at most the drain timeout (--exit-timeout-secs);
 * those still queued then fail with a text that says the version was unloaded; then its
 * instances are finalised.
 */
import { Errors } from '../errors.js';
import type { ModelVersion } from './model-version.js';

const POLL_MS = 20;

export async function drainAndUnload(mv: ModelVersion, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (mv.inflight() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, POLL_MS));
  mv.scheduler.stop(Errors.modelUnloading(mv.name, mv.version));
  // Finalisation gets what is left of the budget, and never less than a second.
  await mv.loaded.unload(Math.max(1000, deadline - Date.now()));
}
