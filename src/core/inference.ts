/**
 * @module core/inference
 * The request and response objects that travel between frontends, the core and backends. A
 * frontend turns its wire message into an `InferRequest`; the core validates and schedules it;
 * a backend produces `InferResponse`s that go back through the `ResponseSink` the frontend gave.
 */
import type { RequestTrace } from './trace/request-trace.js';
import type { CancelSignal } from './cancellation.js';
import type { TritonError } from './errors.js';
import type { Tensor } from './tensor.js';

/** A request, response or tensor parameter value (KServe `InferParameter`). */
export type ParamValue = string | number | boolean | bigint;
export type Parameters = Record<string, ParamValue>;

export interface RequestedOutput {
  name: string;
  /** Per-output parameters: `binary_data`, `classification`, shared-memory keys. */
  parameters: Parameters;
}

export interface InferRequest {
  modelName: string;
  /** Requested version; '' means the latest ready version. */
  modelVersion: string;
  /** Client request id ('' when none). */
  id: string;
  /**
   * Request parameters exactly as the client sent them, including the ones the server
   * interprets (`priority`, `timeout`, `sequence_id`, `sequence_start`, `sequence_end`,
   * `binary_data_output`); the core strips those before the model sees the rest.
   */
  parameters: Parameters;
  inputs: Tensor[];
  /** Requested outputs; undefined means every output of the model config. */
  outputs?: RequestedOutput[];
  /** Aborted when the client goes away (gRPC cancel, HTTP disconnect). */
  signal?: CancelSignal;
  /**
   * Told the compute phases (ns) of the execution that ran this request once it succeeded, as
   * its model's statistics count them: an ensemble sums its steps' phases into its own
   * statistics this way (docs/protocol-notes.md, "Ensembles"). Never set by frontends.
   */
  onCompute?: (inputNs: bigint, inferNs: bigint, outputNs: bigint) => void;
  /** Set by the frontend when the tracer sampled the request (core/trace/). */
  trace?: RequestTrace;
  /** The number debug trace lines know the request by (core/trace-tags.ts); set only while TRITIUM_TRACE is on. */
  traceNo?: number;
  /**
   * A frontend thread read it before the thread learned that the server is exiting
   * (frontends/threads/core-host.ts): the core admits it while exiting, as on one event loop,
   * where a request read before the signal reached the core in the same turn.
   */
  readBeforeExit?: boolean;
}

export interface InferResponse {
  modelName: string;
  /** The version that served the request, as a decimal string. */
  modelVersion: string;
  id: string;
  parameters?: Parameters;
  outputs: Tensor[];
  /** Set for an error response; outputs are then empty. */
  error?: TritonError;
  /** Last response of its request (always true for non-decoupled models). */
  final: boolean;
  /**
   * The final flag alone, without a response (a decoupled model's `send(flags=FINAL)`):
   * gRPC streams forward it only when the client asked for empty final responses.
   */
  flagsOnly?: boolean;
  /**
   * An answer the core gave while `infer` was still on its stack (a lookup or validation
   * error, before any model). On one thread a frontend tells that by the call stack; a
   * frontend thread (frontends/threads/) gets every response later, so the main thread marks it.
   */
  beforeModel?: boolean;
  /**
   * Output buffers may be views of shared memory that must be handed back: a frontend calls
   * `release()` once it no longer reads them (after the socket write completed).
   */
  release?: () => void;
}

/** Receives every response of one request, in order; the last one has `final: true`. */
export interface ResponseListener {
  onResponse(response: InferResponse): void;
}

/**
 * Where a request's responses go: a function, or a listener object. Frontends pass the record
 * they keep per request anyway, so the request path makes no closure for its answer.
 */
export type ResponseSink = ((response: InferResponse) => void) | ResponseListener;

/** Hands `response` to `sink`, whichever form it has. */
export function deliverTo(sink: ResponseSink, response: InferResponse): void {
  if (typeof sink === 'function') sink(response);
  else sink.onResponse(response);
}

/** Answers `request` on `sink` with `error`: its one final response, without outputs. */
export function deliverError(sink: ResponseSink, request: InferRequest, error: TritonError): void {
  deliverTo(sink, { modelName: request.modelName, modelVersion: request.modelVersion, id: request.id, outputs: [], error, final: true });
}
