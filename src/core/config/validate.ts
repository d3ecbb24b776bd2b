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
import type { ConfigError } from '../errors/config-error.js';
import { Errors } from '../errors.js';
import type { Report, RuleEntry } from '../errors/config-rules.js';
import { BACKEND_OF_PLATFORM } from './infer-backend.js';
import { checkSequenceBatching } from './validate-sequence.js';
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
  const report: Report = (field, rule, ...args) => {
    const at = lookupPosition(ctx.positions, field);
    problems.push(rule({ file, field, line: at?.line, column: at?.column }, ...args));
  };

  // name
  if (ctx.modelName !== undefined && cfg.name !== '' && cfg.name !== ctx.modelName) {
    report('name', Errors.ruleNameMismatch, cfg.name, ctx.modelName);
  }

  // backend / platform
  const isEnsemble = cfg.platform === 'ensemble';
  if (cfg.backend === '' && cfg.platform === '') {
    report('backend', Errors.ruleNoBackend, model);
  } else if (isEnsemble && cfg.backend !== '') {
    report('backend', Errors.ruleEnsembleBackend, model, cfg.backend);
  } else if (cfg.backend !== '' && cfg.platform !== '' && !isEnsemble) {
    const expected = BACKEND_OF_PLATFORM.get(cfg.platform);
    const knownBackend = [...BACKEND_OF_PLATFORM.values()].includes(cfg.backend);
    if (knownBackend && expected !== cfg.backend) {
      report('platform', Errors.rulePlatformBackend, cfg.platform, cfg.backend, model);
    }
  }
  if (!isEnsemble && cfg.schedulingChoice.case === 'ensembleScheduling') {
    report('ensemble_scheduling', Errors.ruleEnsembleScheduling, model);
  }

  // max_batch_size
  if (cfg.maxBatchSize < 0) {
    report('max_batch_size', Errors.ruleMaxBatchSize, cfg.maxBatchSize);
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
      report('dynamic_batching.default_priority_level', Errors.ruleDefaultPriority, levels, db.defaultPriorityLevel);
    }
    for (const key of Object.keys(db.priorityQueuePolicy)) {
      const level = BigInt(key);
      if (level < 1n || level > levels) {
        report(`dynamic_batching.priority_queue_policy[${key}]`, Errors.rulePriorityPolicyLevel, key, levels);
      }
    }
    if (db.preserveOrdering) {
      if (levels > 1n) {
        report('dynamic_batching.preserve_ordering', Errors.rulePreserveOrderingLevels);
      }
      const policies: Array<[string, ModelQueuePolicy | undefined]> = [
        ['dynamic_batching.default_queue_policy', db.defaultQueuePolicy],
        ...Object.entries(db.priorityQueuePolicy).map(([k, v]) => [`dynamic_batching.priority_queue_policy[${k}]`, v] as [string, ModelQueuePolicy]),
      ];
      for (const [path, policy] of policies) {
        if (policy?.timeoutAction === ModelQueuePolicy_TimeoutAction.DELAY) {
          report(`${path}.timeout_action`, Errors.rulePreserveOrderingDelay);
        }
      }
    }
  } else if (sched.case === 'sequenceBatching') {
    checkSequenceBatching(sched.value, model, report);
    const strategy = sched.value.strategyChoice;
    if (strategy.case === 'oldest') {
      checkPreferred('sequence_batching.oldest.preferred_batch_size', strategy.value.preferredBatchSize, cfg.maxBatchSize, report);
    }
  }

  // response cache
  if (cfg.responseCache?.enable) {
    if (sched.case === 'sequenceBatching') {
      report('response_cache.enable', Errors.ruleCacheSequence, model);
    }
    if (cfg.modelTransactionPolicy?.decoupled) {
      report('response_cache.enable', Errors.ruleCacheDecoupled, model);
    }
  }

  // instance groups
  if (isEnsemble && cfg.instanceGroup.length > 0) {
    report('instance_group', Errors.ruleEnsembleInstances, model);
  }
  // Ensemble groups are never normalised, so their fields say nothing more.
  (isEnsemble ? [] : cfg.instanceGroup).forEach((g, i) => {
    const path = `instance_group[${i}]`;
    if (g.count < 1) report(`${path}.count`, Errors.ruleInstanceCount, g.name, model, g.count);
    switch (g.kind) {
      case ModelInstanceGroup_Kind.GPU: {
        const hostGpus = ctx.gpus;
        // A host known to have no GPU: the config is valid, each version's load fails (as in
        // Triton 2.51, a version failure, not a refused config: core/model/model-control.ts).
        if (hostGpus === undefined && g.gpus.length === 0) {
          report(`${path}.kind`, Errors.ruleInstanceNoGpu, g.name, model);
        } else if (hostGpus !== undefined && hostGpus.length > 0) {
          for (const id of g.gpus) {
            if (!hostGpus.includes(id)) {
              report(`${path}.gpus`, Errors.ruleInstanceGpuId, g.name, model, id, hostGpus);
            }
          }
        }
        break;
      }
      case ModelInstanceGroup_Kind.CPU:
      case ModelInstanceGroup_Kind.MODEL:
        if (g.gpus.length > 0) {
          const kind = g.kind === ModelInstanceGroup_Kind.CPU ? 'KIND_CPU' : 'KIND_MODEL';
          report(`${path}.gpus`, Errors.ruleInstanceGpusForKind, g.name, model, kind);
        }
        break;
      case ModelInstanceGroup_Kind.AUTO:
        break; // resolved by normalisation
      default:
        report(`${path}.kind`, Errors.ruleInstanceKind, g.name, model, g.kind);
    }
  });

  // Python backend parameter (docs/protocol-notes.md, "Python backend parameters"); the text is Triton's, quote included.
  const force = cfg.parameters['FORCE_CPU_ONLY_INPUT_TENSORS'];
  if (cfg.backend === 'python' && force !== undefined) {
    const v = force.stringValue;
    if (v !== 'yes' && v !== 'no') {
      report('parameters[FORCE_CPU_ONLY_INPUT_TENSORS].string_value', Errors.ruleForceCpuOnly, v);
    }
  }

  const concurrent = cfg.parameters['CONCURRENT_ASYNC_EXECUTES'];
  if (concurrent !== undefined && !/^[1-9]\d*$/.test(concurrent.stringValue)) {
    report('parameters[CONCURRENT_ASYNC_EXECUTES].string_value', Errors.ruleConcurrentExecutes, JSON.stringify(concurrent.stringValue));
  }

  // warmup (docs/protocol-notes.md, "Model warmup")
  // model_warmup on an ensemble is accepted, beyond Triton (which refuses it): every step is
  // warmed with real intermediate tensors (core/model/warmup.ts, docs/design.md "Ensembles").
  cfg.modelWarmup.forEach((w, i) => {
    for (const [inputName, input] of Object.entries(w.inputs)) {
      const path = `model_warmup[${i}].inputs[${inputName}]`;
      if (input.dataType === DataType.TYPE_INVALID) {
        report(`${path}.data_type`, Errors.ruleWarmupDataType, w.name, inputName);
      }
      if (input.dims.some((d) => d < 0n)) {
        report(`${path}.dims`, Errors.ruleWarmupDims, w.name, inputName);
      }
      if (input.inputDataType.case === undefined) {
        report(path, Errors.ruleWarmupSource, w.name, inputName);
      } else if (input.inputDataType.case === 'inputDataFile') {
        const f = input.inputDataType.value;
        // The file lives in <model>/warmup/; refuse names that leave it.
        if (f === '' || f.startsWith('/') || f.split(/[\\/]/).includes('..')) {
          report(`${path}.input_data_file`, Errors.ruleWarmupFile, w.name, f);
        }
      }
    }
  });

  return problems;
}

