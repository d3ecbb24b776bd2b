/**
 * @module core/errors/extensions
 * Catalogue: the KServe extensions both frontends serve (logging, trace, shared memory, model
 * repository). Where Triton 2.51 words one condition differently per protocol, there are two
 * entries (…Http / …Grpc) and each says so; otherwise one entry serves both.
 */
import { entry, fixed } from './entry.js';
import { ErrorCode } from './triton-error.js';

const { INVALID_ARG, UNSUPPORTED, UNAVAILABLE, NOT_FOUND, INTERNAL, ALREADY_EXISTS } = ErrorCode;

export const extensions = {
  logFileUpdate: fixed({
    code: UNSUPPORTED,
    text: 'log file location can not be updated through network protocol',
    when: 'A log settings update names log_file (any value; HTTP: any non-null value). Same text on both protocols.',
  }),
  jsonValueType: entry(
    {
      code: INTERNAL,
      text: 'attempt to access JSON non-{kind} as {kind}',
      when: "An HTTP extension body has a value of the wrong JSON type ({kind}: boolean, unsigned-integer, string): a log setting, or 'ready' of the repository index, a trace_level that is not a list (array). Triton answers 500 (TritonJson's own error), and words the log case differently on gRPC (logSettingTypeGrpc).",
    },
    (kind: 'boolean' | 'unsigned-integer' | 'string' | 'array') => ({ kind }),
  ),
  logSettingTypeGrpc: entry(
    {
      code: INVALID_ARG,
      text: "expect {type} for '{key}'",
      when: "gRPC LogSettings with a value of the wrong type ({type}: boolean, int32, string). Triton's HTTP text differs (jsonValueType).",
    },
    (key: string, type: 'boolean' | 'int32' | 'string') => ({ key, type }),
  ),
  logFormatHttp: entry(
    {
      code: UNAVAILABLE,
      text: 'invalid argument for --log_format, got: {value}',
      when: "HTTP log settings update with a log_format other than 'default' or 'ISO8601'. Triton answers 503 here, and words it differently on gRPC (logFormatGrpc).",
    },
    (value: string) => ({ value }),
  ),
  logFormatGrpc: entry(
    {
      code: INVALID_ARG,
      text: 'invalid argument for log_format, got: {value}',
      when: "gRPC LogSettings with a log_format other than 'default' or 'ISO8601'. Triton's HTTP text differs (logFormatHttp).",
    },
    (value: string) => ({ value }),
  ),
  traceParse: entry(
    {
      code: INVALID_ARG,
      text: "Unable to parse '{key}', got: {value}",
      when: 'A trace settings update gives trace_rate, trace_count or log_frequency a value that is not a number (Triton 2.51 text).',
    },
    (key: string, value: string) => ({ key, value }),
  ),
  traceCountRange: entry(
    {
      code: INVALID_ARG,
      text: "Unable to parse 'trace_count'. Expecting value >= -1, got:{value}",
      when: 'A trace settings update gives trace_count a value below -1 (Triton 2.51 text).',
    },
    (value: string) => ({ value }),
  ),
  traceNoFile: fixed({
    code: INVALID_ARG,
    text: 'Attempting to set invalid trace setting :trace file name is not given',
    when: 'A trace settings update turns tracing on while no trace file was given at start-up (--trace-config triton,file=<path>); Triton 2.51 text.',
  }),
  apiRestricted: entry(
    {
      code: UNAVAILABLE,
      text: 'This {what} is restricted, expecting header {header}',
      when: "A request to an API group --http-restricted-api / --grpc-restricted-protocol restricts lacks the header with its value ({what}: 'API' over HTTP, answered 403 as Triton does; 'protocol' over gRPC, UNAVAILABLE). Triton 2.51 texts.",
    },
    (what: 'API' | 'protocol', header: string) => ({ what, header: `'${header}'` }),
  ),
  traceFileUpdate: fixed({
    code: UNSUPPORTED,
    text: 'trace file location can not be updated through network protocol',
    when: 'A trace settings update names trace_file (HTTP: any non-null value; gRPC: the key at all). Same text on both protocols.',
  }),
  traceUnknownModel: entry(
    {
      code: INVALID_ARG,
      text: 'Request for unknown model : {model}',
      when: 'Trace settings of a model the server cannot find (Triton 2.51: this text, INVALID_ARG, on both protocols).',
    },
    (model: string) => ({ model }),
  ),
  shmRegionNotFound: entry(
    {
      code: NOT_FOUND,
      text: "Unable to find {kind} shared memory region: '{region}'",
      when: 'Status of a named system/cuda region that is not registered.',
    },
    (kind: 'system' | 'cuda', region: string) => ({ kind, region }),
  ),
  shmRegionNameMissing: entry(
    {
      code: INVALID_ARG,
      text: "'region name' is necessary to register {kind} shared memory region",
      when: 'Register with an empty region name.',
    },
    (kind: 'system' | 'cuda') => ({ kind }),
  ),
  shmUnsupported: entry(
    {
      code: UNSUPPORTED,
      text: "failed to register {kind} shared memory region '{region}': {kind} shared memory is not supported by tritium",
      when: 'Register of a CUDA region (tritium has no CUDA IPC), or of a system region where the native addon cannot map memory.',
    },
    (kind: 'system' | 'cuda', region: string) => ({ kind, region }),
  ),
  shmRegionExists: entry(
    { code: ALREADY_EXISTS, text: "shared memory region '{region}' already in manager", when: 'Register of a name that is registered.' },
    (region: string) => ({ region }),
  ),
  shmKeyReserved: entry(
    {
      code: INVALID_ARG,
      text: "shared memory key '{key}' belongs to the server's own model instances and cannot be registered",
      when: "Register of a key of tritium's stub regions or Triton's Python-backend regions.",
    },
    (key: string) => ({ key }),
  ),
  shmOpenFailed: entry(
    { code: INTERNAL, text: "Unable to open shared memory region: '{key}'", when: 'Register of a key that does not exist or cannot be opened.' },
    (key: string) => ({ key }),
  ),
  shmRegionInvalid: entry(
    {
      code: INTERNAL,
      text: "Invalid shared memory region: '{key}'",
      when: "Register with byte_size 0, in the registry; the frontends answer it with Triton's shmRegisterZeroSize (frontends/shm-register.ts).",
    },
    (key: string) => ({ key }),
  ),
  shmRegisterZeroSize: entry(
    {
      code: INVALID_ARG,
      text: "failed to register shared memory region '{region}': unable to process address spaceInvalid argument",
      when: "Register with byte_size 0: Triton's mmap of a 0-byte length fails with EINVAL, its text glued to the message (tritonserver 2.51, HTTP 400 and gRPC INVALID_ARGUMENT).",
    },
    (region: string) => ({ region }),
  ),
  shmRegisterInvalidArgs: entry(
    {
      code: INVALID_ARG,
      text: "failed to register shared memory region '{region}': invalid args",
      when: 'Register of offset + byte_size beyond the end of the shared-memory object.',
    },
    (region: string) => ({ region }),
  ),
  shmRegionUnknown: entry(
    {
      code: NOT_FOUND,
      reason: 'REJECTED',
      text: "Unable to find shared memory region: '{region}'",
      when: 'An inference input or output names a region that is not registered.',
    },
    (region: string) => ({ region }),
  ),
  shmBounds: entry(
    {
      code: INVALID_ARG,
      reason: 'REJECTED',
      text: "Invalid offset + byte size for shared memory region: '{region}'",
      when: 'An input or output in shared memory with byte size 0 (or absent) or past the end of its region.',
    },
    (region: string) => ({ region }),
  ),
  shmOutputTooSmall: entry(
    {
      code: INTERNAL,
      text: "shared memory size specified with the request for output '{output}' ({given} bytes) should be at least {needed} bytes to hold the results",
      when: 'An output requested in shared memory is larger than the byte size the request gave it.',
    },
    (output: string, given: number, needed: number) => ({ output, given, needed }),
  ),
  shmObjectShrunk: entry(
    {
      code: INVALID_ARG,
      reason: 'REJECTED',
      text: "shared memory region '{region}' needs {needed} bytes of its object, which now holds {size}: the object was shrunk after the region was registered",
      when: 'An input is read from, or an output written to, a system region whose /dev/shm object the client truncated after registering it.',
    },
    (region: string, needed: number, size: number) => ({ region, needed, size }),
  ),
  shmAccessFailed: entry(
    {
      code: INTERNAL,
      text: "Unable to {op} shared memory region '{region}': {reason}",
      when: "Reading an input from, or writing an output to, a system region's object fails (for example /dev/shm is full when an output is written).",
    },
    (op: 'read' | 'write', region: string, reason: string) => ({ op, region, reason }),
  ),
  classificationParam: fixed({
    code: INVALID_ARG,
    reason: 'REJECTED',
    text: "Unable to set 'classification'",
    when: "An output's classification parameter is not a non-negative integer.",
  }),
  repositoryName: fixed({
    code: UNSUPPORTED,
    text: "'repository_name' specification is not supported",
    when: 'A repository request names a repository.',
  }),
  explicitLoadUnload: fixed({
    code: UNAVAILABLE,
    text: 'explicit model load / unload is not allowed if polling is enabled',
    when: 'A model load or unload request while --model-control-mode is none or poll.',
  }),
  loadPollFailed: entry(
    {
      code: INTERNAL,
      text: "failed to load '{model}', failed to poll from model repository",
      when: 'A load names a model the repository lacks, or its config (file or override) or file overrides are refused; the log says why.',
    },
    (model: string) => ({ model }),
  ),
  loadFailed: entry(
    {
      code: INVALID_ARG,
      text: "load failed for model '{model}': {versions}",
      when: "A version failed to load; {versions} is 'version <v> is at UNAVAILABLE state: <reason>;' and a newline per failed version. What served before keeps serving.",
    },
    (model: string, failures: Array<{ version: number; reason: string }>) => ({
      model,
      versions: failures.map((f) => `version ${f.version} is at UNAVAILABLE state: ${f.reason};\n`).join(''),
    }),
  ),
  loadNotInRepository: fixed({
    code: NOT_FOUND,
    text: 'model not found in any model repository.',
    when: 'Logged (after "failed to poll model \'<m>\': ") when a load names a model no repository holds.',
  }),
  loadParamUnknown: fixed({
    code: INTERNAL,
    text: 'unexpected error on creating Triton parameter',
    when: "HTTP load: a string parameter other than 'config' or 'file:<path>'.",
  }),
  loadFilesNeedConfig: fixed({
    code: INVALID_ARG,
    text: "Load parameter 'config' must be specified for model file override",
    when: "Logged: a load carries 'file:' overrides without a 'config' override.",
  }),
  loadFileEscapes: entry(
    {
      code: INVALID_ARG,
      text: "Invalid file parameter '{param}' with normalized path '{path}' must stay within model directory.",
      when: "Logged: a 'file:' override names a path that leaves the model directory once normalised (a '..' that climbs out; leading slashes are relative, as in Triton).",
    },
    (param: string, path: string) => ({ param, path }),
  ),
  loadConfigOverride: entry(
    { code: INVALID_ARG, text: 'Invalid config override: {cause}', when: "Logged: the 'config' override is not a valid JSON model config." },
    (cause: string) => ({ cause }),
  ),
  modelUnloading: entry(
    {
      code: UNAVAILABLE,
      reason: 'BACKEND',
      text: "model '{model}' version {version} was unloaded before the request completed",
      when: 'A request still queued on a version when its unload or reload stopped waiting (bounded by --exit-timeout-secs).',
    },
    (model: string, version: string) => ({ model, version }),
  ),
} as const;
