/**
 * @module frontends/grpc/status
 * Turns anything a handler throws into the status grpc-js sends: a `TritonError` keeps its code
 * (through the core's `grpcStatusOf` table) and its message as the status details, which is
 * what tritonclient shows in `InferenceServerException`.
 */
import type { ServiceError } from '@grpc/grpc-js';
import { Metadata } from '@grpc/grpc-js';
import { asTritonError, grpcStatusOf } from '../../core/errors.js';
import type { GrpcLogger } from './context.js';

export type StatusError = Partial<ServiceError> & { code: number; details: string };

export const UNAVAILABLE = 14;

export const SHUTTING_DOWN = 'GRPC server is shutting down and has stopped accepting new requests.';

export function statusError(code: number, details: string): StatusError {
  const err = new Error(details) as Error & StatusError;
  err.code = code;
  err.details = details;
  err.metadata = new Metadata();
  return err;
}

/** Maps a thrown value to a gRPC status; logs what is not a TritonError (a bug, not a refusal). */
export function toStatusError(err: unknown, logger?: GrpcLogger): StatusError {
  const te = asTritonError(err);
  if (te !== err && logger) logger.error(`gRPC handler failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  return statusError(grpcStatusOf(te.code), te.message);
}