/** Records that `field` breaks `rule` (a catalogue entry, docs/errors.md). */
function checkTensors(kind: 'input' | 'output', tensors: Array<ModelInput | ModelOutput>, maxBatchSize: number, report: Report): void {
  const seen = new Set<string>();
  tensors.forEach((t, i) => {
    const path = `${kind}[${i}]`;
    if (t.name === '') {
      report(`${path}.name`, Errors.ruleTensorName, kind, i);
    } else if (seen.has(t.name)) {
      report(`${path}.name`, Errors.ruleTensorDuplicate, kind, t.name);
    }
    seen.add(t.name);
    if (t.dataType === DataType.TYPE_INVALID) report(`${path}.data_type`, Errors.ruleTensorDataType, kind, t.name);
    if (t.dims.length === 0) report(`${path}.dims`, Errors.ruleTensorNoDims, kind, t.name);
    if (t.dims.some((d) => d < 1n && d !== WILDCARD)) {
      report(`${path}.dims`, Errors.ruleTensorDims, kind, t.name);
    }
    const reshape = t.reshape;
    if (reshape === undefined) return;
    if (reshape.shape.length === 0 && maxBatchSize === 0) {
      report(`${path}.reshape`, Errors.ruleEmptyReshape, kind, t.name);
    }
    if (reshape.shape.some((d) => d < 1n && d !== WILDCARD)) {
      report(`${path}.reshape.shape`, Errors.ruleReshapeDims, kind, t.name);
      return;
    }
    const problem = reshapeMismatch(t.dims, reshape.shape);
    if (problem) report(`${path}.reshape.shape`, problem, kind, t.name);
  });
}

/**
 * dims and reshape must hold the same number of elements. With variable-size
 * dims, the fixed runs between the -1s must match pairwise (e.g. [2,4,-1,6]
 * → [8,-1,1,6]). An empty reshape (a scalar) needs exactly one element.
 */
function reshapeMismatch(dims: readonly bigint[], shape: readonly bigint[]): RuleEntry<[string, string]> | undefined {
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
    return a.length === 1 || b.length === 1 ? Errors.ruleReshapeSize : Errors.ruleReshapeVariable;
  }
  return a.every((n, i) => n === b[i]) ? undefined : Errors.ruleReshapeSize;
}

function checkPreferred(path: string, sizes: readonly number[], maxBatchSize: number, report: Report): void {
  for (const size of sizes) {
    if (size <= 0) {
      report(path, Errors.rulePreferredPositive, size);
    } else if (size > maxBatchSize) {
      report(path, Errors.rulePreferredMax, size, maxBatchSize);
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
