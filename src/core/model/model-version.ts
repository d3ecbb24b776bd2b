/**
 * @module core/model/model-version
 * A loaded, servable model version: its config, its backend instances behind a scheduler, and
 * its statistics. `infer` validates a request against the config and queues it.
 */
import type { ModelConfig } from '../../generated/model_config_pb.js';
import type { LoadedModel } from '../backend.js';
import { asTritonError, Errors, type TritonError } from '../errors.js';
import { deliverTo, type InferRequest, type ResponseSink } from '../inference.js';
import type { ModelHandle, ModelMetadata, TensorSpec } from '../model-handle.js';
import { ResponseCache } from '../cache/response-cache.js';
import { readParameters } from '../request/parameters.js';
import type { Tensor } from '../tensor.js';
import { PendingRequestImpl } from '../request/pending.js';
import { validateRequest } from '../request/validate.js';
import { DefaultScheduler } from '../scheduling/default-scheduler.js';
import { DynamicBatcher } from '../scheduling/dynamic-batcher.js';
import { SequenceBatcher } from '../scheduling/sequence-batcher.js';
import type { RateLimiter } from '../scheduling/rate-limiter.js';
import type { StateSpec } from '../scheduling/sequence-controls.js';
import type { ExecutionTimes, PendingRequest, Scheduler } from '../scheduling/types.js';
import { ModelStats } from '../stats/model-stats.js';
import type { ModelStatistics } from '../stats/types.js';
import { dynamicBatching, inputSpecs, isDecoupled, outputSpecs, sequenceBatching } from './config-view.js';
import type { InferenceObserver } from './observer.js';
import { traceLine, traceTags, traced, tracedError, tracedSince } from '../trace-tags.js';

export class ModelVersion implements ModelHandle {
  readonly name: string;
  readonly version: string;
  readonly maxBatchSize: number;
  readonly decoupled: boolean;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  readonly stats: ModelStats;
  readonly scheduler: Scheduler;
  private readonly platform: string;
  private outstanding = 0;
  private readonly cache: ResponseCache | undefined;
  /** Decoupled models with a first-response histogram take the time of each request's first response. */
  private readonly firstResponse: ((r: PendingRequest, atNs: bigint) => void) | undefined;

  constructor(
    readonly config: ModelConfig,
    private readonly json: Record<string, unknown>,
    versionNumber: number,
    readonly loaded: LoadedModel,
    observer: InferenceObserver,
    labels?: ReadonlyMap<string, readonly string[]>,
    /** The implicit state of a sequence model (core/model/sequence-state.ts). */
    states: StateSpec[] = [],
    /** The server's response cache, if it has one; used when the config enables it. */
    cache?: ResponseCache,
    /** The server's rate limiter, when on (it registered the instances it covers). */
    limiter?: RateLimiter,
    /** `<repo>/<model>`. */
    readonly directory = '',
  ) {
    this.name = config.name;
    this.version = String(versionNumber);
    this.maxBatchSize = config.maxBatchSize;
    this.decoupled = isDecoupled(config);
    this.inputs = inputSpecs(config);
    this.outputs = outputSpecs(config).map((s) => (labels?.has(s.name) ? { ...s, labels: labels.get(s.name)! } : s));
    this.platform = config.platform || config.backend;
    // Decoupled models are refused with response_cache at load (core/config/validate.ts).
    this.cache = config.responseCache?.enable === true && !this.decoupled ? cache : undefined;
    this.stats = new ModelStats(observer.statsListener(this.name, this.version));
    this.firstResponse = this.decoupled && this.stats.tracksFirstResponse ? (r, atNs) => this.stats.recordFirstResponse(r, atNs) : undefined;
    // An ensemble's execution is its steps': Triton traces no compute phases for it, its
    // steps' child traces have them.
    const traceCompute = this.platform !== 'ensemble';
    const onExecution = (batch: PendingRequest[], times: ExecutionTimes, batchSize: number) => {
      this.stats.recordExecution(batch, times, batchSize);
      if (traceCompute) {
        for (const r of batch) {
          const t = r.request.trace;
          if (t === undefined) continue;
          t.add('COMPUTE_START', times.startNs);
          t.add('COMPUTE_INPUT_END', times.inputEndNs);
          t.add('COMPUTE_OUTPUT_START', times.inferEndNs);
          t.add('COMPUTE_END', times.endNs);
        }
      }
    };
    const db = dynamicBatching(config);
    const onDispatch = observer.executing
      ? (i: { name: string }, batch: readonly PendingRequest[]) => observer.executing!(this.name, this.version, i.name, batch)
      : undefined;
    const sb = sequenceBatching(config, states);
    this.scheduler = loaded.createScheduler
      ? loaded.createScheduler(onExecution)
      : sb
        ? new SequenceBatcher(this.name, [...loaded.instances], sb, onExecution, onDispatch, limiter)
        : db
          ? new DynamicBatcher([...loaded.instances], db, onExecution, onDispatch, limiter)
          : new DefaultScheduler([...loaded.instances], onExecution, onDispatch, limiter);
  }

  metadata(): ModelMetadata {
    const shape = (s: TensorSpec) => (this.maxBatchSize > 0 ? [-1, ...s.dims] : [...s.dims]);
    return {
      name: this.name,
      versions: [this.version],
      platform: this.platform,
      inputs: this.inputs.map((s) => ({ name: s.name, datatype: s.datatype, shape: shape(s) })),
      outputs: this.outputs.map((s) => ({ name: s.name, datatype: s.datatype, shape: shape(s) })),
    };
  }

