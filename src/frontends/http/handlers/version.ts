/**
 * @module frontends/http/handlers/version
 * The version path segment. The router only lets digits through; what is left to refuse is a
 * number that does not fit Triton's int64.
 */
import { Errors } from '../../../core/errors.js';

const INT64_MAX = 9223372036854775807n;

/** Normalised version string ('' = latest), e.g. "007" → "7". @throws TritonError INVALID_ARG */
export function checkVersion(version: string): string {
  if (version === '') return '';
  if (version.length > 19 || BigInt(version) > INT64_MAX) throw Errors.badVersionString(version);
  return version.length > 1 && version.startsWith('0') ? BigInt(version).toString() : version;
}
