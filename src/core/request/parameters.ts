/**
 * @module core/request/parameters
 * Request parameters the server interprets (schedule policy, sequence, output encoding) are
 * read here; the rest are custom parameters handed to the model as `request.parameters()`.
 */
import { Errors } from '../errors.js';
import type { Parameters, ParamValue } from '../inference.js';

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

export function readParameters(params: Parameters): SchedulingParameters {
  const custom: Parameters = {};
  for (const [k, v] of Object.entries(params)) {
    if (!RESERVED.has(k) && !k.startsWith('triton_')) custom[k] = v;
  }
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
    custom,
  };
}
