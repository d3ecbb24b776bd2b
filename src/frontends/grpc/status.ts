/**
 * @module frontends/grpc/status
 * Turns anything a handler throws into the status the call ends with: a `TritonError` keeps its
 * code (through the core's `grpcStatusOf` table) and its message as the status details, which is
 * what tritonclient shows in `InferenceServerException`.
 */
import { asTritonError, grpcStatusOf } from '../../core/errors.js';
import type { GrpcLogger } from './context.js';
import { StatusError } from './transport/status.js';

export { StatusError, GrpcStatus } from './transport/status.js';

export function statusError(code: number, details: string): StatusError {
  return new StatusError(code, details);
}

/** Maps a thrown value to a gRPC status; logs what is not a TritonError (a bug, not a refusal). */
export function toStatusError(err: unknown, logger?: GrpcLogger): StatusError {
  if (err instanceof StatusError) return err;
  const te = asTritonError(err);
  if (te !== err && logger) logger.error(`gRPC handler failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  return new StatusError(grpcStatusOf(te.code), te.message);
}
