/**
 * @module core/stats/model-stats
 * Statistics of one model version with Triton's accounting (docs/protocol-notes.md, "Statistics"):
 *
 *   per request  (final response released)   success, queue, compute_* (count +1 each;
 *                                             compute ns = the batch's phase durations),
 *                                             inference_count += size(r)
 *   per request  (failed)                     fail only
 *   per execution                             execution_count, batch_stats[Σ size(r)],
 *                                             last_inference
 *
 * A request's compute phases belong to the execution that ran it, but the two events arrive in
 * either order: a non-decoupled model releases its responses before `execute()` resolves
 * (success, then execution), a decoupled one (or a response held back by preserve_ordering)
 * finishes afterwards (execution, then success). Whichever comes second adds the compute
 * durations, matched through two weak maps, so the three compute counts always equal the
 * success count of executed requests.
 *
 * A request's end is the later of "its final response went out" and "the execution that ran it
 * ended". Triton releases (and times) a request only after its batch's execution ended, so its
 * request duration always covers queue + compute_input + compute_infer + compute_output, and
 * perf_analyzer's "overhead" (request − queue − compute) is the time outside the scheduler and
 * the backend. Here a non-decoupled response goes out before the batch's last response is
 * written, so when the execution is recorded after the success, the difference is added.
 *
 * Everything is bigint: cumulative nanoseconds pass 2^53 on long-running servers.
 */
import type { FailureReason } from '../errors.js';
import type { ExecutionTimes, PendingRequest } from '../scheduling/types.js';
import type { BatchStats, ModelStatistics, StatDuration } from './types.js';

/** Receives the same increments as the statistics (used for Prometheus metrics). */
export interface StatsListener {
  /** A request succeeded: `inferences` = its batch size; durations in ns. */
  onSuccess(inferences: number, requestNs: bigint, queueNs: bigint): void;
  /**
   * The compute phases of one successful request (its batch's durations), and `extraRequestNs`:
   * what its request duration grows by because its execution ended after its response (see the
   * module comment; 0 when the execution ended first). `requestNs` is the duration `onSuccess`
   * reported, so `requestNs + extraRequestNs` is the request's whole duration.
   */
  onCompute(inputNs: bigint, inferNs: bigint, outputNs: bigint, extraRequestNs: bigint, requestNs: bigint): void;
  onFailure(reason: FailureReason, requestNs: bigint): void;
  onExecution(batchSize: number): void;
  /**
   * Time from a request's arrival to its first response (decoupled models); only listeners
   * that define it are told, and only then do requests take the time of their first response.
   */
  onFirstResponse?(ns: bigint): void;
  /** A response-cache lookup hit (the lookup's ns) or missed (lookup and insertion ns). */
  onCache?(hit: boolean, ns: bigint): void;
}

interface Phases {
  input: bigint;
  infer: bigint;
  output: bigint;
}

interface BatchBucket {
  count: bigint;
  input: bigint;
  infer: bigint;
  output: bigint;
}

const span = (from: bigint, to: bigint): bigint => (to > from ? to - from : 0n);

/** Where a number total is folded into its bigint: sums stay exact integers below 2^53. */
const FOLD = 2 ** 52;

/**
 * A nanosecond total: a number while it is exact, folded into a bigint before it could lose
 * precision, so that adding a request's durations allocates nothing.
 */
class NsTotal {
  private big = 0n;
  private small = 0;

  add(ns: bigint): void {
    if (ns >= FOLD_BIG) {
      this.big += ns;
      return;
    }
    this.small += Number(ns);
    if (this.small >= FOLD) {
      this.big += BigInt(this.small);
      this.small = 0;
    }
  }

  get value(): bigint {
    return this.big + BigInt(this.small);
  }
}
const FOLD_BIG = BigInt(FOLD);

export class ModelStats {
  // Counts are numbers (exact far beyond any server's life), durations NsTotals: per request
  // nothing here allocates. Both become bigints in snapshot().
  private successCount = 0;
  private readonly successNs = new NsTotal();
  private failCount = 0;
  private readonly failNs = new NsTotal();
  private readonly queueNs = new NsTotal();
  private computeCount = 0;
  private readonly inputNs = new NsTotal();
  private readonly inferNs = new NsTotal();
  private readonly outputNs = new NsTotal();
  private inferenceCount = 0;
  private executionCount = 0;
  private lastInferenceMs = 0;
  private readonly batches = new Map<number, BatchBucket>();
  private cacheHitCount = 0;
  private readonly cacheHitNs = new NsTotal();
  private cacheMissCount = 0;
  private readonly cacheMissNs = new NsTotal();

  // A request between its two events keeps what the second needs on itself (no map):
  // `statsEndNs`, succeeded (at that end time) and waiting for its execution to be recorded;
  // `statsPhases`, executed and not finished yet (decoupled / ordered), phases to add at success.

  constructor(private readonly listener?: StatsListener) {}

  /** The final response of `req` was released at `endNs` (monotonic, like `arrivalNs`). */
  recordSuccess(req: PendingRequest, endNs: bigint): void {
    const requestNs = span(req.arrivalNs, endNs);
    const queueNs = req.queueEndNs === undefined ? 0n : span(req.arrivalNs, req.queueEndNs);
    const inferences = Math.max(req.batchSize, 1);
    this.successCount += 1;
    this.successNs.add(requestNs);
    this.queueNs.add(queueNs);
    this.inferenceCount += inferences;
    this.listener?.onSuccess(inferences, requestNs, queueNs);

    const phases = req.statsPhases as Phases | undefined;
    if (phases !== undefined) {
      req.statsPhases = undefined;
      this.addCompute(req, phases, 0n, requestNs);
    } else {
      req.statsEndNs = endNs;
    }
  }

