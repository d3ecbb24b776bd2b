/**
 * @module frontends/http/infer-plan
 * What reading an HTTP `/infer` request yields: the request for the core, and how its response
 * is to encode each output. Both readers (infer-request.ts, infer-header-reader.ts) build these.
 */
import type { InferRequest } from '../../core/inference.js';

/** How one requested output is to be returned. */
export interface OutputChoice {
  binary: boolean;
  /** Top-K classification (0 = off). */
  classification: number;
  /** The output's label lines (from the model, set by the handler), for classification. */
  labels?: readonly string[];
}

/** How the response encodes its outputs. */
export interface OutputPlan {
  /** For outputs the request did not list: `binary_data_output`, or true for raw requests. */
  defaultBinary: boolean;
  /** The outputs the request listed, if it listed any. */
  requested?: Map<string, OutputChoice>;
  /** Some listed output asks for classification (so its labels are needed). */
  classification?: boolean;
}

export interface ParsedInferRequest {
  request: InferRequest;
  plan: OutputPlan;
}
