/**
 * @module core/request/parameters
 * Request parameters the server interprets (schedule policy, sequence, output encoding) are
 * read here; the rest are custom parameters handed to the model as `request.parameters()`.
 */
import { Errors } from '../errors.js';
import type { Parameters, ParamValue } from '../inference.js';

/**
 * Sets parameter `key` of `params` as an own property. Keys come from clients, and assigning
 * `__proto__` would call the prototype setter, which drops a primitive value: the parameter
 * would vanish (JSON.parse and protobuf decoding keep it as an own key; so must we).
 */
export function setParameter(params: Parameters, key: string, value: ParamValue): void {
  if (key === '__proto__') Object.defineProperty(params, key, { value, enumerable: true, writable: true, configurable: true });
  else params[key] = value;
}

/** Keys the server consumes; they never reach the model. */
const RESERVED = new Set(['sequence_id', 'sequence_start', 'sequence_end', 'priority', 'timeout', 'binary_data_output', 'headers']);

export interface SchedulingParameters {
  priority: number;
  timeoutUs: number;
  sequenceId: bigint | string;
  sequenceStart: boolean;
  sequenceEnd: boolean;
  /** Parameters for the model. */
  custom: Parameters;
}

function uint(key: string, v: ParamValue | undefined): number {
  if (v === undefined) return 0;
  const n = typeof v === 'bigint' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw Errors.parameterNotNonNegative(key);
  }
  return n;
}

/**
 * What a request without parameters reads as (shared: callers only read it, and may compare
 * with it to skip what parameters would change).
 */
export const NO_PARAMETERS: Readonly<SchedulingParameters> = Object.freeze({
  priority: 0,
  timeoutUs: 0,
  sequenceId: 0n,
  sequenceStart: false,
  sequenceEnd: false,
  custom: Object.freeze({}) as Parameters,
});

/** True when `params` has no own enumerable key (most requests): nothing to read. */
export function hasNoParameters(params: Parameters): boolean {
  for (const _ in params) return false;
  return true;
}

/**
 * The scheduling parameters of a request and its custom ones. Parameters that are neither
 * (`triton_*` flags the frontends read themselves, such as the
 * `triton_enable_empty_final_response` perf_analyzer sends with every gRPC request) read as no
 * parameters at all: the shared NO_PARAMETERS, with no object or key list made per request.
 */
export function readParameters(params: Parameters): Readonly<SchedulingParameters> {
  let custom: Parameters | undefined;
  let reserved = false;
  for (const k in params) {
    if (!Object.hasOwn(params, k)) continue;
    if (RESERVED.has(k)) reserved = true;
    else if (!k.startsWith('triton_')) setParameter((custom ??= {}), k, params[k]!);
  }
  if (!reserved && custom === undefined) return NO_PARAMETERS;
  const sid = params['sequence_id'];
  let sequenceId: bigint | string = 0n;
  if (typeof sid === 'string') sequenceId = sid;
  else if (typeof sid === 'number' || typeof sid === 'bigint') sequenceId = BigInt(sid);
  else if (sid !== undefined) {
    throw Errors.sequenceIdType();
  }
  return {
    priority: uint('priority', params['priority']),
    timeoutUs: uint('timeout', params['timeout']),
    sequenceId,
    sequenceStart: params['sequence_start'] === true,
    sequenceEnd: params['sequence_end'] === true,
    custom: custom ?? NO_PARAMETERS.custom,
  };
}
