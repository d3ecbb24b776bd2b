/**
 * @module core/errors/grpc
 * Catalogue: reading a gRPC ModelInfer request (parameters, typed contents, raw contents) and
 * writing its response. These conditions exist only on gRPC; texts follow Triton's grpc_server.
 */
import { entry, fixed } from './entry.js';
import { ErrorCode } from './triton-error.js';

const { INVALID_ARG, INTERNAL, UNAVAILABLE } = ErrorCode;
const REJECTED = 'REJECTED' as const;

export const grpc = {
  streamNotRead: entry(
    {
      code: UNAVAILABLE,
      text: 'the client of this ModelStreamInfer stream does not read its responses: {queued} bytes wait to be sent, more than the {limit} bytes a stream may hold. The stream ends and its requests are cancelled.',
      when: "tritium policy: a stream's unread responses pass the per-stream bound (a decoupled model answering faster than its client reads).",
    },
    (queued: number, limit: number) => ({ queued, limit }),
  ),
  parameterTypeSequenceId: fixed({
    code: INVALID_ARG,
    reason: REJECTED,
    text: "invalid value type for 'sequence_id' parameter, expected int64_param or string_param.",
    when: 'sequence_id given as bool, double or uint64 (Triton 2.51 takes only int64_param, read as uint64, and string_param).',
  }),
  parameterTypeBool: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "invalid value type for '{key}' parameter, expected bool_param.",
      when: 'sequence_start, sequence_end or triton_enable_empty_final_response not a bool.',
    },
    (key: string) => ({ key }),
  ),
  parameterTypePriority: fixed({
    code: INVALID_ARG,
    reason: REJECTED,
    text: "invalid value type for 'priority' parameter, expected int64_param or uint64_param.",
    when: 'priority of another type.',
  }),
  parameterPriorityNegative: fixed({
    code: INVALID_ARG,
    reason: REJECTED,
    text: "invalid value for 'priority', expected value >= 0.",
    when: 'priority as a negative int64_param (Triton 2.51).',
  }),
  parameterTypeTimeout: fixed({
    code: INVALID_ARG,
    reason: REJECTED,
    text: "invalid value type for 'timeout' parameter, expected int64_param.",
    when: 'timeout of another type or negative.',
  }),
  parameterUint64: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "unsupported value type for parameter '{key}': uint64_param is not allowed for custom parameters",
      when: 'A custom parameter given as uint64_param.',
    },
    (key: string) => ({ key }),
  ),
  parameterUnset: entry(
    { code: INVALID_ARG, reason: REJECTED, text: "parameter '{key}' has no value set", when: 'A parameter with no parameter_choice.' },
    (key: string) => ({ key }),
  ),
  shmParameterType: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "invalid value type for '{key}' parameter, expected int64_param.",
      when: 'shared_memory_offset / shared_memory_byte_size given as something else than a non-negative integer.',
    },
    (key: string) => ({ key }),
  ),
  shmRegionParameterType: fixed({
    code: INVALID_ARG,
    reason: REJECTED,
    text: "invalid value type for 'shared_memory_region' parameter, expected string_param.",
    when: 'shared_memory_region given as a non-string.',
  }),
  rawContentsMissing: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "unable to find data for input tensor '{input}' for model '{model}' in request.",
      when: "raw_input_contents is used but holds fewer entries than the inputs that are not in shared memory (Triton 2.51's text; entries past the last such input are ignored, as there).",
    },
    (input: string, model: string) => ({ input, model }),
  ),
  rawAndTypedContents: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "contents field must not be specified when using raw_input_contents for '{input}' for model '{model}'",
      when: 'An input has typed contents while raw_input_contents is used.',
    },
    (input: string, model: string) => ({ input, model }),
  ),
  noTypedField: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "{datatype} data for input '{input}' must be sent in raw_input_contents; it has no typed contents field",
      when: 'FP16/BF16 data cannot be sent as typed contents.',
    },
    (datatype: string, input: string) => ({ datatype, input }),
  ),
  wrongTypedField: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "unexpected {field} for input '{input}' with datatype {datatype}, expected data in {expected}",
      when: "Typed contents in a field that does not match the input's datatype.",
    },
    (field: string, input: string, datatype: string, expected: string) => ({ field, input, datatype, expected }),
  ),
  typedElementCount: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "unexpected number of elements for input '{input}' in {field}: expected {expected}, got {got}",
      when: 'Typed contents hold a different number of elements than the shape.',
    },
    (input: string, field: string, expected: number, got: number) => ({ input, field, expected, got }),
  ),
  responseTooLarge: entry(
    {
      code: INVALID_ARG,
      text: "Response has byte size {size} which exceeds gRPC's byte size limit {limit}.",
      when: 'A response would exceed the gRPC message size limit.',
    },
    (size: number, limit: number) => ({ size, limit }),
  ),
  outputShape: entry(
    { code: INTERNAL, text: "output '{output}' has an invalid shape [{shape}]", when: 'A model output has a negative or non-integer dimension.' },
    (output: string, shape: number[]) => ({ output, shape: shape.join(',') }),
  ),
  shuttingDown: fixed({
    code: UNAVAILABLE,
    text: 'GRPC server is shutting down and has stopped accepting new requests.',
    when: 'A call arrives (or is in flight) after the gRPC server began to stop.',
  }),
} as const;
