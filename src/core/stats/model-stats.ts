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

export class ModelStats {
  private successCount = 0n;
  private successNs = 0n;
  private failCount = 0n;
  private failNs = 0n;
  private queueNs = 0n;
  private computeCount = 0n;
  private inputNs = 0n;
  private inferNs = 0n;
  private outputNs = 0n;
  private inferenceCount = 0n;
  private executionCount = 0n;
  private lastInferenceMs = 0n;
  private readonly batches = new Map<number, BatchBucket>();

  /** Succeeded (at the mapped end time), waiting for their execution to be recorded. */
  private readonly awaitingExecution = new WeakMap<PendingRequest, bigint>();
  /** Executed, not finished yet (decoupled / ordered): phases to add when they succeed. */
  private readonly awaitingSuccess = new WeakMap<PendingRequest, Phases>();

  constructor(private readonly listener?: StatsListener) {}

  /** The final response of `req` was released at `endNs` (monotonic, like `arrivalNs`). */
  recordSuccess(req: PendingRequest, endNs: bigint): void {
    const requestNs = span(req.arrivalNs, endNs);
    const queueNs = req.queueEndNs === undefined ? 0n : span(req.arrivalNs, req.queueEndNs);
    const inferences = Math.max(req.batchSize, 1);
    this.successCount += 1n;
    this.successNs += requestNs;
    this.queueNs += queueNs;
    this.inferenceCount += BigInt(inferences);
    this.listener?.onSuccess(inferences, requestNs, queueNs);

    const phases = this.awaitingSuccess.get(req);
    if (phases !== undefined) {
      this.awaitingSuccess.delete(req);
      this.addCompute(req, phases, 0n, requestNs);
    } else {
      this.awaitingExecution.set(req, endNs);
    }
  }

  /** `req` ended with an error at `endNs`. */
  recordFailure(req: PendingRequest, endNs: bigint, reason: FailureReason = 'OTHER'): void {
    const requestNs = span(req.arrivalNs, endNs);
    this.failCount += 1n;
    this.failNs += requestNs;
    this.awaitingSuccess.delete(req);
    this.listener?.onFailure(reason, requestNs);
  }

  /** One execution of `batch` (the scheduler's observer); `batchSize` = Σ size(r). */
  recordExecution(batch: readonly PendingRequest[], times: ExecutionTimes, batchSize: number): void {
    const phases: Phases = {
      input: span(times.startNs, times.inputEndNs),
      infer: span(times.inputEndNs, times.inferEndNs),
      output: span(times.inferEndNs, times.endNs),
    };
    this.executionCount += 1n;
    const ms = BigInt(Date.now());
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

    for (const req of batch) {
      const end = this.awaitingExecution.get(req);
      if (end !== undefined) {
        this.awaitingExecution.delete(req);
        // Request end moves from `end` to the execution's end (never before the arrival).
        const extra = times.endNs > end ? span(req.arrivalNs, times.endNs) - span(req.arrivalNs, end) : 0n;
        this.successNs += extra;
        this.addCompute(req, phases, extra, span(req.arrivalNs, end));
      } else if (!req.done) {
        this.awaitingSuccess.set(req, phases);
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
    return {
      name,
      version,
      last_inference: this.lastInferenceMs,
      inference_count: this.inferenceCount,
      execution_count: this.executionCount,
      inference_stats: {
        success: d(this.successCount, this.successNs),
        fail: d(this.failCount, this.failNs),
        queue: d(this.successCount, this.queueNs),
        compute_input: d(this.computeCount, this.inputNs),
        compute_infer: d(this.computeCount, this.inferNs),
        compute_output: d(this.computeCount, this.outputNs),
        cache_hit: d(0n, 0n),
        cache_miss: d(0n, 0n),
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
    this.computeCount += 1n;
    this.inputNs += p.input;
    this.inferNs += p.infer;
    this.outputNs += p.output;
    this.listener?.onCompute(p.input, p.infer, p.output, extraRequestNs, requestNs);
  }
}
