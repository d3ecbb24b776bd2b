/**
 * @module frontends/grpc/params
 * `InferParameter` (a oneof of bool / int64 / string / double / uint64) ⇄ the core's
 * `ParamValue`. 64-bit integers become JS numbers when they are safe integers and stay bigints
 * otherwise, so small values look the same as they do coming from the HTTP frontend.
 */
import { create } from '@bufbuild/protobuf';
import { Errors } from '../../core/errors.js';
import type { ParamValue, Parameters } from '../../core/inference.js';
import { setParameter } from '../../core/request/parameters.js';
import type { InferParameter } from '../../generated/grpc_service_pb.js';
import { InferParameterSchema } from '../../generated/grpc_service_pb.js';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export function int64ToValue(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

/** Any set oneof member as a ParamValue; undefined when nothing is set. */
export function paramValue(p: InferParameter): ParamValue | undefined {
  const c = p.parameterChoice;
  switch (c.case) {
    case 'boolParam':
    case 'stringParam':
    case 'doubleParam':
      return c.value;
    case 'int64Param':
    case 'uint64Param':
      return int64ToValue(c.value);
    default:
      return undefined;
  }
}

export interface RequestParameters {
  parameters: Parameters;
  /** `triton_enable_empty_final_response`: the stream sends a final response with no payload. */
  enableEmptyFinal: boolean;
}

/**
 * Request-level parameters. The keys the server interprets are type-checked (as Triton's gRPC
 * frontend does) and forwarded as they are; `triton_*` keys other than the empty-final switch
 * are refused; custom parameters may be bool, int64, string or double.
 */
export function readRequestParameters(map: { [key: string]: InferParameter }): RequestParameters {
  const parameters: Parameters = {};
  let enableEmptyFinal = false;
  for (const key of Object.keys(map)) {
    const p = map[key]!;
    const c = p.parameterChoice;
    let value: ParamValue;
    switch (key) {
      case 'sequence_id':
        // As Triton 2.51: int64_param (its bits read as uint64) or string_param, nothing else.
        if (c.case === 'int64Param') value = int64ToValue(BigInt.asUintN(64, c.value));
        else if (c.case === 'stringParam') value = c.value;
        else throw Errors.parameterTypeSequenceId();
        break;
      case 'sequence_start':
      case 'sequence_end':
        if (c.case !== 'boolParam') throw Errors.parameterTypeBool(key);
        value = c.value;
        break;
      case 'priority':
        // tritonclient sends uint64_param; other clients send int64_param.
        if (c.case !== 'int64Param' && c.case !== 'uint64Param') throw Errors.parameterTypePriority();
        if (c.value < 0n) throw Errors.parameterPriorityNegative();
        value = int64ToValue(c.value);
        break;
      case 'timeout':
        if (c.case !== 'int64Param' || c.value < 0n) {
          throw Errors.parameterTypeTimeout();
        }
        value = int64ToValue(c.value);
        break;
      case 'triton_enable_empty_final_response':
        if (c.case !== 'boolParam') throw Errors.parameterTypeBool(key);
        enableEmptyFinal = c.value;
        value = c.value;
        break;
      default:
        if (key.startsWith('triton_')) throw Errors.reservedParameter(key);
        if (c.case === 'uint64Param') {
          throw Errors.parameterUint64(key);
        }
        if (c.case === undefined) throw Errors.parameterUnset(key);
        value = paramValue(p)!;
    }
    setParameter(parameters, key, value);
  }
  return { parameters, enableEmptyFinal };
}

/** Tensor-level (input or requested output) parameters: every set value, no checks. */
export function readTensorParameters(map: { [key: string]: InferParameter }): Parameters {
  const out: Parameters = {};
  for (const key of Object.keys(map)) {
    const v = paramValue(map[key]!);
    if (v !== undefined) setParameter(out, key, v);
  }
  return out;
}

/** A response parameter as an InferParameter: integers as int64 (uint64 past int64's range). */
export function toInferParameter(v: ParamValue): InferParameter {
  switch (typeof v) {
    case 'boolean':
      return create(InferParameterSchema, { parameterChoice: { case: 'boolParam', value: v } });
    case 'string':
      return create(InferParameterSchema, { parameterChoice: { case: 'stringParam', value: v } });
    case 'number':
      if (Number.isSafeInteger(v)) return create(InferParameterSchema, { parameterChoice: { case: 'int64Param', value: BigInt(v) } });
      return create(InferParameterSchema, { parameterChoice: { case: 'doubleParam', value: v } });
    case 'bigint':
      if (v > INT64_MAX) return create(InferParameterSchema, { parameterChoice: { case: 'uint64Param', value: v } });
      return create(InferParameterSchema, {
        parameterChoice: { case: 'int64Param', value: v < INT64_MIN ? INT64_MIN : v },
      });
  }
}

export function toInferParameterMap(params: Parameters | undefined): { [key: string]: InferParameter } {
  const out: { [key: string]: InferParameter } = {};
  if (params === undefined) return out;
  for (const key of Object.keys(params)) {
    const p = toInferParameter(params[key]!);
    if (key === '__proto__') Object.defineProperty(out, key, { value: p, enumerable: true, writable: true, configurable: true });
    else out[key] = p;
  }
  return out;
}
