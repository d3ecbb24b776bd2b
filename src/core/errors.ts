/**
 * @module core/errors
 * Every error tritium answers with is a `TritonError`: a Triton error code (the same numbers as
 * `TRITONSERVER_Error_Code` and `pb_utils.TritonError`), a message in Triton's words, and a
 * failure reason for the `nv_inference_request_failure` metric. Frontends map the code to an
 * HTTP status or a gRPC status with the two tables below; nothing else decides a status.
 */

export enum ErrorCode {
  UNKNOWN = 0,
  INTERNAL = 1,
  NOT_FOUND = 2,
  INVALID_ARG = 3,
  UNAVAILABLE = 4,
  UNSUPPORTED = 5,
  ALREADY_EXISTS = 6,
  CANCELLED = 7,
}

/** Label values of `nv_inference_request_failure{reason=...}`. */
export type FailureReason = 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';

const kTritonError = Symbol.for('tritium.TritonError');

export class TritonError extends Error {
  readonly code: ErrorCode;
  readonly reason: FailureReason;

  constructor(code: ErrorCode, message: string, reason: FailureReason = 'OTHER') {
    super(message);
    this.name = 'TritonError';
    this.code = code;
    this.reason = reason;
  }

  get [kTritonError](): true {
    return true;
  }

  // Brand check instead of prototype identity, so two copies of this module still agree.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[kTritonError] === true;
  }
}

/** HTTP status for a Triton error code (docs/protocol-notes.md, "Error codes and status mapping"). */
export function httpStatusOf(code: ErrorCode): number {
  switch (code) {
    case ErrorCode.INTERNAL:
      return 500;
    case ErrorCode.NOT_FOUND:
      return 404;
    case ErrorCode.UNAVAILABLE:
      return 503;
    case ErrorCode.UNSUPPORTED:
      return 501;
    default:
      return 400;
  }
}

/** gRPC status code number for a Triton error code (docs/protocol-notes.md, "Error codes and status mapping"). */
export function grpcStatusOf(code: ErrorCode): number {
  switch (code) {
    case ErrorCode.UNKNOWN:
      return 2;
    case ErrorCode.INTERNAL:
      return 13;
    case ErrorCode.NOT_FOUND:
      return 5;
    case ErrorCode.INVALID_ARG:
      return 3;
    case ErrorCode.UNAVAILABLE:
      return 14;
    case ErrorCode.UNSUPPORTED:
      return 12;
    case ErrorCode.ALREADY_EXISTS:
      return 6;
    case ErrorCode.CANCELLED:
      return 1;
  }
}

