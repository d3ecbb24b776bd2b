/**
 * @module core/errors/models
 * Catalogue: finding a model and its versions, loading it, warming it up.
 */
import { entry, fixed } from './entry.js';
import { ErrorCode } from './triton-error.js';

const { NOT_FOUND, UNAVAILABLE, INVALID_ARG, INTERNAL } = ErrorCode;

export const models = {
  unknownModel: entry(
    { code: NOT_FOUND, text: "Request for unknown model: '{model}' is not found", when: 'A request names a model the repository does not hold.' },
    (model: string) => ({ model }),
  ),
  noAvailableVersions: entry(
    { code: NOT_FOUND, text: "Request for unknown model: '{model}' has no available versions", when: 'The model is known but no version of it is loaded.' },
    (model: string) => ({ model }),
  ),
  unknownVersion: entry(
    {
      code: NOT_FOUND,
      text: "Request for unknown model: '{model}' version {version} is not found",
      when: 'A request names a version the model does not have.',
    },
    (model: string, version: string) => ({ model, version }),
  ),
  versionNotReady: entry(
    {
      code: UNAVAILABLE,
      text: "Request for unknown model: '{model}' version {version} is not at ready state",
      when: 'The version exists but is loading, unloading or failed.',
    },
    (model: string, version: string) => ({ model, version }),
  ),
  serverNotReady: fixed({ code: UNAVAILABLE, text: 'Server not ready', when: 'An inference arrives before the server is ready.' }),
  serverExiting: fixed({ code: UNAVAILABLE, text: 'Server exiting', when: 'A health check arrives while the server shuts down.' }),
  badVersionString: entry(
    {
      code: INVALID_ARG,
      reason: 'REJECTED',
      text: "failed to get model version from specified version string '{version}' (must be an integer)",
      when: 'The version in the URL or request is not an integer.',
    },
    (version: string) => ({ version }),
  ),
  modelNotAvailable: entry(
    { code: INVALID_ARG, text: "requested model '{model}' is not available", when: 'A load or unload names a model the repository does not hold.' },
    (model: string) => ({ model }),
  ),
  instanceNoGpu: entry(
    {
      code: INVALID_ARG,
      text: 'Invalid argument: instance group {group} of model {model} has kind KIND_GPU but no GPUs are available',
      when: "A version's load on a host without GPUs, when an instance group has kind KIND_GPU (Triton 2.51's version failure, status included: the load API answers 400 and the index holds the version UNAVAILABLE with this reason).",
    },
    (group: string, model: string) => ({ group, model }),
  ),
  versionUnavailable: entry(
    {
      code: UNAVAILABLE,
      reason: 'BACKEND',
      text: "model '{model}' version {version} is unavailable: {cause}",
      when: 'Requests still queued for a version that failed or is being unloaded.',
    },
    (model: string, version: string | number, cause: string) => ({ model, version, cause }),
  ),
  modelFileMissing: entry(
    {
      code: INTERNAL,
      text: "unable to find '{file}' for model '{model}'",
      when: "The version directory lacks the backend's model file (model.py, model.onnx).",
    },
    (file: string, model: string) => ({ file, model }),
  ),
  rateLimitResourceShort: entry(
    {
      code: INVALID_ARG,
      text: 'Resource count for "{name}" is limited to {limit} which will prevent scheduling of one or more model instances, the minimum required count is {need}',
      when: "An instance's rate_limiter asks for more of a resource than exists (--rate-limit-resource, where an unlisted resource has none). Triton's text; the version fails to load.",
    },
    (name: string, limit: number, need: number) => ({ name, limit, need }),
  ),
  rateLimitMixedResource: entry(
    {
      code: INVALID_ARG,
      text: 'Resource "{name}" is present as both global and device-specific resource in the model configuration.',
      when: "A model's instance groups name one rate-limiter resource as global and as per-device (Triton's text).",
    },
    (name: string) => ({ name }),
  ),
  sequenceStateDims: entry(
    {
      code: INVALID_ARG,
      text: "sequence state '{state}' of model '{model}' has variable dims {dims}: give initial_state fixed dims",
      when: 'A sequence_batching state whose dims (or its initial_state dims) hold -1: tritium needs the fixed shape its first value has.',
    },
    (state: string, model: string, dims: string) => ({ state, model, dims }),
  ),
  sequenceStateType: entry(
    {
      code: INVALID_ARG,
      text: "initial_state of sequence state '{state}' of model '{model}' has data type {got}, the state {want}",
      when: "A state's initial_state names another data type than the state.",
    },
    (state: string, model: string, got: string, want: string) => ({ state, model, got, want }),
  ),
  sequenceStateFile: entry(
    {
      code: INVALID_ARG,
      text: "initial_state data_file '{file}' of sequence state '{state}' of model '{model}': {reason}",
      when: "An initial_state data_file that is not a file inside the model's initial_state/ directory, cannot be read, or holds another number of bytes than the state's shape needs.",
    },
    (file: string, state: string, model: string, reason: string) => ({ file, state, model, reason }),
  ),
  labelFileRead: entry(
    {
      code: INTERNAL,
      text: 'failed to open text file for read {file}: {reason}',
      when: "An output's label_filename cannot be read (Triton's text; {reason} is strerror's, e.g. 'No such file or directory'). The version fails to load.",
    },
    (file: string, reason: string) => ({ file, reason }),
  ),

  // Files a model config names (core/repository/safe-path.ts): they must stay inside the model directory.
  pathNul: entry(
    {
      code: INVALID_ARG,
      text: "{what} '{path}' contains a NUL byte",
      when: 'A file name in the config (default_model_filename, input_data_file) holds a NUL.',
    },
    (what: string, path: string) => ({ what, path }),
  ),
  pathAbsolute: entry(
    { code: INVALID_ARG, text: "{what} '{path}' must be a path relative to the model directory", when: 'A file name in the config is absolute.' },
    (what: string, path: string) => ({ what, path }),
  ),
  pathOutside: entry(
    { code: INVALID_ARG, text: "{what} '{path}' points outside the model directory", when: "A file name in the config climbs out with '..'." },
    (what: string, path: string) => ({ what, path }),
  ),
  pathResolvesOutside: entry(
    {
      code: INVALID_ARG,
      text: "{what} '{path}' resolves outside the model directory",
      when: 'A file name in the config is a symbolic link leading out of the model directory.',
    },
    (what: string, path: string) => ({ what, path }),
  ),

  // Warmup (model_warmup in config.pbtxt), run at load and after a restart.
  warmupFailed: entry(
    { code: INVALID_ARG, text: "failed to run warmup sample '{sample}': {cause}", when: 'A warmup request fails in the model.' },
    (sample: string, cause: string) => ({ sample, cause }),
  ),
  warmupFailedResponses: entry(
    { code: INVALID_ARG, text: "failed to run warmup sample '{sample}': {causes};", when: 'Warmup responses carry errors (all are listed).' },
    (sample: string, causes: string[]) => ({ sample, causes: causes.join('; ') }),
  ),
  warmupVariableDims: entry(
    {
      code: INVALID_ARG,
      text: "warmup setting expects all variable-size dimensions are specified for input '{input}'",
      when: 'A warmup input leaves a -1 dimension.',
    },
    (input: string) => ({ input }),
  ),
  warmupFileUnreadable: entry(
    { code: INVALID_ARG, text: "unable to read warmup data file '{file}': {cause}", when: 'An input_data_file cannot be read.' },
    (file: string, cause: string) => ({ file, cause }),
  ),
  warmupFileNotBytes: entry(
    {
      code: INVALID_ARG,
      text: 'warmup data file {file} is not a serialized BYTES tensor (4-byte little-endian length before each element)',
      when: 'A BYTES input_data_file is not length-prefixed elements.',
    },
    (file: string) => ({ file }),
  ),
  warmupFileElementCount: entry(
    {
      code: INVALID_ARG,
      text: 'warmup setting expects {expected} string elements, but the data provided from {file} has {found}',
      when: 'A BYTES input_data_file holds a different number of elements than the sample shape.',
    },
    (expected: number, file: string, found: number) => ({ expected, file, found }),
  ),
  warmupFileTooShort: entry(
    {
      code: INVALID_ARG,
      text: 'warmup setting expects {expected} bytes, but the data provided from {file} only has {found} bytes',
      when: 'A fixed-size input_data_file is shorter than the sample needs.',
    },
    (expected: number, file: string, found: number) => ({ expected, file, found }),
  ),
} as const;
