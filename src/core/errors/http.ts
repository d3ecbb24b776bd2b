/**
 * @module core/errors/http
 * Catalogue: reading an HTTP/REST request (body, JSON, binary tensor data) and writing its
 * response. These conditions exist only on HTTP; their texts are Triton's http_server texts.
 */
import { entry, fixed } from './entry.js';
import { ErrorCode, type FailureReason, type TritonError } from './triton-error.js';

const { INVALID_ARG, UNSUPPORTED, INTERNAL, CANCELLED } = ErrorCode;
const REJECTED = 'REJECTED' as const;

export const http = {
  bodyTooLarge: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: '{what} exceeds the maximum allowed value of {limit} bytes. Use --http-max-input-size to increase the limit.',
      when: "A body (or its decompressed form: {what} is then 'Decompressed request size') passes --http-max-input-size.",
    },
    (size: number | undefined, limit: number) => ({
      what: size === undefined ? 'Decompressed request size' : `Request size of ${size} bytes`,
      limit,
    }),
  ),
  jsonHeaderTooLarge: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: 'Request JSON size of {size} bytes exceeds the maximum allowed value of {limit} bytes. Use --http-max-input-size to increase the limit.',
      when: 'The JSON header named by Inference-Header-Content-Length passes --http-max-input-size (the binary data after it does not count).',
    },
    (size: number, limit: number) => ({ size, limit }),
  ),
  bodyOverMemory: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: 'Request size of {size} bytes exceeds the {capacity} bytes tritium may hold for HTTP request bodies at once. Use --http-max-body-memory to increase it.',
      when: 'A body (its Content-Length, or a chunked body as it arrives) is larger than all the memory --http-max-body-memory allows request bodies.',
    },
    (size: number, capacity: number) => ({ size, capacity }),
  ),
  unsupportedCompression: fixed({
    code: UNSUPPORTED,
    reason: REJECTED,
    text: 'Unsupported compression type',
    when: 'A Content-Encoding other than gzip/deflate.',
  }),
  decompressFailed: entry(
    { code: INVALID_ARG, reason: REJECTED, text: 'failed to decompress the request body ({encoding}): {cause}', when: 'A gzip/deflate body is corrupt.' },
    (encoding: string, cause: string) => ({ encoding, cause }),
  ),
  malformedBody: entry(
    { code: INVALID_ARG, reason: REJECTED, text: 'malformed request body: {cause}', when: 'A chunked body breaks HTTP/1.1 framing.' },
    (cause: string) => ({ cause }),
  ),
  clientClosed: fixed({ code: CANCELLED, reason: 'CANCELED', text: 'client closed the connection', when: 'The connection closes before the body is read.' }),
  jsonParse: entry(
    { code: INVALID_ARG, reason: REJECTED, text: 'failed to parse the request JSON buffer: {detail}', when: 'The JSON of a request does not parse.' },
    (detail: string) => ({ detail }),
  ),
  shmRegisterFieldMissing: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "Shared memory register request has no '{field}' field",
      when: 'A system shared-memory register body without `key` or `byte_size`.',
    },
    (field: 'key' | 'byte_size') => ({ field }),
  ),
  jsonNotString: fixed({
    code: INTERNAL,
    text: 'attempt to access JSON non-string as string',
    when: 'A control body (shared-memory register) has a non-string where a string belongs (Triton 2.51: 500).',
  }),
  jsonNotUnsigned: fixed({
    code: INTERNAL,
    text: 'attempt to access JSON non-unsigned-integer as unsigned-integer',
    when: 'A control body (shared-memory register) has something else where an unsigned integer belongs (Triton 2.51: 500).',
  }),
  jsonEmpty: fixed({
    code: INTERNAL,
    text: 'failed to parse the request JSON buffer: The document is empty. at 0',
    when: 'POST /v2/logging with an empty body (Triton: 500).',
  }),
  unableToParse: entry(
    {
      code: INTERNAL,
      reason: REJECTED,
      text: "Unable to parse '{field}': attempt to access JSON non-{kind} as {kind}",
      when: "A member of the inference JSON (id, a name, datatype, shape, inputs, outputs, a request parameter Triton reads, a binary or shared-memory parameter) has the wrong JSON type; Triton 2.51 answers it with 500 and TritonJson's text.",
    },
    (field: string, kind: 'string' | 'unsigned-integer' | 'boolean' | 'array') => ({ field, kind }),
  ),
  unableToParseKind: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "Unable to parse '{field}': expected {expected}, got {got}",
      when: 'The request, `inputs` or `parameters` is not the JSON kind it must be (`got` names the JSON kind sent).',
    },
    (field: string, expected: 'a JSON object' | 'an array', got: string) => ({ field, expected, got }),
  ),
  unableToParseMissing: entry(
    {
      code: INTERNAL,
      reason: REJECTED,
      text: "Unable to parse '{field}': attempt to access non-existing object member '{field}'",
      when: 'A required member of the inference JSON is absent (or the body is not a JSON object: no `inputs`); Triton 2.51 answers it with 500.',
    },
    (field: string) => ({ field }),
  ),
  headerLength: entry(
    { code: INVALID_ARG, reason: REJECTED, text: 'Unable to parse Inference-Header-Content-Length, got: {value}', when: 'The header is not a number.' },
    (value: string) => ({ value }),
  ),
  headerLengthRange: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: 'inference header size should be in range (0, {length}), got: {value}',
      when: 'The header points past the body.',
    },
    (length: number, value: string) => ({ length, value }),
  ),
  extraInputData: entry(
    { code: INVALID_ARG, reason: REJECTED, text: "unexpected additional input data for model '{model}'", when: 'Binary data is left after the last input.' },
    (model: string) => ({ model }),
  ),
  inputDataSource: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But{found}",
      when: "An input sets none or several data sources; {found} is ' no field is set' or ' set' and the fields set.",
    },
    (hasData: boolean, hasBinary: boolean, hasShm: boolean) => ({
      found:
        !hasData && !hasBinary && !hasShm
          ? ' no field is set'
          : ' set' + (hasData ? " 'data'" : '') + (hasBinary ? " 'binary_data_size'" : '') + (hasShm ? " 'shared_memory_region'" : ''),
    }),
  ),
  invalidDatatype: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "invalid datatype '{datatype}' for input '{input}'",
      when: 'A datatype name that KServe v2 does not define (HTTP and gRPC).',
    },
    (datatype: string, input: string) => ({ datatype, input }),
  ),
  binaryDataShort: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "unexpected size for input '{input}', expecting {missing} additional bytes for model '{model}'",
      when: 'binary_data_size runs past the body.',
    },
    (input: string, missing: number, model: string) => ({ input, missing, model }),
  ),
  requestParams: fixed({
    code: INTERNAL,
    reason: REJECTED,
    text: 'failed to get request params.: attempt to get members for non-object',
    when: "The request's 'parameters' is not a JSON object (Triton 2.51: 500, TritonJson's text).",
  }),
  parameterType: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "parameter '{key}' has invalid type. It should be either 'int', 'bool', 'double', or 'string'.",
      when: 'A request parameter is an array, object or null.',
    },
    (key: string) => ({ key }),
  ),
  outputShmAndClassification: fixed({
    code: INVALID_ARG,
    reason: REJECTED,
    text: "Output can't set both 'shared_memory_region' and 'classification'",
    when: 'An output asks for both.',
  }),
  outputShmAndBinary: fixed({
    code: INVALID_ARG,
    reason: REJECTED,
    text: "Output can't set both 'shared_memory_region' and 'binary_data'",
    when: 'An output asks for both.',
  }),
  outputBinaryData: fixed({ code: INVALID_ARG, reason: REJECTED, text: "Unable to set 'binary_data'", when: "An output's binary_data is not a boolean." }),
  rawRequestInputs: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "raw binary request requires model '{model}' to have exactly 1 input, but it has {count}",
      when: 'A body without Inference-Header-Content-Length for a model with several inputs.',
    },
    (model: string, count: number) => ({ model, count }),
  ),
  rawRequestBytesDims: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "raw binary request for BYTES input '{input}' of model '{model}' requires dims [1]",
      when: 'A raw request for a BYTES input of another shape.',
    },
    (input: string, model: string) => ({ input, model }),
  ),
  rawRequestVariableDims: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "raw binary request for input '{input}' of model '{model}' can have at most one variable-size dimension",
      when: 'A raw request whose input has several -1 dims.',
    },
    (input: string, model: string) => ({ input, model }),
  ),
  jsonDataShape: fixed({
    code: INTERNAL,
    reason: REJECTED,
    text: "Unable to parse 'data': Shape does not match true shape of 'data' field",
    when: "JSON 'data' of a non-BYTES input holds more or fewer numbers than its shape; Triton 2.51 answers it with 500.",
  }),
  jsonDataNotArray: fixed({
    code: INTERNAL,
    reason: REJECTED,
    text: "Unable to parse 'data': attempt to access JSON non-array as array",
    when: "An input's JSON 'data' is not an array (a string, object, number or null) while its shape holds elements; Triton 2.51 answers it with 500.",
  }),
  jsonDataKind: entry(
    {
      code: INTERNAL,
      reason: REJECTED,
      text: "Unable to parse 'data': attempt to access JSON non-{kind} as {as}",
      when: "A JSON 'data' element of the wrong kind (a string, object, null or boolean for a number, a number for BOOL), or an integer beyond 64 bits (1e20 for INT32); Triton 2.51 answers it with 500 and calls a float a double.",
    },
    (kind: 'signed-integer' | 'unsigned-integer' | 'boolean' | 'number') => ({ kind, as: kind === 'number' ? 'double' : kind }),
  ),
  jsonBytesKind: fixed({
    code: INTERNAL,
    reason: REJECTED,
    text: 'Unable to parse JSON bytes array: attempt to access JSON non-string as string',
    when: "A JSON 'data' element of a BYTES input that is not a string; Triton 2.51 answers it with 500.",
  }),
  jsonInputHalf: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: 'receiving {datatype} data via JSON is not supported. Please use the binary data format for input {input}',
      when: "FP16/BF16 input given as JSON 'data'.",
    },
    (datatype: string, input: string) => ({ datatype, input }),
  ),
  jsonOutputHalf: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: 'sending {datatype} data via JSON is not supported. Please use the binary data format for output',
      when: 'An FP16/BF16 output requested as JSON.',
    },
    (datatype: string) => ({ datatype }),
  ),
  jsonOutputTooLarge: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "output '{output}' holds {size} bytes of tensor data, more than the {limit} bytes tritium sends as JSON. Request it as binary data (the binary data extension: parameter binary_data=true on the output, or binary_data_output=true on the request), or raise --http-max-json-output-size.",
      when: 'An output requested as JSON is larger than --http-max-json-output-size (tritium policy: its JSON text would be about ten times larger).',
    },
    (output: string, size: number, limit: number) => ({ output, size, limit }),
  ),
  parsedInWorker: entry(
    {
      code: 'varies',
      text: '{message}',
      when: 'A large JSON request is parsed on a worker thread (json-parse-worker.ts): the catalogue error it raised there, carried back with its code, reason and text.',
    },
    (e: { code: ErrorCode; message: string; reason: FailureReason }) => ({ message: e.message, $code: e.code, $reason: e.reason }),
  ),
  outputSizeMismatch: entry(
    { code: INTERNAL, text: "output tensor shape does not match size of output for '{output}'", when: "A model's output bytes disagree with its shape." },
    (output: string) => ({ output }),
  ),
  classificationType: entry(
    {
      code: INVALID_ARG,
      text: "class result not available for output due to unsupported type '{datatype}'",
      when: 'classification asked for a BYTES/BOOL/FP16 output (HTTP and gRPC).',
    },
    (datatype: string) => ({ datatype }),
  ),

  // The generate extension.
  generateEncoding: fixed({
    code: INVALID_ARG,
    reason: REJECTED,
    text: "Unsupported content-encoding, only 'identity' is supported.",
    when: '/generate with a compressed body.',
  }),
  generateNotObject: fixed({ code: INTERNAL, reason: REJECTED, text: 'attempt to get members for non-object', when: '/generate body is not a JSON object.' }),
  generateId: fixed({
    code: INTERNAL,
    reason: REJECTED,
    text: "Unable to parse 'id': attempt to access JSON non-string as string",
    when: "/generate 'id' is not a string.",
  }),
  generateParametersClash: fixed({
    code: INVALID_ARG,
    reason: REJECTED,
    text: "Keyword 'parameters' for nested schema also given as input tensor name",
    when: "A model input is named 'parameters' and the body nests parameters.",
  }),
  generateParametersObject: fixed({
    code: INTERNAL,
    reason: REJECTED,
    text: "Expected JSON object for keyword: 'parameters': attempt to access JSON non-object as object",
    when: "/generate 'parameters' is not an object.",
  }),
  generateParameters: entry(
    { code: 'varies', text: "Converting keyword: 'parameters': {cause}", when: "A nested parameter is refused; code and reason are the cause's." },
    (cause: TritonError) => ({ cause: cause.message, $code: cause.code, $reason: cause.reason }),
  ),
  generateParameterType: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "parameter '{key}' has invalid type. It should be either 'int', 'bool', or 'string'.",
      when: '/generate parameter of another JSON type.',
    },
    (key: string) => ({ key }),
  ),
  generateShape: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "The schema can not convert input '{input}' to tensor with proper shape",
      when: "A /generate value does not fit the input's dims.",
    },
    (input: string) => ({ input }),
  ),
} as const;
