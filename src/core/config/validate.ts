/**
 * Load-time checks on a normalised ModelConfig (docs/protocol-notes.md,
 * "Model configuration normalisation", "Python backend parameters", "Model warmup").
 * Every problem is a ConfigError naming the file and the field path
 * (`input[0].dims`), and the line when a SourceMap from the parser is given.
 */
import {
  DataType,
  ModelInstanceGroup_Kind,
  ModelQueuePolicy_TimeoutAction,
  type ModelConfig,
  type ModelInput,
  type ModelOutput,
  type ModelQueuePolicy,
} from '../../generated/model_config_pb.js';
import type { ConfigError } from './config-error.js';
import { Errors } from '../errors.js';
import { BACKEND_OF_PLATFORM } from './infer-backend.js';
import type { SourceMap } from './text-format.js';

export interface ValidateContext {
  /** Directory name of the model; `name` must equal it. */
  modelName?: string;
  /** Usable GPU ids on this host; KIND_GPU groups may only use these. */
  gpus?: readonly number[];
  /** From parseModelConfigTextWithPositions, to add line numbers. */
  positions?: SourceMap;
}

const WILDCARD = -1n;

/** Throws the first problem found (see findConfigProblems). */
export function validateModelConfig(cfg: ModelConfig, file: string, ctx: ValidateContext = {}): void {
  const problems = findConfigProblems(cfg, file, ctx);
  if (problems.length > 0) throw problems[0];
}

