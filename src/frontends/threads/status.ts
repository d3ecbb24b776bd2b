/**
 * @module frontends/threads/status
 * Two words every frontend thread reads on each request without asking the main thread: a
 * counter bumped whenever a model version loads or unloads (a thread's cached model lookups
 * are good until it moves), and whether any trace setting is on (only then does a thread ask
 * the main thread to sample a request); and the numbers TRITIUM_TRACE lines give requests.
 */
const MODELS = 0;
const TRACING = 1;
/** The last request number TRITIUM_TRACE lines gave (core/trace-tags.ts), for every thread. */
const TRACE_NO = 2;

export class FrontendStatus {
  private readonly words: Int32Array;

  /** @param memory this server's status words; omit to create them (main thread) */
  constructor(readonly memory: SharedArrayBuffer = new SharedArrayBuffer(12)) {
    this.words = new Int32Array(memory);
  }

  /** The word request numbers of debug trace lines come from (TraceThread.numbers). */
  get traceNumbers(): Int32Array {
    return this.words.subarray(TRACE_NO, TRACE_NO + 1);
  }

  modelsChanged(): void {
    Atomics.add(this.words, MODELS, 1);
  }

  get modelsGeneration(): number {
    return Atomics.load(this.words, MODELS);
  }

  setTracing(on: boolean): void {
    Atomics.store(this.words, TRACING, on ? 1 : 0);
  }

  get tracing(): boolean {
    return Atomics.load(this.words, TRACING) === 1;
  }
}