  configJson(): Record<string, unknown> {
    return this.json;
  }

  isReady(): boolean {
    if (this.loaded.isReady) return this.loaded.isReady();
    return this.loaded.instances.every((i) => i.isReady());
  }

  /** At least one instance can take work (an ensemble: every composing model is ready). */
  canServe(): boolean {
    if (this.loaded.isReady) return this.loaded.isReady();
    return this.loaded.instances.some((i) => i.isReady());
  }

  infer(request: InferRequest, sink: ResponseSink): void {
    let pr: PendingRequestImpl;
    try {
      const { batchSize, shapeSignature } = validateRequest(this, request);
      const p = readParameters(request.parameters);
      let to = sink;
      if (this.cache !== undefined) {
        const t0 = process.hrtime.bigint();
        const key = ResponseCache.key(this.name, this.version, request.inputs);
        const lookupNs = process.hrtime.bigint() - t0;
        const hit = this.cache.lookup(key, lookupNs);
        if (hit !== undefined) {
          this.answerFromCache(request, sink, hit, t0, lookupNs);
          return;
        }
        to = this.insertingSink(sink, key, lookupNs);
      }
      pr = new PendingRequestImpl(request, batchSize, shapeSignature, p.priority, p.timeoutUs, this.version, to, this.onComplete, this.firstResponse);
      pr.parameters = p;
    } catch (err) {
      // Like Triton, a request refused by validation never entered the scheduler: it is
      // answered but not counted in statistics.
      const e = asTritonError(err);
      if (traceTags.request) traceLine('request', `${traced(request)}: refused by model ${this.name} version ${this.version}: ${e.message}`);
      deliverTo(sink, { modelName: this.name, modelVersion: this.version, id: request.id, outputs: [], error: e, final: true });
      return;
    }
    if (traceTags.request) {
      traceLine(
        'request',
        `${traced(request)}: accepted by model ${this.name} version ${this.version} (batch size ${pr.batchSize}, priority ${pr.priority}, timeout ${pr.timeoutUs} us${pr.cancelled ? ', already cancelled' : ''})`,
      );
    }
    const trace = request.trace;
    if (trace !== undefined) {
      // Triton's core events of a request (docs/protocol-notes.md, "Trace").
      trace.setModel(this.name, Number(this.version), request.id);
      trace.add('REQUEST_START', pr.arrivalNs);
      trace.add('QUEUE_START', pr.arrivalNs);
      if (trace.level.tensors) for (const t of request.inputs) trace.tensor('TENSOR_QUEUE_INPUT', t);
    }
    if (pr.cancelled) {
      this.outstanding++;
      pr.fail(Errors.cancelled());
      return;
    }
    this.outstanding++;
    this.scheduler.enqueue(pr);
  }

  /**
   * A cache hit: the cached outputs (all of them, whatever was requested, as in Triton) as the
   * final response; the model never runs. Counted as a success and a cache hit only.
   */
  private answerFromCache(request: InferRequest, sink: ResponseSink, outputs: readonly Tensor[], startNs: bigint, lookupNs: bigint): void {
    const trace = request.trace;
    if (trace !== undefined) {
      trace.setModel(this.name, Number(this.version), request.id);
      trace.add('REQUEST_START', startNs);
      trace.add('QUEUE_START', startNs);
    }
    if (traceTags.request) traceLine('request', `${traced(request)}: answered from the response cache by model ${this.name} version ${this.version}`);
    deliverTo(sink, { modelName: this.name, modelVersion: this.version, id: request.id, outputs: outputs.map((t) => ({ ...t })), final: true });
    const endNs = process.hrtime.bigint();
    this.stats.recordCacheHit(startNs, endNs, lookupNs);
    if (trace !== undefined) {
      trace.add('REQUEST_END', endNs);
      trace.done();
    }
  }

  /** A cache miss: the final response's outputs go into the cache (never an error), then to the client. */
  private insertingSink(sink: ResponseSink, key: string, lookupNs: bigint): ResponseSink {
    return (response) => {
      if (response.final) {
        const t0 = process.hrtime.bigint();
        if (response.error === undefined && response.flagsOnly !== true) this.cache!.insert(key, response.outputs);
        this.stats.recordCacheMiss(lookupNs + (process.hrtime.bigint() - t0));
      }
      deliverTo(sink, response);
    };
  }

  /** The completion listener of every request (one function, not one per request). */
  private readonly onComplete = (r: PendingRequest, endNs: bigint, error: TritonError | undefined): void => this.complete(r, endNs, error);

  /** Requests accepted and not yet answered with their final response. */
  inflight(): number {
    return this.outstanding;
  }

  private complete(r: PendingRequest, endNs: bigint, error: TritonError | undefined): void {
    this.outstanding--;
    if (traceTags.request) {
      const responses = (r as PendingRequestImpl).responseCount;
      traceLine(
        'request',
        `${traced(r.request)}: completed (${tracedError(error)}) in ${tracedSince(r.arrivalNs, endNs)}, ${responses} response(s), model ${this.name} version ${this.version}`,
      );
    }
    if (r.request.trace !== undefined) {
      r.request.trace.add('REQUEST_END', endNs);
      r.request.trace.done();
    }
    if (error) this.stats.recordFailure(r, endNs, error.reason);
    else this.stats.recordSuccess(r, endNs);
  }

  statistics(): ModelStatistics {
    return this.stats.snapshot(this.name, this.version);
  }
}