/** Wraps anything thrown into a TritonError (INTERNAL unless it already is one). */
export function asTritonError(err: unknown): TritonError {
  if (err instanceof TritonError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new TritonError(ErrorCode.INTERNAL, message);
}

const invalid = (message: string) => new TritonError(ErrorCode.INVALID_ARG, message, 'REJECTED');

/**
 * The catalogue of errors with Triton's texts. Call sites use these factories rather than
 * spelling messages, so the wording lives in one place.
 */
export const Errors = {
  unknownModel: (m: string) => new TritonError(ErrorCode.NOT_FOUND, `Request for unknown model: '${m}' is not found`),
  noAvailableVersions: (m: string) => new TritonError(ErrorCode.NOT_FOUND, `Request for unknown model: '${m}' has no available versions`),
  unknownVersion: (m: string, v: string) => new TritonError(ErrorCode.NOT_FOUND, `Request for unknown model: '${m}' version ${v} is not found`),
  versionNotReady: (m: string, v: string) => new TritonError(ErrorCode.UNAVAILABLE, `Request for unknown model: '${m}' version ${v} is not at ready state`),
  serverNotReady: () => new TritonError(ErrorCode.UNAVAILABLE, 'Server not ready'),
  badVersionString: (v: string) => invalid(`failed to get model version from specified version string '${v}' (must be an integer)`),
  decoupledHttp: () => new TritonError(ErrorCode.UNSUPPORTED, "HTTP end point doesn't support models with decoupled transaction policy"),
  decoupledGrpc: () => new TritonError(ErrorCode.UNSUPPORTED, "ModelInfer RPC doesn't support models with decoupled transaction policy"),

  // Request validation (core infer_request semantics).
  inputCount: (m: string, expected: string, got: number) => invalid(`expected ${expected} inputs but got ${got} inputs for model '${m}'`),
  unexpectedInput: (m: string, name: string) => invalid(`unexpected inference input '${name}' for model '${m}'`),
  unexpectedOutput: (m: string, name: string) => invalid(`unexpected inference output '${name}' for model '${m}'`),
  duplicateInput: (m: string, name: string) => invalid(`input '${name}' is specified more than once for model '${m}'`),
  dataTypeMismatch: (m: string, name: string, got: string, want: string) =>
    invalid(`inference input '${name}' data-type is '${got}', but model '${m}' expects '${want}'`),
  shapeMismatch: (m: string, name: string, want: number[], got: number[], batching: boolean) =>
    invalid(
      `unexpected shape for input '${name}' for model '${m}'. Expected [${want.join(',')}], got [${got.join(',')}]` +
        (batching
          ? '. NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.'
          : ''),
    ),
  batchSizeMismatch: (m: string, name: string) => invalid(`inference request batch-size does not match other inputs for input '${name}' for model '${m}'`),
  batchTooLarge: (m: string, max: number) => invalid(`inference request batch-size must be <= ${max} for '${m}'`),
  emptyBatchShape: (m: string, name: string) => invalid(`input '${name}' has no batch dimension but model '${m}' supports batching`),
  byteSizeMismatch: (name: string, expected: number, got: number) =>
    invalid(`input byte size mismatch for input '${name}' for model, expected ${expected} bytes, got ${got} bytes`),
  bytesElementCount: (name: string, expected: number, got: number) => invalid(`expected ${expected} string elements for inference input '${name}', got ${got}`),
  bytesMalformed: (name: string) => invalid(`element byte size indicator exceeds the end of the buffer for inference input '${name}'`),
  reservedParameter: (key: string) => invalid(`parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified, got '${key}'`),

  // Scheduling.
  queueFull: () => new TritonError(ErrorCode.UNAVAILABLE, 'Exceeds maximum queue size', 'REJECTED'),
  timeoutExpired: () => new TritonError(ErrorCode.UNAVAILABLE, 'Request timeout expired', 'REJECTED'),
  schedulerStopped: () =>
    new TritonError(ErrorCode.UNAVAILABLE, 'Server is stopping, scheduler for model has stopped accepting new inference requests', 'REJECTED'),
  cancelled: () => new TritonError(ErrorCode.CANCELLED, 'Request was cancelled', 'CANCELED'),

  // Python stubs.
  stubUnhealthy: (instance: string, cause?: string) =>
    new TritonError(ErrorCode.INTERNAL, `Stub process '${instance}' is not healthy.${cause ? ` ${cause}` : ''}`, 'BACKEND'),
  noResponse: (instance: string) =>
    new TritonError(
      ErrorCode.INTERNAL,
      `Python model '${instance}' did not send a response for a request: execute returned None for it and no FINAL response was sent through its response sender.`,
      'BACKEND',
    ),
  senderDropped: (instance: string) =>
    new TritonError(ErrorCode.INTERNAL, `Python model '${instance}' released the response sender of a request without sending the FINAL flag.`, 'BACKEND'),
  // A model's own readiness check, `is_ready()` (docs/protocol-notes.md, "A model's own readiness check"). Triton's texts.
  userNotReady: (instance: string) => new TritonError(ErrorCode.UNAVAILABLE, `Model '${instance}' is not ready (user-defined check failed).`, 'BACKEND'),
  userReadyFailed: (text: string) => new TritonError(ErrorCode.INTERNAL, text, 'BACKEND'),
  userReadyTimeout: () => new TritonError(ErrorCode.UNAVAILABLE, 'Timed out waiting for user-defined is_ready() response', 'BACKEND'),
} as const;