/** Every problem found, in config order; empty when the config is valid. */
export function findConfigProblems(cfg: ModelConfig, file: string, ctx: ValidateContext = {}): ConfigError[] {
  const problems: ConfigError[] = [];
  const model = cfg.name || ctx.modelName || '';
  const report = (field: string, text: string): void => {
    const at = lookupPosition(ctx.positions, field);
    problems.push(Errors.configInvalid({ file, line: at?.line, field }, file, field, text, at?.line, at?.column));
  };

  // name
  if (ctx.modelName !== undefined && cfg.name !== '' && cfg.name !== ctx.modelName) {
    report('name', `model name '${cfg.name}' does not match the model directory name '${ctx.modelName}'`);
  }

  // backend / platform
  const isEnsemble = cfg.platform === 'ensemble';
  if (cfg.backend === '' && cfg.platform === '') {
    report('backend', `must specify 'backend' or 'platform' for model '${model}' (no model file was recognised)`);
  } else if (isEnsemble && cfg.backend !== '') {
    report('backend', `ensemble model '${model}' must not specify a backend ('${cfg.backend}')`);
  } else if (cfg.backend !== '' && cfg.platform !== '' && !isEnsemble) {
    const expected = BACKEND_OF_PLATFORM.get(cfg.platform);
    const knownBackend = [...BACKEND_OF_PLATFORM.values()].includes(cfg.backend);
    if (knownBackend && expected !== cfg.backend) {
      report('platform', `platform '${cfg.platform}' does not match backend '${cfg.backend}' for model '${model}'`);
    }
  }
  if (!isEnsemble && cfg.schedulingChoice.case === 'ensembleScheduling') {
    report('ensemble_scheduling', `ensemble scheduling cannot be set for model '${model}' whose platform is not ensemble`);
  }

  // max_batch_size
  if (cfg.maxBatchSize < 0) {
    report('max_batch_size', `must be >= 0, got ${cfg.maxBatchSize}`);
  }

  // inputs and outputs
  checkTensors('input', cfg.input, cfg.maxBatchSize, report);
  checkTensors('output', cfg.output, cfg.maxBatchSize, report);

  // scheduling
  const sched = cfg.schedulingChoice;
  if (sched.case === 'dynamicBatching') {
    const db = sched.value;
    checkPreferred('dynamic_batching.preferred_batch_size', db.preferredBatchSize, cfg.maxBatchSize, report);
    const levels = db.priorityLevels;
    if (levels > 0n && (db.defaultPriorityLevel < 1n || db.defaultPriorityLevel > levels)) {
      report('dynamic_batching.default_priority_level', `default priority level must be in range [1, ${levels}], got ${db.defaultPriorityLevel}`);
    }
    for (const key of Object.keys(db.priorityQueuePolicy)) {
      const level = BigInt(key);
      if (level < 1n || level > levels) {
        report(`dynamic_batching.priority_queue_policy[${key}]`, `priority queue policy level ${key} must be in range [1, ${levels}] (priority_levels)`);
      }
    }
    if (db.preserveOrdering) {
      if (levels > 1n) {
        report('dynamic_batching.preserve_ordering', 'preserve_ordering cannot be used with more than one priority level');
      }
      const policies: Array<[string, ModelQueuePolicy | undefined]> = [
        ['dynamic_batching.default_queue_policy', db.defaultQueuePolicy],
        ...Object.entries(db.priorityQueuePolicy).map(([k, v]) => [`dynamic_batching.priority_queue_policy[${k}]`, v] as [string, ModelQueuePolicy]),
      ];
      for (const [path, policy] of policies) {
        if (policy?.timeoutAction === ModelQueuePolicy_TimeoutAction.DELAY) {
          report(`${path}.timeout_action`, 'preserve_ordering cannot be used with timeout_action DELAY');
        }
      }
    }
  } else if (sched.case === 'sequenceBatching') {
    const strategy = sched.value.strategyChoice;
    if (strategy.case === 'oldest') {
      checkPreferred('sequence_batching.oldest.preferred_batch_size', strategy.value.preferredBatchSize, cfg.maxBatchSize, report);
    }
  }

  // response cache
  if (cfg.responseCache?.enable) {
    if (sched.case === 'sequenceBatching') {
      report('response_cache.enable', `response cache is not supported for model '${model}' with sequence batching`);
    }
    if (cfg.modelTransactionPolicy?.decoupled) {
      report('response_cache.enable', `response cache is not supported for decoupled model '${model}'`);
    }
  }

  // instance groups
  if (isEnsemble && cfg.instanceGroup.length > 0) {
    report('instance_group', `instance group should not be specified for ensemble '${model}'`);
  }
  // Ensemble groups are never normalised, so their fields say nothing more.
  (isEnsemble ? [] : cfg.instanceGroup).forEach((g, i) => {
    const path = `instance_group[${i}]`;
    const label = `instance group '${g.name}' of model '${model}'`;
    if (g.count < 1) report(`${path}.count`, `${label} must have count >= 1, got ${g.count}`);
    switch (g.kind) {
      case ModelInstanceGroup_Kind.GPU: {
        const hostGpus = ctx.gpus;
        if ((hostGpus !== undefined && hostGpus.length === 0) || (hostGpus === undefined && g.gpus.length === 0)) {
          report(`${path}.kind`, `${label} has kind KIND_GPU but this host has no GPU; use KIND_CPU`);
        } else if (hostGpus !== undefined) {
          for (const id of g.gpus) {
            if (!hostGpus.includes(id)) {
              report(`${path}.gpus`, `${label} specifies GPU ${id}, but the usable GPUs are: ${hostGpus.join(', ')}`);
            }
          }
        }
        break;
      }
      case ModelInstanceGroup_Kind.CPU:
      case ModelInstanceGroup_Kind.MODEL:
        if (g.gpus.length > 0) {
          const kind = g.kind === ModelInstanceGroup_Kind.CPU ? 'KIND_CPU' : 'KIND_MODEL';
          report(`${path}.gpus`, `${label} has kind ${kind} but specifies one or more GPUs`);
        }
        break;
      case ModelInstanceGroup_Kind.AUTO:
        break; // resolved by normalisation
      default:
        report(`${path}.kind`, `${label} has unknown kind ${g.kind}`);
    }
  });

  // Python backend parameter (docs/protocol-notes.md, "Python backend parameters"); the text is Triton's, quote included.
  const force = cfg.parameters['FORCE_CPU_ONLY_INPUT_TENSORS'];
  if (cfg.backend === 'python' && force !== undefined) {
    const v = force.stringValue;
    if (v !== 'yes' && v !== 'no') {
      report('parameters[FORCE_CPU_ONLY_INPUT_TENSORS].string_value', `Incorrect value for FORCE_CPU_ONLY_INPUT_TENSORS: ${v}'`);
    }
  }

  // warmup (docs/protocol-notes.md, "Model warmup")
  if (isEnsemble && cfg.modelWarmup.length > 0) {
    report('model_warmup', `model_warmup can not be specified for ensemble '${model}'`);
  }
  cfg.modelWarmup.forEach((w, i) => {
    const label = `warmup sample '${w.name}'`;
    for (const [inputName, input] of Object.entries(w.inputs)) {
      const path = `model_warmup[${i}].inputs[${inputName}]`;
      if (input.dataType === DataType.TYPE_INVALID) {
        report(`${path}.data_type`, `${label} must specify 'data_type' for input '${inputName}'`);
      }
      if (input.dims.some((d) => d < 0n)) {
        report(`${path}.dims`, `${label}: warmup setting expects all variable-size dimensions are specified for input '${inputName}'`);
      }
      if (input.inputDataType.case === undefined) {
        report(path, `${label} must specify one of 'zero_data', 'random_data' or 'input_data_file' for input '${inputName}'`);
      } else if (input.inputDataType.case === 'inputDataFile') {
        const f = input.inputDataType.value;
        // The file lives in <model>/warmup/; refuse names that leave it.
        if (f === '' || f.startsWith('/') || f.split(/[\\/]/).includes('..')) {
          report(`${path}.input_data_file`, `${label}: input_data_file '${f}' must name a file inside the model's warmup directory`);
        }
      }
    }
  });

  return problems;
}

