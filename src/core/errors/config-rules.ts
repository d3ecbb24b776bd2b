/**
 * @module core/errors/config-rules
 * Catalogue: the validation rules a parsed model configuration must pass
 * (core/config/validate.ts). Each rule's error reads `<where>: <field>: <text>`: where is
 * `file:line:column` when the field's position is known (else the file), field is the path of
 * the offending field.
 */
import { configEntries, type ConfigEntry } from './config-error.js';

/** The field a rule failed on, and where it was written. */
export interface RuleSite {
  file: string;
  field: string;
  line?: number;
  column?: number;
}

export type RuleEntry<A extends unknown[]> = ConfigEntry<RuleSite, A>;

/** How a config check reports a rule broken at `field` (core/config/validate.ts collects them). */
export type Report = <A extends unknown[]>(field: string, rule: RuleEntry<A>, ...args: A) => void;

const rule = configEntries('{where}: {field}: ', (site: RuleSite) => ({
  holes: { where: site.line !== undefined ? `${site.file}:${site.line}:${site.column ?? 0}` : site.file, field: site.field },
  at: { file: site.file, line: site.line, field: site.field },
}));

const none = () => ({});

export const configRules = {
  ruleNameMismatch: rule(
    { text: "model name '{name}' does not match the model directory name '{dir}'", when: 'name differs from the model directory.' },
    (name: string, dir: string) => ({ name, dir }),
  ),
  ruleNoBackend: rule(
    {
      text: "must specify 'backend' or 'platform' for model '{model}' (no model file was recognised)",
      when: 'Neither backend nor platform, and no model file says which.',
    },
    (model: string) => ({ model }),
  ),
  ruleEnsembleBackend: rule(
    { text: "ensemble model '{model}' must not specify a backend ('{backend}')", when: 'An ensemble names a backend.' },
    (model: string, backend: string) => ({ model, backend }),
  ),
  rulePlatformBackend: rule(
    { text: "platform '{platform}' does not match backend '{backend}' for model '{model}'", when: 'platform and backend name different runtimes.' },
    (platform: string, backend: string, model: string) => ({ platform, backend, model }),
  ),
  ruleEnsembleScheduling: rule(
    { text: "ensemble scheduling cannot be set for model '{model}' whose platform is not ensemble", when: 'ensemble_scheduling on a non-ensemble.' },
    (model: string) => ({ model }),
  ),
  ruleMaxBatchSize: rule({ text: 'must be >= 0, got {value}', when: 'max_batch_size is negative.' }, (value: number) => ({ value })),
  ruleDefaultPriority: rule(
    { text: 'default priority level must be in range [1, {levels}], got {value}', when: 'default_priority_level outside 1..priority_levels.' },
    (levels: bigint, value: bigint) => ({ levels, value }),
  ),
  rulePriorityPolicyLevel: rule(
    {
      text: 'priority queue policy level {level} must be in range [1, {levels}] (priority_levels)',
      when: 'priority_queue_policy for a level that does not exist.',
    },
    (level: string, levels: bigint) => ({ level, levels }),
  ),
  rulePreserveOrderingLevels: rule(
    { text: 'preserve_ordering cannot be used with more than one priority level', when: 'preserve_ordering with priority_levels > 1.' },
    none,
  ),
  rulePreserveOrderingDelay: rule(
    { text: 'preserve_ordering cannot be used with timeout_action DELAY', when: 'preserve_ordering with a DELAY queue policy.' },
    none,
  ),
  ruleSequenceControlName: rule(
    { text: 'sequence batching control tensor must have a name for {model}', when: 'A sequence_batching control_input without a name.' },
    (model: string) => ({ model }),
  ),
  ruleSequenceControlKinds: rule(
    {
      text: "sequence batching control tensor '{name}' is specified for multiple control kinds for {model}",
      when: 'Two sequence_batching control_input entries with one name.',
    },
    (name: string, model: string) => ({ name, model }),
  ),
  ruleSequenceControlMultiple: rule(
    { text: 'sequence batching specifies multiple {kind} tensors for {model}', when: 'One control kind (START, END, READY, CORRID) given twice.' },
    (kind: string, model: string) => ({ kind, model }),
  ),
  ruleSequenceControlValuesMissing: rule(
    {
      text: "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for {kind} for {model}",
      when: 'A START, END or READY control without its [false, true] values.',
    },
    (kind: string, model: string) => ({ kind, model }),
  ),
  ruleSequenceControlValuesMany: rule(
    {
      text: "sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for {kind} for {model}",
      when: 'A START, END or READY control with two lists of values.',
    },
    (kind: string, model: string) => ({ kind, model }),
  ),
  ruleSequenceControlValuesPair: rule(
    {
      text: "sequence batching control '{list}' must have exactly 2 entries for {kind} for {model}",
      when: 'The values of a START, END or READY control are not a [false, true] pair.',
    },
    (list: string, kind: string, model: string) => ({ list, kind, model }),
  ),
  ruleSequenceCorridValues: rule(
    {
      text: "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_CORRID for {model}",
      when: 'A CORRID control with [false, true] values.',
    },
    (model: string) => ({ model }),
  ),
  ruleSequenceCorridType: rule(
    {
      text: 'unexpected data type for control CONTROL_SEQUENCE_CORRID for {model}. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING',
      when: 'A CORRID control of another data type.',
    },
    (model: string) => ({ model }),
  ),
  ruleSequenceSlotUtilization: rule(
    {
      text: 'sequence batching minimum slot utilization must be in range (0.0, 1.0] for {model}',
      when: 'direct.minimum_slot_utilization outside [0, 1] (0, the default, is accepted as by Triton).',
    },
    (model: string) => ({ model }),
  ),
  ruleCacheSequence: rule(
    {
      text: 'Response Cache does not currently support model {model} with sequence batching scheduler. Please disable the response cache.',
      when: 'response_cache with sequence_batching (Triton 2.51 refuses it even when no cache is configured).',
    },
    (model: string) => ({ model }),
  ),
  ruleCacheDecoupled: rule(
    {
      text: "Response Cache does not currently support model {model} with 'decoupled' transaction policy. Please disable the response cache.",
      when: 'response_cache on a decoupled model (Triton 2.51 refuses it even when no cache is configured).',
    },
    (model: string) => ({ model }),
  ),
  ruleEnsembleInstances: rule(
    { text: "instance group should not be specified for ensemble '{model}'", when: 'instance_group on an ensemble.' },
    (model: string) => ({ model }),
  ),
  ruleInstanceCount: rule(
    { text: "instance group '{group}' of model '{model}' must have count >= 1, got {count}", when: 'An instance group count below 1.' },
    (group: string, model: string, count: number) => ({ group, model, count }),
  ),
  ruleInstanceNoGpu: rule(
    { text: "instance group '{group}' of model '{model}' has kind KIND_GPU but this host has no GPU; use KIND_CPU", when: 'KIND_GPU on a host without GPUs.' },
    (group: string, model: string) => ({ group, model }),
  ),
  ruleInstanceGpuId: rule(
    {
      text: "instance group '{group}' of model '{model}' specifies GPU {gpu}, but the usable GPUs are: {gpus}",
      when: 'An instance group names a GPU the host does not have.',
    },
    (group: string, model: string, gpu: number, gpus: readonly number[]) => ({ group, model, gpu, gpus: gpus.join(', ') }),
  ),
  ruleInstanceGpusForKind: rule(
    { text: "instance group '{group}' of model '{model}' has kind {kind} but specifies one or more GPUs", when: 'KIND_CPU/KIND_MODEL with gpus.' },
    (group: string, model: string, kind: string) => ({ group, model, kind }),
  ),
  ruleInstanceKind: rule(
    { text: "instance group '{group}' of model '{model}' has unknown kind {kind}", when: 'An instance group kind outside the enum.' },
    (group: string, model: string, kind: number) => ({ group, model, kind }),
  ),
  ruleForceCpuOnly: rule(
    {
      text: "Incorrect value for FORCE_CPU_ONLY_INPUT_TENSORS: {value}'",
      when: "FORCE_CPU_ONLY_INPUT_TENSORS other than yes/no (Triton's text, stray quote included).",
    },
    (value: string) => ({ value }),
  ),
  ruleConcurrentExecutes: rule(
    {
      text: 'CONCURRENT_ASYNC_EXECUTES must be a positive whole number of coroutines, got {value}',
      when: "The Python model parameter CONCURRENT_ASYNC_EXECUTES (tritium's: how many `async def execute` coroutines of a non-decoupled instance run at once) is not a positive integer.",
    },
    (value: string) => ({ value }),
  ),
  ruleWarmupDataType: rule(
    { text: "warmup sample '{sample}' must specify 'data_type' for input '{input}'", when: 'A warmup input without data_type.' },
    (sample: string, input: string) => ({ sample, input }),
  ),
  ruleWarmupDims: rule(
    {
      text: "warmup sample '{sample}': warmup setting expects all variable-size dimensions are specified for input '{input}'",
      when: 'A warmup input with a -1 dimension.',
    },
    (sample: string, input: string) => ({ sample, input }),
  ),
  ruleWarmupSource: rule(
    {
      text: "warmup sample '{sample}' must specify one of 'zero_data', 'random_data' or 'input_data_file' for input '{input}'",
      when: 'A warmup input without data.',
    },
    (sample: string, input: string) => ({ sample, input }),
  ),
  ruleWarmupFile: rule(
    {
      text: "warmup sample '{sample}': input_data_file '{file}' must name a file inside the model's warmup directory",
      when: 'input_data_file is empty, absolute or climbs out with ..',
    },
    (sample: string, file: string) => ({ sample, file }),
  ),
  ruleTensorName: rule({ text: "model {kind} {index} must specify 'name'", when: 'An input/output without a name.' }, (kind: string, index: number) => ({
    kind,
    index,
  })),
  ruleTensorDuplicate: rule(
    { text: "model {kind} '{name}' is specified more than once", when: 'Two inputs (or outputs) with one name.' },
    (kind: string, name: string) => ({ kind, name }),
  ),
  ruleTensorDataType: rule(
    { text: "model {kind} '{name}' must specify 'data_type'", when: 'An input/output without data_type.' },
    (kind: string, name: string) => ({ kind, name }),
  ),
  ruleTensorNoDims: rule({ text: "model {kind} '{name}' must specify 'dims'", when: 'An input/output without dims.' }, (kind: string, name: string) => ({
    kind,
    name,
  })),
  ruleTensorDims: rule(
    {
      text: "model {kind} '{name}' dimension must be integer >= 1, or -1 to indicate a variable-size dimension",
      when: 'A dim of 0 or below -1.',
    },
    (kind: string, name: string) => ({ kind, name }),
  ),
  ruleEmptyReshape: rule(
    { text: "model {kind} '{name}' cannot have empty reshape for non-batching model", when: 'reshape: { shape: [] } with max_batch_size 0.' },
    (kind: string, name: string) => ({ kind, name }),
  ),
  ruleReshapeDims: rule(
    {
      text: "model {kind} '{name}' reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension",
      when: 'A reshape dim of 0 or below -1.',
    },
    (kind: string, name: string) => ({ kind, name }),
  ),
  ruleReshapeSize: rule(
    { text: "model {kind} '{name}' has different size for dims and reshape", when: 'dims and reshape hold different numbers of elements.' },
    (kind: string, name: string) => ({ kind, name }),
  ),
  ruleReshapeVariable: rule(
    {
      text: "model {kind} '{name}' has different number of variable-size dimensions for dims and reshape",
      when: 'dims and reshape have different -1 runs.',
    },
    (kind: string, name: string) => ({ kind, name }),
  ),
  rulePreferredPositive: rule({ text: 'preferred batch size {size} must be positive', when: 'A preferred_batch_size of 0 or less.' }, (size: number) => ({
    size,
  })),
  rulePreferredMax: rule(
    { text: 'preferred batch size {size} must be <= max_batch_size {max}', when: 'A preferred_batch_size above max_batch_size.' },
    (size: number, max: number) => ({ size, max }),
  ),
} as const;
