/**
 * @module core/errors/ensemble
 * Catalogue: ensembles (`platform: "ensemble"`). The load-time texts are tritonserver 2.51's,
 * checked against it (docs/protocol-notes.md, "Ensembles"), stray quotes included; the ones
 * Triton has no text for are ours and say so in their `when`.
 */
import { entry } from './entry.js';
import { ErrorCode, type TritonError } from './triton-error.js';

const { INVALID_ARG, INTERNAL } = ErrorCode;

export const ensemble = {
  ensembleSchedulingMissing: entry(
    {
      code: INVALID_ARG,
      text: 'ensemble scheduling must be set for ensemble {model} whose platform is ensemble',
      when: 'An ensemble config without `ensemble_scheduling` (logged after "Poll failed for model directory").',
    },
    (model: string) => ({ model }),
  ),
  ensembleNoSteps: entry(
    {
      code: INVALID_ARG,
      text: "ensemble '{model}' must have at least one step in ensemble_scheduling",
      when: 'An ensemble whose `ensemble_scheduling` lists no step (tritium text).',
    },
    (model: string) => ({ model }),
  ),
  ensembleStepNoModel: entry(
    {
      code: INVALID_ARG,
      text: "ensemble '{model}' step {step}: must specify 'model_name'",
      when: 'A step without `model_name` (tritium text).',
    },
    (model: string, step: number) => ({ model, step }),
  ),
  ensembleOutputTwice: entry(
    {
      code: INVALID_ARG,
      text: "ensemble tensor '{tensor}' can appear in an output map only once for ensemble '{model}' step {step}",
      when: 'Two steps (or one step twice) write the same ensemble tensor; {step} is the index of the second writer.',
    },
    (tensor: string, model: string, step: number) => ({ tensor, model, step }),
  ),
  ensembleInputUnused: entry(
    {
      code: INVALID_ARG,
      text: "ensemble input '{tensor}' for ensemble {model}' is not used",
      when: "An input of the ensemble is read by no step (Triton's text, stray quote included).",
    },
    (tensor: string, model: string) => ({ tensor, model }),
  ),
  ensembleOutputUnused: entry(
    {
      code: INVALID_ARG,
      text: "ensemble output '{tensor}' for ensemble {model}' is not used",
      when: "An output of the ensemble is written by no step (Triton's text, stray quote included).",
    },
    (tensor: string, model: string) => ({ tensor, model }),
  ),
  ensembleOutputNotWritten: entry(
    {
      code: INVALID_ARG,
      text: "output '{output}' for ensemble '{model}' is not written: at least one of its depending tensors, '{tensor}', is not connected",
      when: 'An ensemble output depends on a tensor that no step produces, or on a cycle of steps ({tensor} is where the walk back from the output stopped).',
    },
    (output: string, model: string, tensor: string) => ({ output, model, tensor }),
  ),
  ensembleTensorUnused: entry(
    {
      code: INVALID_ARG,
      text: "ensemble tensor '{tensor}' is unused in ensemble '{model}'",
      when: 'A step writes a tensor that no step reads and that is not an ensemble output.',
    },
    (tensor: string, model: string) => ({ tensor, model }),
  ),
  ensembleModelsUnavailable: entry(
    {
      code: INVALID_ARG,
      text: 'ensemble {model} contains models that are not available or ambiguous: {models}',
      when: 'A step names a model that is not in the repositories or failed to load.',
    },
    (model: string, models: string[]) => ({ model, models: models.join(', ') }),
  ),
  ensembleVersionNotLoaded: entry(
    {
      code: INVALID_ARG,
      text: "ensemble '{model}' depends on '{step}' whose required version {version} is not loaded.",
      when: "A step's `model_version` is not a loaded version of its model.",
    },
    (model: string, step: string, version: string) => ({ model, step, version }),
  ),
  ensembleCircular: entry(
    {
      code: INVALID_ARG,
      text: 'circular dependency between ensembles: {model} -> ... -> {last} -> {model}',
      when: 'Ensembles name each other as steps, directly or through others; each ensemble of the circle fails with the circle seen from it ({last}: the one that names it).',
    },
    (model: string, last: string) => ({ model, last }),
  ),
  ensembleBatchSize: entry(
    {
      code: INVALID_ARG,
      text: 'ensemble {model} allows maximum batch size {ensembleMax}, but it contains model {step} which only allows maximum batch size to be {stepMax}',
      when: "The ensemble's max_batch_size exceeds a batching step model's.",
    },
    (model: string, ensembleMax: number, step: string, stepMax: number) => ({ model, ensembleMax, step, stepMax }),
  ),
  ensembleStepInputUnknown: entry(
    {
      code: INVALID_ARG,
      text: 'in ensemble {model}, ensemble tensor {tensor} is mapping to non-existing input {input} in model {step}',
      when: "An `input_map` key is not an input of the step's model.",
    },
    (model: string, tensor: string, input: string, step: string) => ({ model, tensor, input, step }),
  ),
  ensembleStepOutputUnknown: entry(
    {
      code: INVALID_ARG,
      text: 'in ensemble {model}, ensemble tensor {tensor} is mapped from non-existing output {output} in model {step}',
      when: "An `output_map` key is not an output of the step's model.",
    },
    (model: string, tensor: string, output: string, step: string) => ({ model, tensor, output, step }),
  ),
  ensembleStepInputUnmapped: entry(
    {
      code: INVALID_ARG,
      text: 'in ensemble {model}, input {input} in model {step} is not mapped to any ensemble tensors',
      when: "A required input of a step's model has no `input_map` entry.",
    },
    (model: string, input: string, step: string) => ({ model, input, step }),
  ),
  ensembleDataTypeMismatch: entry(
    {
      code: INVALID_ARG,
      text: 'in ensemble {model}, ensemble tensor {tensor}: inconsistent data type: {first} is inferred from model {firstModel} while {second} is inferred from model {secondModel}',
      when: 'Two ends of an ensemble tensor (the ensemble itself, a producing or consuming step) disagree on its data type.',
    },
    (model: string, tensor: string, first: string, firstModel: string, second: string, secondModel: string) => ({
      model,
      tensor,
      first,
      firstModel,
      second,
      secondModel,
    }),
  ),
  ensembleShapeMismatch: entry(
    {
      code: INVALID_ARG,
      text: 'in ensemble {model}, ensemble tensor {tensor}: inconsistent shape: {first} is inferred from model {firstModel} while {second} is inferred from model {secondModel}',
      when: 'Two ends of an ensemble tensor disagree on its dims (-1 matches any size).',
    },
    (model: string, tensor: string, first: string, firstModel: string, second: string, secondModel: string) => ({
      model,
      tensor,
      first,
      firstModel,
      second,
      secondModel,
    }),
  ),
  ensembleDecoupledOrigins: entry(
    {
      code: INVALID_ARG,
      text: "in ensemble {model}, step {step} of model '{stepModel}' receives inputs originated from different decoupled models",
      when: 'A step reads tensors produced downstream of two unrelated decoupled steps, whose responses cannot be paired.',
    },
    (model: string, step: number, stepModel: string) => ({ model, step, stepModel }),
  ),
  ensembleDependencyLoadFailed: entry(
    {
      code: INVALID_ARG,
      text: "load failed for model '{model}': {cause}\n",
      when: "An ensemble's composing models failed the checks above when it loads (the index shows the ensemble UNAVAILABLE with {cause}).",
    },
    (model: string, cause: string) => ({ model, cause }),
  ),
  ensembleOutputMissing: entry(
    {
      code: INTERNAL,
      text: "in ensemble '{model}', [request id: {id}] unexpected deadlock, at least one output is not set while no more ensemble steps can be made",
      when: 'A (non-decoupled) ensemble request ended without one of its outputs, e.g. a decoupled step that sent no response ({id}: the request id, `<id_unknown>` when none).',
    },
    (model: string, id: string) => ({ model, id: id === '' ? '<id_unknown>' : id }),
  ),
  ensembleStepFailed: entry(
    {
      code: 'varies',
      text: "in ensemble '{model}', {message}",
      when: "A step's request failed (the model's error, a validation or lookup error, a cancellation): the ensemble request fails with the step's code and text, prefixed as Triton 2.51 does.",
    },
    (model: string, cause: TritonError) => ({ model, message: cause.message, $code: cause.code, $reason: cause.reason }),
  ),
} as const;