type Report = (field: string, text: string) => void;

function checkTensors(kind: 'input' | 'output', tensors: Array<ModelInput | ModelOutput>, maxBatchSize: number, report: Report): void {
  const seen = new Set<string>();
  tensors.forEach((t, i) => {
    const path = `${kind}[${i}]`;
    const label = `model ${kind} '${t.name}'`;
    if (t.name === '') {
      report(`${path}.name`, `model ${kind} ${i} must specify 'name'`);
    } else if (seen.has(t.name)) {
      report(`${path}.name`, `${label} is specified more than once`);
    }
    seen.add(t.name);
    if (t.dataType === DataType.TYPE_INVALID) report(`${path}.data_type`, `${label} must specify 'data_type'`);
    if (t.dims.length === 0) report(`${path}.dims`, `${label} must specify 'dims'`);
    if (t.dims.some((d) => d < 1n && d !== WILDCARD)) {
      report(`${path}.dims`, `${label} dimension must be integer >= 1, or -1 to indicate a variable-size dimension`);
    }
    const reshape = t.reshape;
    if (reshape === undefined) return;
    if (reshape.shape.length === 0 && maxBatchSize === 0) {
      report(`${path}.reshape`, `${label} cannot have empty reshape for non-batching model`);
    }
    if (reshape.shape.some((d) => d < 1n && d !== WILDCARD)) {
      report(`${path}.reshape.shape`, `${label} reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension`);
      return;
    }
    const problem = reshapeMismatch(t.dims, reshape.shape);
    if (problem) report(`${path}.reshape.shape`, `${label} ${problem}`);
  });
}

/**
 * dims and reshape must hold the same number of elements. With variable-size
 * dims, the fixed runs between the -1s must match pairwise (e.g. [2,4,-1,6]
 * → [8,-1,1,6]). An empty reshape (a scalar) needs exactly one element.
 */
function reshapeMismatch(dims: readonly bigint[], shape: readonly bigint[]): string | undefined {
  const runs = (ds: readonly bigint[]): bigint[] => {
    const out: bigint[] = [1n];
    for (const d of ds) {
      if (d === WILDCARD) out.push(1n);
      else out[out.length - 1] = out[out.length - 1]! * d;
    }
    return out;
  };
  const a = runs(dims);
  const b = runs(shape);
  if (a.length !== b.length) {
    return a.length === 1 || b.length === 1
      ? 'has different size for dims and reshape'
      : 'has different number of variable-size dimensions for dims and reshape';
  }
  return a.every((n, i) => n === b[i]) ? undefined : 'has different size for dims and reshape';
}

function checkPreferred(path: string, sizes: readonly number[], maxBatchSize: number, report: Report): void {
  for (const size of sizes) {
    if (size <= 0) {
      report(path, `preferred batch size ${size} must be positive`);
    } else if (size > maxBatchSize) {
      report(path, `preferred batch size ${size} must be <= max_batch_size ${maxBatchSize}`);
    }
  }
}

/** Position of `field`, or of its nearest recorded parent. */
function lookupPosition(positions: SourceMap | undefined, field: string): { line: number; column: number } | undefined {
  if (positions === undefined) return undefined;
  let path = field;
  for (;;) {
    const at = positions.get(path);
    if (at !== undefined) return at;
    const cut = Math.max(path.lastIndexOf('.'), path.lastIndexOf('['));
    if (cut <= 0) return undefined;
    path = path.slice(0, cut);
  }
}
