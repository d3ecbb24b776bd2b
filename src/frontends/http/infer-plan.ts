/**
 * @module frontends/http/infer-plan
 * What reading an HTTP `/infer` request yields: the request for the core, and how its response
 * is to encode each output. Both readers (infer-request.ts, infer-header-reader.ts) build these;
 * infer-response.ts encodes by them.
 */
import type { InferRequest } from '../../core/inference.js';
import type { InferResponse } from '../../core/inference.js';
import type { JsonArrayText } from './tensor-json.js';

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
  /**
   * The plan of a repeated request header, shared by all the requests built from it
   * (infer-header-reader.ts): nothing may change it per request. Its responses keep their JSON
   * header in `lastResponse` for the next one of the same form (infer-response.ts).
   */
  repeated?: true;
  lastResponse?: RepeatedResponse;
}

export interface ParsedInferRequest {
  request: InferRequest;
  plan: OutputPlan;
}

/** What encoding a response (infer-response.ts, encodeInferResponse) yields. */
export interface EncodedInferResponse {
  /** The JSON header text. */
  json: string;
  /** Its UTF-8 byte length (the `Inference-Header-Content-Length` value). */
  jsonBytes: number;
  /** Non-empty binary outputs, in output order (views, not copies). */
  blobs: Buffer[];
  blobBytes: number;
  /**
   * Set when some output is large and sent as JSON: the JSON header in order, literal text and
   * array texts to render slice by slice; `json` and `jsonBytes` are then unset (empty, 0).
   */
  pieces?: Array<string | JsonArrayText>;
}

/**
 * A response's JSON header kept on a shared plan (RepeatedResponseHeader in infer-response.ts),
 * for the next response of the same form.
 */
export interface RepeatedResponse {
  /** Whether `response`'s header would be the kept text. */
  matches(response: InferResponse): boolean;
  /** What encoding `response`, which matches(), yields: the kept header and its blobs. */
  encoded(response: InferResponse): EncodedInferResponse;
}
