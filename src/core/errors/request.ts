/**
 * @module core/errors/request
 * Catalogue: validating an inference request against its model (core infer_request semantics,
 * shared by every frontend), and scheduling it.
 */
import { entry, fixed } from './entry.js';
import { ErrorCode } from './triton-error.js';

const { INVALID_ARG, UNAVAILABLE, CANCELLED, UNSUPPORTED } = ErrorCode;
const REJECTED = 'REJECTED' as const;

const BATCH_NOTE =
  '. NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to be prepended to each input shape. If you want to specify the full shape including the batch dim in your input dims config, try setting max_batch_size to zero. See the model configuration docs for more info on max_batch_size.';

export const request = {
  decoupledHttp: fixed({
    code: UNSUPPORTED,
    text: "HTTP end point doesn't support models with decoupled transaction policy",
    when: 'HTTP /infer for a decoupled model (Triton words it per protocol; see decoupledGrpc).',
  }),
  decoupledGrpc: fixed({
    code: UNSUPPORTED,
    text: "ModelInfer RPC doesn't support models with decoupled transaction policy",
    when: 'Unary ModelInfer for a decoupled model (Triton words it per protocol; see decoupledHttp).',
  }),
  inputCount: entry(
    { code: INVALID_ARG, reason: REJECTED, text: "expected {expected} inputs but got {got} inputs for model '{model}'", when: 'Required inputs are missing.' },
    (model: string, expected: string, got: number) => ({ model, expected, got }),
  ),
  unexpectedInput: entry(
    { code: INVALID_ARG, reason: REJECTED, text: "unexpected inference input '{input}' for model '{model}'", when: 'An input the model does not declare.' },
    (model: string, input: string) => ({ model, input }),
  ),
  unexpectedOutput: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "unexpected inference output '{output}' for model '{model}'",
      when: 'A requested output the model does not declare.',
    },
    (model: string, output: string) => ({ model, output }),
  ),
  duplicateInput: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "input '{input}' is specified more than once for model '{model}'",
      when: 'The same input name appears twice.',
    },
    (model: string, input: string) => ({ model, input }),
  ),
  dataTypeMismatch: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "inference input '{input}' data-type is '{got}', but model '{model}' expects '{want}'",
      when: 'An input datatype differs from the config.',
    },
    (model: string, input: string, got: string, want: string) => ({ model, input, got, want }),
  ),
  shapeMismatch: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "unexpected shape for input '{input}' for model '{model}'. Expected [{want}], got [{got}]{note}",
      when: `An input shape does not match the config dims; for a batching model {note} is "${BATCH_NOTE}", otherwise empty.`,
    },
    (model: string, input: string, want: number[], got: number[], batching: boolean) => ({
      model,
      input,
      want: want.join(','),
      got: got.join(','),
      note: batching ? BATCH_NOTE : '',
    }),
  ),
  invalidShape: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "invalid shape for input '{input}' for model '{model}': dimensions must be non-negative integers",
      when: 'A shape holds a negative or non-integer dimension.',
    },
    (model: string, input: string) => ({ model, input }),
  ),
  batchSizeMismatch: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "inference request batch-size does not match other inputs for input '{input}' for model '{model}'",
      when: 'Inputs of a batching model disagree on the first dimension.',
    },
    (model: string, input: string) => ({ model, input }),
  ),
  batchTooLarge: entry(
    { code: INVALID_ARG, reason: REJECTED, text: "inference request batch-size must be <= {max} for '{model}'", when: 'Batch size above max_batch_size.' },
    (model: string, max: number) => ({ model, max }),
  ),
  emptyBatchShape: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "input '{input}' has no batch dimension but model '{model}' supports batching",
      when: 'A batching model gets an input with an empty shape.',
    },
    (model: string, input: string) => ({ model, input }),
  ),
  byteSizeMismatch: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "input byte size mismatch for input '{input}' for model, expected {expected} bytes, got {got} bytes",
      when: 'Fixed-size input data is not shape × element size bytes.',
    },
    (input: string, expected: number, got: number) => ({ input, expected, got }),
  ),
  bytesElementCount: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "expected {expected} string elements for inference input '{input}', got {got}",
      when: 'A BYTES input holds a different number of elements than its shape.',
    },
    (input: string, expected: number, got: number) => ({ input, expected, got }),
  ),
  bytesMalformed: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "element byte size indicator exceeds the end of the buffer for inference input '{input}'",
      when: 'A BYTES element length prefix runs past the data.',
    },
    (input: string) => ({ input }),
  ),
  reservedParameter: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified, got '{key}'",
      when: "A request parameter starts with 'triton_'.",
    },
    (key: string) => ({ key }),
  ),
  parameterNotNonNegative: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "parameter '{key}' must be a non-negative integer",
      when: 'priority or timeout is negative or not an integer.',
    },
    (key: string) => ({ key }),
  ),
  sequenceIdType: fixed({
    code: INVALID_ARG,
    reason: REJECTED,
    text: "parameter 'sequence_id' must be an integer or a string",
    when: 'sequence_id of another type.',
  }),

  // Scheduling.
  queueFull: fixed({ code: UNAVAILABLE, reason: REJECTED, text: 'Exceeds maximum queue size', when: 'The model queue is at max_queue_size.' }),
  timeoutExpired: fixed({ code: UNAVAILABLE, reason: REJECTED, text: 'Request timeout expired', when: 'A queued request outlives its timeout.' }),
  schedulerStopped: fixed({
    code: UNAVAILABLE,
    reason: REJECTED,
    text: 'Server is stopping, scheduler for model has stopped accepting new inference requests',
    when: 'A request arrives while the model is unloading or the server stops.',
  }),
  cancelled: fixed({ code: CANCELLED, reason: 'CANCELED', text: 'Request was cancelled', when: 'The client cancelled the request.' }),

  // The sequence batcher (core/scheduling/sequence-batcher.ts), in the order Triton checks.
  sequenceCorridType: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "{prefix}sequence batching control '{control}' data-type is '{got}', but model '{model}' expects '{want}'",
      when: "A string sequence_id for a model whose CONTROL_SEQUENCE_CORRID is numeric, or the reverse. {prefix} is '[request id: <id>] ' when the request has an id.",
    },
    (prefix: string, control: string, got: string, model: string, want: string) => ({ prefix, control, got, model, want }),
  ),
  sequenceBatchSize: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "inference request to model '{model}' must specify batch-size 1 due to requirements of sequence batcher",
      when: 'A request with a batch dimension above 1 to a sequence model.',
    },
    (model: string) => ({ model }),
  ),
  sequenceIdMissing: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "inference request to model '{model}' must specify a non-zero or non-empty correlation ID",
      when: 'A request without sequence_id (or with 0 or "") to a sequence model that is not iterative.',
    },
    (model: string) => ({ model }),
  ),
  sequenceStartMissing: entry(
    {
      code: INVALID_ARG,
      reason: REJECTED,
      text: "inference request for sequence {id} to model '{model}' must specify the START flag on the first request of the sequence",
      when: 'A request of a sequence that is not live: never started, already ended, or released after max_sequence_idle_microseconds.',
    },
    (id: string, model: string) => ({ id, model }),
  ),
  sequenceBacklogTimeout: fixed({
    code: UNAVAILABLE,
    reason: REJECTED,
    text: 'timeout of the corresponding sequence has been expired',
    when: "A sequence waiting for a free slot outlived a request's `timeout` parameter: every request of that sequence fails.",
  }),
  sequenceInstanceLost: entry(
    {
      code: UNAVAILABLE,
      reason: 'BACKEND',
      text: "sequence {id} of model '{model}' is lost: its instance {instance} stopped ({why}) and its state went with it; start the sequence again with the START flag",
      when: 'Beyond Triton: the instance holding a live sequence died or restarted. Its queued requests and the next ones without START fail with this, instead of reaching a model that no longer has the state.',
    },
    (id: string, model: string, instance: string, why: string) => ({ id, model, instance, why }),
  ),
} as const;
