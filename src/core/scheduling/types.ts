/**
 * @module core/scheduling/types
 * The contract between the schedulers (default FIFO, dynamic batcher) and model instances.
 *
 *   frontend ─► core.infer ─► validate ─► PendingRequest ─► Scheduler ─► ExecutionInstance.execute(batch)
 *                                                                              │
 *                      sink ◄── PendingRequest.respond(final) ◄────────────────┘
 */
import type { TritonError } from '../errors.js';
import type { InferRequest, InferResponse } from '../inference.js';
import type { Tensor } from '../tensor.js';
import type { SchedulingParameters } from '../request/parameters.js';

/** Monotonic nanoseconds (process.hrtime.bigint()). */
export type Nanos = bigint;

/** What the sequence batcher tells the backend about one execution of a sequence's request. */
export interface SequenceTag {
  /** The correlation id (0 or '' for a filler). */
  id: bigint | string;
  /** START = 1, END = 2, as `request.flags()` gives them. */
  flags: number;
  /**
   * Where the backend writes the sequence's implicit state outputs, by state input name
   * (undefined: the model has no state, or the request is a filler).
   */
  state?: Map<string, Tensor>;
}

export interface PendingRequest {
  readonly request: InferRequest;
  /** size(r): the request's first dimension when the model batches, else 1. */
  readonly batchSize: number;
  /**
   * Requests with different signatures never share a batch: the shapes of inputs with a
   * variable dimension (and no allow_ragged_batch) plus which optional inputs are present.
   */
  readonly shapeSignature: string;
  /** Priority level after defaulting (0 when the model has no priority levels). */
  readonly priority: number;
  /** Per-request timeout in microseconds from the `timeout` parameter (0 = none). */
  readonly timeoutUs: number;
  /**
   * The request's parameters as the model version read them when it accepted the request, so
   * that a backend does not read them again; absent on requests the core makes itself
   * (warmup samples, sequence fillers), whose backend reads `request.parameters`.
   */
  readonly parameters?: Readonly<SchedulingParameters>;
  /** When the core accepted the request. */
  readonly arrivalNs: Nanos;
  /** Set by the scheduler when the request leaves the queue for an instance. */
  queueEndNs?: Nanos;
  /**
   * @internal Kept by the model's statistics (core/stats/model-stats.ts) between its two
   * events: when its final response went out (while its execution is not recorded yet), or its
   * execution's phases (while it has not finished yet).
   */
  statsEndNs?: Nanos;
  statsPhases?: object;
  /**
   * Set by the sequence batcher: the correlation id and START/END flags the model sees on this
   * execution (`request.correlation_id()`, `request.flags()`), instead of the request's
   * parameters (a rescheduled iteration has no flags; an iterative sequence may get its id).
   */
  sequence?: SequenceTag;
  /**
   * Set by the sequence batcher of an `iterative_sequence` model: the backend calls it when
   * the model released the request with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, before the
   * execution is reported done; the request goes back to its sequence's slot.
   */
  reschedule?: () => void;
  /** True once the client cancelled (request.signal aborted). */
  readonly cancelled: boolean;
  /** True once a final response (or error) was delivered. */
  readonly done: boolean;
  /** Delivers a response; the final one closes the request and records its statistics. */
  respond(response: InferResponse): void;
  /** Closes the request with an error (a final error response). */
  fail(error: TritonError): void;
}

/** Timestamps of one execution, for compute_input / compute_infer / compute_output. */
export interface ExecutionTimes {
  startNs: Nanos;
  /** Inputs copied to where the model reads them. */
  inputEndNs: Nanos;
  /** The model returned; outputs available. */
  inferEndNs: Nanos;
  /** Responses handed back. */
  endNs: Nanos;
  /**
   * How long the instance itself worked on the batch, ns, where it can tell: a stub's own
   * clock, without its wake-up, the rings or Node's delay in reading the answer, which
   * `inferEndNs - startNs` holds. The pool judges how deep to pipeline on it.
   */
  ownNs?: number;
}

/** Told once when an instance's execution of a batch is over (ExecutionInstance.run). */
export interface ExecutionListener {
  executed(times: ExecutionTimes): void;
}

export interface ExecutionInstance {
  readonly name: string;
  /** False while the instance is starting, restarting or dead. */
  isReady(): boolean;
  /**
   * Runs one batch (requests in queue order). Resolves when the model's execute returned and
   * the return-path responses were delivered through each request's respond()/fail();
   * decoupled models may keep responding afterwards. Never rejects: failures are delivered
   * per request.
   */
  execute(batch: PendingRequest[]): Promise<ExecutionTimes>;
  /**
   * Optional; the schedulers use it instead of execute() when present. Runs one batch as
   * execute() does, but tells `done` once the execution is over instead of resolving a
   * promise: no promise, reaction or closure per batch on the request path (the Python
   * backend's stubs have it). `done` is never told before run() returned.
   */
  run?(batch: PendingRequest[], done: ExecutionListener): void;
  /**
   * How many batches the instance accepts before the first is answered (default 1). Above 1
   * the next batch waits in the instance's own queue (a stub's ring) instead of the
   * scheduler's, so the instance never idles between executions; the instance still runs one
   * execution at a time, and reports the wait as queue time (`queueEndNs`).
   */
  readonly pipelineDepth?: number;
}

export interface Scheduler {
  /** Queues a request or fails it at once (queue full, stopping). */
  enqueue(request: PendingRequest): void;
  /** Requests received but not yet handed to an instance (nv_inference_pending_request_count). */
  pendingCount(): number;
  /** Instances changed readiness (a restart finished): try to dispatch again. */
  kick(): void;
  /**
   * An instance died or is being restarted: whatever the scheduler bound to it (a sequence's
   * state) is gone. Only schedulers that bind work to an instance need it.
   */
  instanceDown?(instance: ExecutionInstance, why: string): void;
  /**
   * Stops accepting; queued requests fail with `error` (default: Triton's scheduler-stopped
   * error, the shutdown case).
   */
  stop(error?: TritonError): void;
  /**
   * Runs a request outside the statistics: warmup of a model without instances of its own (an
   * ensemble), which warms through its scheduler (core/model/warmup.ts).
   */
  runUncounted?(request: PendingRequest): void;
}

/** Called once per execution so statistics and metrics can account it. */
export type ExecutionObserver = (batch: PendingRequest[], times: ExecutionTimes, batchSize: number) => void;

/** Told when a batch is handed to an instance, before it runs (the verbose `executing` log line). */
export type DispatchObserver = (instance: ExecutionInstance, batch: readonly PendingRequest[]) => void;