  /**
   * A request answered from the response cache: a success (its whole time, the time before the
   * lookup as queue time) and a cache hit (the lookup); no inference, execution or compute.
   */
  recordCacheHit(startNs: bigint, endNs: bigint, lookupNs: bigint): void {
    const requestNs = span(startNs, endNs);
    this.successCount += 1;
    this.successNs.add(requestNs);
    this.cacheHitCount += 1;
    this.cacheHitNs.add(lookupNs);
    this.listener?.onSuccess(0, requestNs, 0n);
    this.listener?.onCache?.(true, lookupNs);
  }

  /** A request the cache did not have: its lookup and its insertion (`ns`). */
  recordCacheMiss(ns: bigint): void {
    this.cacheMissCount += 1;
    this.cacheMissNs.add(ns);
    this.listener?.onCache?.(false, ns);
  }

  /** `req` ended with an error at `endNs`. */
  recordFailure(req: PendingRequest, endNs: bigint, reason: FailureReason = 'OTHER'): void {
    const requestNs = span(req.arrivalNs, endNs);
    this.failCount += 1;
    this.failNs.add(requestNs);
    if (req.statsPhases !== undefined) req.statsPhases = undefined;
    this.listener?.onFailure(reason, requestNs);
  }

  /** One execution of `batch` (the scheduler's observer); `batchSize` = Σ size(r). */
  recordExecution(batch: readonly PendingRequest[], times: ExecutionTimes, batchSize: number): void {
    const phases: Phases = {
      input: span(times.startNs, times.inputEndNs),
      infer: span(times.inputEndNs, times.inferEndNs),
      output: span(times.inferEndNs, times.endNs),
    };
    this.executionCount += 1;
    const ms = Date.now();
    if (ms > this.lastInferenceMs) this.lastInferenceMs = ms;

    let bucket = this.batches.get(batchSize);
    if (bucket === undefined) {
      bucket = { count: 0n, input: 0n, infer: 0n, output: 0n };
      this.batches.set(batchSize, bucket);
    }
    bucket.count += 1n;
    bucket.input += phases.input;
    bucket.infer += phases.infer;
    bucket.output += phases.output;
    this.listener?.onExecution(batchSize);

    for (let i = 0; i < batch.length; i++) {
      const req = batch[i]!;
      const end = req.statsEndNs;
      if (end !== undefined) {
        req.statsEndNs = undefined;
        // Request end moves from `end` to the execution's end (never before the arrival).
        const extra = times.endNs > end ? span(req.arrivalNs, times.endNs) - span(req.arrivalNs, end) : 0n;
        if (extra > 0n) this.successNs.add(extra);
        this.addCompute(req, phases, extra, span(req.arrivalNs, end));
      } else if (!req.done) {
        req.statsPhases = phases;
      }
      // done and not awaiting: it failed; failures carry no compute time.
    }
  }

  snapshot(name: string, version: string): ModelStatistics {
    const d = (count: bigint, ns: bigint): StatDuration => ({ count, ns });
    const batch_stats: BatchStats[] = [...this.batches.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([size, b]) => ({
        batch_size: BigInt(size),
        compute_input: d(b.count, b.input),
        compute_infer: d(b.count, b.infer),
        compute_output: d(b.count, b.output),
      }));
    const successCount = BigInt(this.successCount);
    const computeCount = BigInt(this.computeCount);
    return {
      name,
      version,
      last_inference: BigInt(this.lastInferenceMs),
      inference_count: BigInt(this.inferenceCount),
      execution_count: BigInt(this.executionCount),
      inference_stats: {
        success: d(successCount, this.successNs.value),
        fail: d(BigInt(this.failCount), this.failNs.value),
        queue: d(successCount, this.queueNs.value),
        compute_input: d(computeCount, this.inputNs.value),
        compute_infer: d(computeCount, this.inferNs.value),
        compute_output: d(computeCount, this.outputNs.value),
        cache_hit: d(BigInt(this.cacheHitCount), this.cacheHitNs.value),
        cache_miss: d(BigInt(this.cacheMissCount), this.cacheMissNs.value),
      },
      response_stats: {},
      batch_stats,
      memory_usage: [],
    };
  }

  /** Whether `recordFirstResponse` is worth calling (a listener takes it). */
  get tracksFirstResponse(): boolean {
    return this.listener?.onFirstResponse !== undefined;
  }

  /** The first response of `req` went out at `atNs`. */
  recordFirstResponse(req: PendingRequest, atNs: bigint): void {
    this.listener?.onFirstResponse?.(span(req.arrivalNs, atNs));
  }

  private addCompute(req: PendingRequest, p: Phases, extraRequestNs: bigint, requestNs: bigint): void {
    req.request.onCompute?.(p.input, p.infer, p.output);
    this.computeCount += 1;
    this.inputNs.add(p.input);
    this.inferNs.add(p.infer);
    this.outputNs.add(p.output);
    this.listener?.onCompute(p.input, p.infer, p.output, extraRequestNs, requestNs);
  }
}
