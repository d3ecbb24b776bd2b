/**
 * @module frontends/threads/thread-count
 * The default number of HTTP frontend threads. Each thread adds two hand-offs per request
 * (docs/benchmarks.md, "Frontend threads"); they pay only where the main loop is the limit with
 * cores to spare beside the stubs and the client, which below 8 cores it is not.
 */
import os from 'node:os';

export function defaultFrontendThreads(cores = os.availableParallelism()): number {
  return cores < 8 ? 1 : Math.min(8, Math.floor(cores / 4));
}
