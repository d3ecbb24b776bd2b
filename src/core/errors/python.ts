/**
 * @module core/errors/python
 * Catalogue: the Python backend (stub processes, their execution environments, auto-complete).
 */
import { entry, fixed } from './entry.js';
import { ErrorCode, type TritonError } from './triton-error.js';

const { INTERNAL, INVALID_ARG } = ErrorCode;

export const python = {
  stubNameInvalid: fixed({
    code: INVALID_ARG,
    text: 'Invalid argument: Invalid stub name: contains invalid characters',
    when: "A Python model's version load, when the model's name or an instance's holds one of ;|&$`<>()[]{}\\\"'*?~#! (the check of the Python backend in releases after 2.51, which hangs on such a name; the load API answers 400 `load failed for model '<m>': version <v> is at UNAVAILABLE state: <this>;`). No stub is started.",
  }),
  shmRegionNameInvalid: fixed({
    code: INVALID_ARG,
    text: 'Invalid argument: Invalid shared memory region name: contains invalid characters',
    when: "A Python model's version load, when `--backend-config=python,shm-region-prefix-name=` holds one of ;|&$`<>()[]{}\\\"'*?~#! (the Python backend's check after 2.51, beside the stub name's). No stub is started.",
  }),
  stubUnhealthy: entry(
    {
      code: INTERNAL,
      reason: 'BACKEND',
      text: "Stub process '{instance}' is not healthy.{cause}",
      when: 'A stub died, hung past its watchdog or broke the protocol; {cause} is a space and how, or empty.',
    },
    (instance: string, cause?: string) => ({ instance, cause: cause ? ` ${cause}` : '' }),
  ),
  rescheduleUnsupported: fixed({
    code: INVALID_ARG,
    reason: 'BACKEND',
    text: 'Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a flag.',
    when: "A model without `sequence_batching { iterative_sequence: true }` calls set_release_flags(TRITONSERVER_REQUEST_RELEASE_RESCHEDULE). Triton's Python backend only logs it and the client waits; tritium answers the request with it.",
  }),
  noResponse: entry(
    {
      code: INTERNAL,
      reason: 'BACKEND',
      text: "Python model '{instance}' did not send a response for a request: execute returned None for it and no FINAL response was sent through its response sender.",
      when: 'A non-decoupled request never got a FINAL response.',
    },
    (instance: string) => ({ instance }),
  ),
  senderDropped: entry(
    {
      code: INTERNAL,
      reason: 'BACKEND',
      text: "Python model '{instance}' released the response sender of a request without sending the FINAL flag.",
      when: 'A response sender was garbage-collected before COMPLETE_FINAL.',
    },
    (instance: string) => ({ instance }),
  ),
  // A model's own readiness check, `is_ready()` (docs/protocol-notes.md, "A model's own readiness check"). Triton's texts.
  userNotReady: entry(
    {
      code: ErrorCode.UNAVAILABLE,
      reason: 'BACKEND',
      text: "Model '{instance}' is not ready (user-defined check failed).",
      when: 'is_ready() returned False (the model and server readiness endpoints report not ready).',
    },
    (instance: string) => ({ instance }),
  ),
  userReadyFailed: entry(
    {
      code: INTERNAL,
      reason: 'BACKEND',
      text: '{message}',
      when: "is_ready() raised or returned a non-bool; the text is the stub's report, in Triton's words.",
    },
    (message: string) => ({ message }),
  ),
  userReadyTimeout: entry(
    {
      code: ErrorCode.UNAVAILABLE,
      reason: 'BACKEND',
      text: 'Timed out waiting for user-defined is_ready() response',
      when: 'is_ready() did not answer within its bound.',
    },
    () => ({}),
  ),
  modelRaised: entry(
    {
      code: 'varies',
      reason: 'BACKEND',
      text: '{message}',
      when: "The model answered a request with an error (pb_utils.TritonError or an exception in execute); code and text are the model's.",
    },
    (code: number, message: string) => ({ message, $code: code as ErrorCode }),
  ),
  // BLS and model control from model.py (backends/python/bls.ts); texts of tritonserver 2.51.
  blsModelNotReady: entry(
    {
      code: INTERNAL,
      text: "Model {model} - Error when running inference: Failed for execute the inference request. Model '{model}' is not ready.",
      when: 'A BLS call names a model or version that is unknown, not loaded or not ready.',
    },
    (model: string) => ({ model }),
  ),
  blsDecoupledTarget: entry(
    {
      code: INTERNAL,
      text: "Model {model} - Error when running inference: Model {model} is using the decoupled. The current BLS request call doesn't support models using the decoupled transaction policy. Please use 'decoupled=True' argument to the 'exec' or 'async_exec' calls for decoupled models.'",
      when: 'exec() / async_exec() without decoupled=True calls a decoupled model.',
    },
    (model: string) => ({ model }),
  ),
  blsInferenceFailed: entry(
    {
      code: INTERNAL,
      text: 'Model {model} - Error when running inference: {message}',
      when: 'The core refused a BLS request before the model ran (validation); {message} is why.',
    },
    (model: string, message: string) => ({ model, message }),
  ),
  modelControlOff: entry(
    {
      code: INTERNAL,
      text: "Failed to {op} model: Failed to process the request for model '{instance}', message: explicit model load / unload is not allowed if polling is enabled",
      when: 'pb_utils.load_model / unload_model while the server is not in explicit model-control mode.',
    },
    (op: string, instance: string) => ({ op, instance }),
  ),
  modelControlFailed: entry(
    {
      code: INTERNAL,
      text: "Failed to {op} model: Failed to process the request for model '{instance}', message: {message}",
      when: 'pb_utils.load_model / unload_model failed; {message} is why.',
    },
    (op: string, instance: string, message: string) => ({ op, instance, message }),
  ),
  executeFailed: entry(
    { code: INTERNAL, reason: 'BACKEND', text: '{message}', when: "execute raised for a whole batch; the text is the stub's report of the exception." },
    (message: string) => ({ message }),
  ),
  initializeFailed: entry(
    { code: INTERNAL, text: '{message}', when: "initialize (or importing model.py) raised; the text is the stub's report of the exception." },
    (message: string) => ({ message }),
  ),
  initializeTimeout: entry(
    {
      code: INTERNAL,
      text: "initialize of instance '{instance}' did not return within {seconds} s (--backend-config=python,initialize-timeout-seconds); the stub was stopped",
      when: 'tritium policy: an instance whose initialize runs past --backend-config=python,initialize-timeout-seconds fails the load.',
    },
    (instance: string, seconds: number) => ({ instance, seconds }),
  ),
  batchSendFailed: entry(
    { code: INTERNAL, text: '{message}', when: 'A batch could not be handed to the stub (shared memory exhausted); the text says what ran out.' },
    (message: string) => ({ message }),
  ),
  withStderr: entry(
    {
      code: 'varies',
      text: '{message}\n{stderr}',
      when: "A stub died while starting; the load error carries the last lines it wrote on stderr (code and reason are the cause's).",
    },
    (cause: TritonError, stderr: string) => ({ message: cause.message, stderr, $code: cause.code, $reason: cause.reason }),
  ),
  autoCompleteTimeout: entry(
    { code: INTERNAL, text: "auto_complete_config of model '{model}' did not finish in {ms} ms", when: 'auto_complete_config runs past its bound.' },
    (model: string, ms: number) => ({ model, ms }),
  ),
  autoCompleteSpawn: entry(
    { code: INTERNAL, text: "Failed to start '{python}' for model '{model}': {cause}", when: 'The Python interpreter for auto-complete cannot be started.' },
    (python: string, model: string, cause: string) => ({ python, model, cause }),
  ),
  autoCompleteDied: entry(
    {
      code: INTERNAL,
      text: "Stub process '{model}' is not healthy. {exit} (while running auto_complete_config){stderr}",
      when: 'The auto-complete stub exits early; {stderr} is a newline and its last stderr lines, or empty.',
    },
    (model: string, exit: string, tail: string) => ({ model, exit, stderr: tail ? `\n${tail}` : '' }),
  ),
  autoCompleteFailed: entry(
    { code: INTERNAL, text: '{message}', when: "auto_complete_config raised; the text is the stub's report of the exception." },
    (message: string) => ({ message }),
  ),

  // EXECUTION_ENV_PATH.
  envPathRelative: entry(
    {
      code: INTERNAL,
      text: "EXECUTION_ENV_PATH '{path}' must be an absolute path or start with {placeholder}/ (Triton fails it too: 'Failed to get the canonical path for {path}.')",
      when: 'EXECUTION_ENV_PATH is relative and does not use $$TRITON_MODEL_DIRECTORY.',
    },
    (path: string, placeholder: string) => ({ path, placeholder }),
  ),
  envPathMissing: entry(
    { code: INTERNAL, text: 'Failed to get the canonical path for {path}.', when: 'EXECUTION_ENV_PATH names nothing that exists.' },
    (path: string) => ({ path }),
  ),
  envUnpack: entry(
    {
      code: INTERNAL,
      text: "cannot unpack EXECUTION_ENV_PATH '{path}': {cause}",
      when: 'A packed environment is unsafe or malformed (the unpacker says which entry and why).',
    },
    (path: string, cause: string) => ({ path, cause }),
  ),
  envNotGzip: entry(
    {
      code: INTERNAL,
      text: "cannot unpack EXECUTION_ENV_PATH '{path}': not a gzip-compressed tar archive ({cause})",
      when: 'A packed environment is not gzip.',
    },
    (path: string, cause: string) => ({ path, cause }),
  ),
  envNoActivate: entry(
    {
      code: INTERNAL,
      text: "Path {activate} does not exist. The Python environment should contain an 'activate' script.",
      when: 'The environment lacks bin/activate.',
    },
    (activate: string) => ({ activate }),
  ),
  envNoPython: entry(
    { code: INTERNAL, text: "EXECUTION_ENV_PATH '{path}' has no bin/python (in {dir})", when: 'The environment lacks bin/python.' },
    (path: string, dir: string) => ({ path, dir }),
  ),
} as const;
