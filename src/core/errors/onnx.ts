/**
 * @module core/errors/onnx
 * Catalogue: the ONNX Runtime backend (auto-complete, config checks against the graph, sessions,
 * runs).
 */
import { entry } from './entry.js';
import { ErrorCode } from './triton-error.js';

const { INVALID_ARG, INTERNAL, UNAVAILABLE } = ErrorCode;
const fmt = (dims: readonly number[]): string => `[${dims.join(',')}]`;

export const onnx = {
  onnxRuntimeMissing: entry(
    {
      code: UNAVAILABLE,
      text: 'onnxruntime-node is not installed (neither as a dependency of tritium nor under {vendored}); reinstall tritium, or run `npm install --ignore-scripts onnxruntime-node` in its directory',
      when: 'An ONNX model is loaded but no copy of onnxruntime-node can be found (docs/deploy.md, "The npm package").',
    },
    (vendored: string) => ({ vendored }),
  ),
  onnxAutofillType: entry(
    {
      code: INVALID_ARG,
      text: "unable to autofill for '{model}': tensor '{tensor}' of the ONNX model has {what}, which tritium cannot serve",
      when: 'A graph tensor has an element type (or is a sequence/map) tritium cannot serve.',
    },
    (model: string, tensor: string, what: string) => ({ model, tensor, what }),
  ),
  onnxAutofillLoad: entry(
    {
      code: INVALID_ARG,
      text: "unable to autofill for '{model}': failed to load '{file}': {cause}",
      when: 'onnxruntime cannot read the graph for auto-complete.',
    },
    (model: string, file: string, cause: string) => ({ model, file, cause }),
  ),
  onnxAutofillBatching: entry(
    {
      code: INVALID_ARG,
      text: "autofill failed for model '{model}': model does not support batching while non-zero max_batch_size is specified",
      when: 'max_batch_size > 0 for a graph without dynamic first dimensions.',
    },
    (model: string) => ({ model }),
  ),
  onnxInputCount: entry(
    {
      code: INVALID_ARG,
      text: "unable to load model '{model}', configuration expects {expected} inputs, model provides {got}",
      when: 'The config and the graph have different numbers of required inputs.',
    },
    (model: string, expected: number, got: number) => ({ model, expected, got }),
  ),
  onnxOptionalBatching: entry(
    {
      code: INVALID_ARG,
      text: "unable to load model '{model}', optional input '{input}' is not supported for models that support batching",
      when: 'An optional input on a batching model.',
    },
    (model: string, input: string) => ({ model, input }),
  ),
  onnxMissingTensor: entry(
    {
      code: INVALID_ARG,
      text: "unable to load model '{model}', configuration expects {kind} '{tensor}' but the model's {kind}s are {names}",
      when: 'A configured input/output is not in the graph.',
    },
    (model: string, kind: 'input' | 'output', tensor: string, names: string) => ({ model, kind, tensor, names }),
  ),
  onnxDataType: entry(
    {
      code: INVALID_ARG,
      text: "unable to load model '{model}', configuration expects datatype {want} for {kind} '{tensor}', model provides {got}",
      when: 'A configured datatype differs from the graph.',
    },
    (model: string, want: string, kind: string, tensor: string, got: string) => ({ model, want, kind, tensor, got }),
  ),
  onnxRaggedShape: entry(
    {
      code: INVALID_ARG,
      text: "unable to load model '{model}', ragged input '{input}' needs the model to take shape [-1], model provides {shape}",
      when: 'A ragged input whose graph shape is not [-1].',
    },
    (model: string, input: string, shape: readonly number[]) => ({ model, input, shape: fmt(shape) }),
  ),
  onnxScalarDims: entry(
    {
      code: INVALID_ARG,
      text: "unable to load model '{model}', scalar tensor '{tensor}' must have dims [1] in the model configuration, got {dims}",
      when: 'A graph scalar configured with dims other than [1].',
    },
    (model: string, tensor: string, dims: readonly number[]) => ({ model, tensor, dims: fmt(dims) }),
  ),
  onnxBatchDim: entry(
    {
      code: INVALID_ARG,
      text: "unable to load model '{model}', {kind} '{tensor}': a model that batches (max_batch_size > 0) needs a dynamic first dimension, but the model's shape is {shape}",
      when: 'A batching model whose graph tensor has a fixed first dimension.',
    },
    (model: string, kind: string, tensor: string, shape: readonly number[]) => ({ model, kind, tensor, shape: fmt(shape) }),
  ),
  onnxRank: entry(
    {
      code: INVALID_ARG,
      text: "unable to load model '{model}', {kind} '{tensor}': the model's shape {shape} has {rank} dimensions but the configuration gives {count} ({dims}{batchNote})",
      when: 'Config dims and graph shape have different ranks.',
    },
    (model: string, kind: string, tensor: string, shape: readonly number[], full: readonly number[], batching: boolean) => ({
      model,
      kind,
      tensor,
      shape: fmt(shape),
      rank: shape.length,
      count: full.length,
      dims: fmt(full),
      batchNote: batching ? ', batch dimension included' : '',
    }),
  ),
  onnxDims: entry(
    {
      code: INVALID_ARG,
      text: "unable to load model '{model}', {kind} '{tensor}': the model expects dims {shape} but the model configuration specifies dims {dims}",
      when: 'A fixed graph dimension differs from the config.',
    },
    (model: string, kind: string, tensor: string, shape: readonly number[], dims: readonly number[]) => ({
      model,
      kind,
      tensor,
      shape: fmt(shape),
      dims: fmt(dims),
    }),
  ),
  onnxParameterInteger: entry(
    {
      code: INVALID_ARG,
      text: "failed to parse parameter '{key}' of model '{model}': expected a non-negative integer, got '{raw}'",
      when: 'A numeric session parameter in config.pbtxt is not a non-negative integer.',
    },
    (key: string, model: string, raw: string) => ({ key, model, raw }),
  ),
  onnxParameterBool: entry(
    {
      code: INVALID_ARG,
      text: "failed to parse parameter '{key}' of model '{model}': expected 0/1 or true/false, got '{raw}'",
      when: 'A boolean session parameter in config.pbtxt is not 0/1/true/false.',
    },
    (key: string, model: string, raw: string) => ({ key, model, raw }),
  ),
  onnxNoTensorType: entry(
    {
      code: INVALID_ARG,
      text: "input '{input}' of model '{model}': onnxruntime-node has no {datatype} tensors",
      when: 'An input datatype onnxruntime-node cannot build.',
    },
    (input: string, model: string, datatype: string) => ({ input, model, datatype }),
  ),
  onnxSession: entry(
    {
      code: INTERNAL,
      text: "unable to create an onnxruntime session for instance '{instance}' of model '{model}': {cause}",
      when: 'No execution provider could open the graph.',
    },
    (instance: string, model: string, cause: string) => ({ instance, model, cause }),
  ),
  onnxInstanceNotReady: entry(
    {
      code: UNAVAILABLE,
      reason: 'BACKEND',
      text: "instance '{instance}' of model '{model}' is not ready",
      when: 'A batch reaches an instance whose session is restarting.',
    },
    (instance: string, model: string) => ({ instance, model }),
  ),
  onnxRunFailed: entry({ code: INTERNAL, reason: 'BACKEND', text: 'onnxruntime error: {cause}', when: 'session.run failed.' }, (cause: string) => ({ cause })),
  onnxNoOutputs: entry({ code: INTERNAL, reason: 'BACKEND', text: 'onnxruntime returned no outputs', when: 'session.run returned nothing.' }, () => ({})),
  onnxMissingOutput: entry(
    { code: INTERNAL, reason: 'BACKEND', text: "onnxruntime did not return output '{output}'", when: 'A requested output is absent from the run result.' },
    (output: string) => ({ output }),
  ),
  onnxStringCount: entry(
    {
      code: INTERNAL,
      reason: 'BACKEND',
      text: "input '{input}' has {got} string elements, expected {expected}",
      when: 'A BYTES batch has the wrong element count.',
    },
    (input: string, got: number, expected: number) => ({ input, got, expected }),
  ),
  onnxByteCount: entry(
    { code: INTERNAL, reason: 'BACKEND', text: "input '{input}' has {got} bytes, expected {expected}", when: 'A batch input has the wrong byte size.' },
    (input: string, got: number, expected: number) => ({ input, got, expected }),
  ),
  onnxOutputBatch: entry(
    {
      code: INTERNAL,
      reason: 'BACKEND',
      text: "output '{output}' has shape {shape}; expected a first dimension of {total} (the batch)",
      when: 'An output of a batched run is not batch-major.',
    },
    (output: string, dims: readonly number[], total: number) => ({ output, shape: fmt(dims), total }),
  ),
  cudaInstallPlatform: entry(
    {
      code: UNAVAILABLE,
      text: "tritium install-cuda needs Linux on x86_64 or aarch64 (the platforms of PyPI's onnxruntime-gpu wheels); this is {platform}/{arch}",
      when: '`tritium install-cuda` runs on another platform.',
    },
    (platform: string, arch: string) => ({ platform, arch }),
  ),
  cudaInstallPip: entry(
    {
      code: UNAVAILABLE,
      text: 'cannot run pip with {python} ({cause}); install pip for that interpreter or name another with --python',
      when: '`tritium install-cuda`: the interpreter it downloads with has no pip, or does not run.',
    },
    (python: string, cause: string) => ({ python, cause }),
  ),
  cudaInstallNoWheel: entry(
    {
      code: UNAVAILABLE,
      text: 'pip found no onnxruntime-gpu=={version} for this platform. onnxruntime-node is {version}, and its CUDA provider must come from the very same version. pip said: {cause}',
      when: "`tritium install-cuda`: the package index has no onnxruntime-gpu wheel of onnxruntime-node's version.",
    },
    (version: string, cause: string) => ({ version, cause }),
  ),
  cudaInstallWheelVersion: entry(
    {
      code: INTERNAL,
      text: 'pip installed onnxruntime-gpu {got}, not {version} (the version of onnxruntime-node)',
      when: '`tritium install-cuda`: the wheel pip installed reports another version.',
    },
    (got: string, version: string) => ({ got, version }),
  ),
  cudaInstallWheelIncomplete: entry(
    {
      code: UNAVAILABLE,
      text: 'the onnxruntime-gpu {version} wheel has no {file}: it does not carry the CUDA execution provider',
      when: '`tritium install-cuda`: a provider library is absent from the wheel.',
    },
    (version: string, file: string) => ({ version, file }),
  ),
  cudaInstallLibraries: entry(
    {
      code: UNAVAILABLE,
      text: 'pip could not install the CUDA libraries onnxruntime-gpu {version} asks for ({requirements}): {cause}',
      when: '`tritium install-cuda`: pip failed on the nvidia-* wheels.',
    },
    (version: string, requirements: readonly string[], cause: string) => ({ version, requirements: requirements.join(', '), cause }),
  ),
  cudaInstallMissing: entry(
    {
      code: UNAVAILABLE,
      text: 'the installed CUDA libraries lack {missing}; the packages pip installed were {packages}',
      when: '`tritium install-cuda`: a library the CUDA provider (or one of its libraries) needs is in none of the installed packages.',
    },
    (missing: readonly string[], packages: readonly string[]) => ({ missing: missing.join(', '), packages: packages.join(', ') || 'none' }),
  ),
} as const;
