/**
 * @module core/errors/triton-error
 * The error type every answer carries: a Triton error code (the same numbers as
 * `TRITONSERVER_Error_Code` and `pb_utils.TritonError`), a message in Triton's words, and a
 * failure reason for the `nv_inference_request_failure` metric. Frontends map the code to an
 * HTTP status or a gRPC status with the two tables below; nothing else decides a status.
 * Instances are built only by catalogue entries (./entry.ts), never by callers.
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
  /** The catalogue entry that built this error (see docs/errors.md). */
  readonly entry: string;

  constructor(code: ErrorCode, message: string, reason: FailureReason, entry: string) {
    super(message);
    this.name = 'TritonError';
    this.code = code;
    this.reason = reason;
    this.entry = entry;
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
