/**
 * @module core/internal-client
 * How code inside the server reaches other models: BLS calls from a Python model
 * (`pb_utils.InferenceRequest.exec`) and the steps of an ensemble. Requests take the same core
 * path as a client's (validation, scheduling, batching, statistics, cancellation), without a
 * frontend and also while the server is still starting (BLS from `initialize`, ensemble warmup).
 */
import type { InferRequest, ResponseSink } from './inference.js';
import type { ModelHandle } from './model-handle.js';

export interface InternalClient {
  /** Runs a request on `request.modelName`; every outcome, lookup errors included, goes to `sink`. */
  infer(request: InferRequest, sink: ResponseSink): void;
  /** The model version a request would reach; throws Triton's lookup errors (unknown, not ready). */
  resolveModel(name: string, version: string): ModelHandle;
  /** Whether that version exists, is loaded and every instance is ready (`pb_utils.is_model_ready`). */
  isModelReady(name: string, version: string): boolean;
}
