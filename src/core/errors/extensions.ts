/**
 * @module core/errors/extensions
 * Catalogue: the KServe extensions both frontends serve (logging, trace, shared memory, model
 * repository). Where Triton 2.51 words one condition differently per protocol, there are two
 * entries (…Http / …Grpc) and each says so; otherwise one entry serves both.
 */
import { entry, fixed } from './entry.js';
import { ErrorCode } from './triton-error.js';

const { INVALID_ARG, UNSUPPORTED, UNAVAILABLE, NOT_FOUND, INTERNAL } = ErrorCode;

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
      when: "An HTTP extension body has a value of the wrong JSON type ({kind}: boolean, unsigned-integer, string): a log setting, or 'ready' of the repository index. Triton answers 500 (TritonJson's own error), and words the log case differently on gRPC (logSettingTypeGrpc).",
    },
    (kind: 'boolean' | 'unsigned-integer' | 'string') => ({ kind }),
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
      when: 'Status of a named system/cuda region (none can be registered yet).',
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
      text: "failed to register {kind} shared memory region '{region}': client shared memory is not supported by tritium yet",
      when: 'Register of any region: tritium does not support client shared memory yet (Triton would map the region).',
    },
    (kind: 'system' | 'cuda', region: string) => ({ kind, region }),
  ),
  shmRegionUnknown: entry(
    {
      code: INVALID_ARG,
      reason: 'REJECTED',
      text: "Unable to find shared memory region: '{region}'",
      when: 'An inference input or output names a shared-memory region (none can be registered yet).',
    },
    (region: string) => ({ region }),
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
    when: 'A model load or unload request (tritium has no explicit model control yet).',
  }),
} as const;
