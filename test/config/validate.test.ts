import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors/config-error.js';
import { ErrorCode } from '../../src/core/errors.js';
import { inferBackend } from '../../src/core/config/infer-backend.js';
import { normalizeModelConfig } from '../../src/core/config/normalize.js';
import { parseModelConfigText, parseModelConfigTextWithPositions } from '../../src/core/config/parse.js';
import { findConfigProblems, validateModelConfig, type ValidateContext } from '../../src/core/config/validate.js';

const FILE = 'models/m/config.pbtxt';

/** parse → infer → normalise (CPU host unless gpus given) → problems. */
function problems(text: string, opts: { gpus?: number[]; files?: string[]; ctx?: ValidateContext } = {}): ConfigError[] {
  const gpus = opts.gpus ?? [];
  let cfg = parseModelConfigText(text, FILE);
  cfg = inferBackend(opts.files ?? ['model.py'], cfg);
  cfg = normalizeModelConfig(cfg, { modelName: 'm', gpuCount: gpus.length, gpus });
  return findConfigProblems(cfg, FILE, { modelName: 'm', gpus, ...opts.ctx });
}

function only(text: string, opts?: Parameters<typeof problems>[1]): ConfigError {
  const found = problems(text, opts);
  expect(found.map((p) => p.message)).toHaveLength(1);
  return found[0]!;
}

const IO = `
  input [ { name: "IN" data_type: TYPE_FP32 dims: [ 4 ] } ]
  output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] } ]
`;

describe('validateModelConfig', () => {
  it('accepts a valid config', () => {
    expect(problems(`max_batch_size: 8 dynamic_batching { } ${IO}`)).toEqual([]);
    expect(() =>
      validateModelConfig(normalizeModelConfig(inferBackend(['model.py'], parseModelConfigText(IO, FILE)), { modelName: 'm', gpuCount: 0, gpus: [] }), FILE),
    ).not.toThrow();
  });

  it('throws the first problem as a ConfigError naming file and field', () => {
    let cfg = parseModelConfigText(`name: "other" max_batch_size: -1 ${IO}`, FILE);
    cfg = normalizeModelConfig(inferBackend(['model.py'], cfg), { modelName: 'm', gpuCount: 0, gpus: [] });
    try {
      validateModelConfig(cfg, FILE, { modelName: 'm' });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      const err = e as ConfigError;
      expect(err.file).toBe(FILE);
      expect(err.field).toBe('name');
      expect(err.message).toBe(`${FILE}: name: model name 'other' does not match the model directory name 'm'`);
    }
  });

  it('adds line and column when positions from the parser are given', () => {
    const text = ['backend: "python"', 'max_batch_size: 2', 'dynamic_batching {', '  preferred_batch_size: [ 4 ]', '}', IO].join('\n');
    const { config, positions } = parseModelConfigTextWithPositions(text, FILE);
    const cfg = normalizeModelConfig(config, { modelName: 'm', gpuCount: 0, gpus: [] });
    const [p] = findConfigProblems(cfg, FILE, { positions });
    expect(p!.message).toBe(`${FILE}:4:3: dynamic_batching.preferred_batch_size: preferred batch size 4 must be <= max_batch_size 2`);
    expect(p!.line).toBe(4);
    expect(p!.field).toBe('dynamic_batching.preferred_batch_size');
  });

  it('falls back to the nearest parent position', () => {
    const text = `backend: "python"\ninput [\n  { name: "IN" data_type: TYPE_FP32 }\n]\noutput { name: "O" data_type: TYPE_FP32 dims: 1 }`;
    const { config, positions } = parseModelConfigTextWithPositions(text, FILE);
    const [p] = findConfigProblems(normalizeModelConfig(config, { modelName: 'm', gpuCount: 0, gpus: [] }), FILE, { positions });
    expect(p!.message).toBe(`${FILE}:3:3: input[0].dims: model input 'IN' must specify 'dims'`);
  });

  it.each([
    ['backend or platform required', `${IO}`, { files: ['weights.bin'] }, 'backend', "must specify 'backend' or 'platform'"],
    [
      'backend/platform mismatch',
      `backend: "onnxruntime" platform: "tensorrt_plan" ${IO}`,
      {},
      'platform',
      "platform 'tensorrt_plan' does not match backend 'onnxruntime'",
    ],
    ['negative max_batch_size', `max_batch_size: -2 ${IO}`, {}, 'max_batch_size', 'must be >= 0'],
    [
      'input without name',
      `input { data_type: TYPE_FP32 dims: 1 } output { name: "O" data_type: TYPE_FP32 dims: 1 }`,
      {},
      'input[0].name',
      "must specify 'name'",
    ],
    [
      'input without data_type',
      `input { name: "I" dims: 1 } output { name: "O" data_type: TYPE_FP32 dims: 1 }`,
      {},
      'input[0].data_type',
      "model input 'I' must specify 'data_type'",
    ],
    [
      'output without dims',
      `input { name: "I" data_type: TYPE_FP32 dims: 1 } output { name: "O" data_type: TYPE_FP32 }`,
      {},
      'output[0].dims',
      "model output 'O' must specify 'dims'",
    ],
    [
      'zero dim',
      `input { name: "I" data_type: TYPE_FP32 dims: [4, 0] } output { name: "O" data_type: TYPE_FP32 dims: 1 }`,
      {},
      'input[0].dims',
      'dimension must be integer >= 1, or -1',
    ],
    [
      'dim -2',
      `input { name: "I" data_type: TYPE_FP32 dims: [-2] } output { name: "O" data_type: TYPE_FP32 dims: 1 }`,
      {},
      'input[0].dims',
      'dimension must be integer >= 1, or -1',
    ],
    [
      'duplicate input',
      `input [ { name: "I" data_type: TYPE_FP32 dims: 1 }, { name: "I" data_type: TYPE_FP32 dims: 1 } ] output { name: "O" data_type: TYPE_FP32 dims: 1 }`,
      {},
      'input[1].name',
      'is specified more than once',
    ],
    [
      'reshape size',
      `input { name: "I" data_type: TYPE_FP32 dims: [4] reshape { shape: [3] } } output { name: "O" data_type: TYPE_FP32 dims: 1 }`,
      {},
      'input[0].reshape.shape',
      'has different size for dims and reshape',
    ],
    [
      'reshape variable runs',
      `input { name: "I" data_type: TYPE_FP32 dims: [2, -1] reshape { shape: [-1, 2] } } output { name: "O" data_type: TYPE_FP32 dims: 1 }`,
      {},
      'input[0].reshape.shape',
      'has different size for dims and reshape',
    ],
    [
      'reshape variable count',
      `input { name: "I" data_type: TYPE_FP32 dims: [-1, 2, -1] reshape { shape: [-1, 2] } } output { name: "O" data_type: TYPE_FP32 dims: 1 }`,
      {},
      'input[0].reshape.shape',
      'different number of variable-size dimensions',
    ],
    [
      'empty reshape, non-batching',
      `input { name: "I" data_type: TYPE_FP32 dims: [1] reshape { } } output { name: "O" data_type: TYPE_FP32 dims: 1 }`,
      {},
      'input[0].reshape',
      'cannot have empty reshape for non-batching model',
    ],
    [
      'preferred size 0',
      `max_batch_size: 4 dynamic_batching { preferred_batch_size: [0] } ${IO}`,
      {},
      'dynamic_batching.preferred_batch_size',
      'must be positive',
    ],
    [
      'preferred size > max',
      `max_batch_size: 4 dynamic_batching { preferred_batch_size: [2, 8] } ${IO}`,
      {},
      'dynamic_batching.preferred_batch_size',
      'preferred batch size 8 must be <= max_batch_size 4',
    ],
    [
      'oldest preferred > max',
      `max_batch_size: 4 sequence_batching { oldest { preferred_batch_size: [5] } } ${IO}`,
      {},
      'sequence_batching.oldest.preferred_batch_size',
      'must be <= max_batch_size 4',
    ],
    [
      'default priority out of range',
      `max_batch_size: 4 dynamic_batching { priority_levels: 2 default_priority_level: 3 } ${IO}`,
      {},
      'dynamic_batching.default_priority_level',
      'must be in range [1, 2]',
    ],
    [
      'priority policy key out of range',
      `max_batch_size: 4 dynamic_batching { priority_levels: 2 default_priority_level: 1 priority_queue_policy { key: 3 value {} } } ${IO}`,
      {},
      'dynamic_batching.priority_queue_policy[3]',
      'level 3 must be in range [1, 2]',
    ],
    [
      'preserve_ordering with priorities',
      `max_batch_size: 4 dynamic_batching { preserve_ordering: true priority_levels: 2 default_priority_level: 1 } ${IO}`,
      {},
      'dynamic_batching.preserve_ordering',
      'more than one priority level',
    ],
    [
      'preserve_ordering with DELAY',
      `max_batch_size: 4 dynamic_batching { preserve_ordering: true default_queue_policy { timeout_action: DELAY } } ${IO}`,
      {},
      'dynamic_batching.default_queue_policy.timeout_action',
      'timeout_action DELAY',
    ],
    ['cache + sequence', `sequence_batching {} response_cache { enable: true } ${IO}`, {}, 'response_cache.enable', 'with sequence batching'],
    ['cache + decoupled', `model_transaction_policy { decoupled: true } response_cache { enable: true } ${IO}`, {}, 'response_cache.enable', 'decoupled'],
    [
      'KIND_GPU, the host unknown',
      `instance_group { kind: KIND_GPU } ${IO}`,
      { ctx: { gpus: undefined } },
      'instance_group[0].kind',
      "instance group 'm_0' of model 'm' has kind KIND_GPU but this host has no GPU",
    ],
    [
      'unknown GPU id',
      `instance_group { kind: KIND_GPU gpus: [ 0, 5 ] } ${IO}`,
      { gpus: [0, 1] },
      'instance_group[0].gpus',
      'specifies GPU 5, but the usable GPUs are: 0, 1',
    ],
    [
      'KIND_CPU with gpus',
      `instance_group { kind: KIND_CPU gpus: [ 0 ] } ${IO}`,
      { gpus: [0] },
      'instance_group[0].gpus',
      'has kind KIND_CPU but specifies one or more GPUs',
    ],
    [
      'KIND_AUTO with a missing GPU',
      `instance_group { gpus: [ 4 ] } ${IO}`,
      { gpus: [0] },
      'instance_group[0].gpus',
      'has kind KIND_CPU but specifies one or more GPUs',
    ],
    [
      'FORCE_CPU_ONLY_INPUT_TENSORS',
      `parameters { key: "FORCE_CPU_ONLY_INPUT_TENSORS" value { string_value: "maybe" } } ${IO}`,
      {},
      'parameters[FORCE_CPU_ONLY_INPUT_TENSORS].string_value',
      "Incorrect value for FORCE_CPU_ONLY_INPUT_TENSORS: maybe'",
    ],
    [
      'warmup variable dims',
      `${IO} model_warmup { name: "w" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [-1] zero_data: true } } }`,
      {},
      'model_warmup[0].inputs[IN].dims',
      'warmup setting expects all variable-size dimensions are specified',
    ],
    [
      'warmup without data source',
      `${IO} model_warmup { name: "w" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [4] } } }`,
      {},
      'model_warmup[0].inputs[IN]',
      "must specify one of 'zero_data', 'random_data' or 'input_data_file'",
    ],
    [
      'warmup without data type',
      `${IO} model_warmup { name: "w" batch_size: 1 inputs { key: "IN" value { dims: [4] random_data: true } } }`,
      {},
      'model_warmup[0].inputs[IN].data_type',
      "must specify 'data_type'",
    ],
    [
      'warmup file escaping warmup/',
      `${IO} model_warmup { name: "w" batch_size: 1 inputs { key: "IN" value { data_type: TYPE_FP32 dims: [4] input_data_file: "../../etc/passwd" } } }`,
      {},
      'model_warmup[0].inputs[IN].input_data_file',
      "inside the model's warmup directory",
    ],
    [
      'ensemble with instance group',
      `platform: "ensemble" instance_group { kind: KIND_CPU } ensemble_scheduling { step { model_name: "a" } } ${IO}`,
      {},
      'instance_group',
      'should not be specified for ensemble',
    ],
    ['ensemble scheduling on a non-ensemble', `ensemble_scheduling { } ${IO}`, {}, 'ensemble_scheduling', 'whose platform is not ensemble'],
  ])('%s', (_label, text, opts, field, fragment) => {
    const p = only(text, opts);
    expect(p.field).toBe(field);
    expect(p.message).toContain(fragment);
    expect(p.message.startsWith(`${FILE}: ${field}: `)).toBe(true);
    // A catalogue error (docs/errors.md): INVALID_ARG, built by one of the validation rules.
    expect(p.code).toBe(ErrorCode.INVALID_ARG);
    expect(p.entry).toMatch(/^rule[A-Z]/);
  });

  it('leaves KIND_GPU on a host known to have no GPU to the load (a version failure, as in Triton 2.51)', () => {
    expect(problems(`instance_group { kind: KIND_GPU } ${IO}`)).toEqual([]);
    expect(problems(`instance_group { kind: KIND_GPU gpus: [ 1 ] } ${IO}`)).toEqual([]);
  });

  it('accepts valid reshapes and FORCE_CPU_ONLY_INPUT_TENSORS values', () => {
    expect(
      problems(`
        max_batch_size: 2
        input [
          { name: "A" data_type: TYPE_FP32 dims: [1] reshape { shape: [] } },
          { name: "B" data_type: TYPE_FP32 dims: [2, 4, -1, 6] reshape { shape: [8, -1, 1, 6] } },
          { name: "C" data_type: TYPE_FP32 dims: [4] reshape { shape: [2, 2] } }
        ]
        output { name: "O" data_type: TYPE_STRING dims: [-1] }
        parameters { key: "FORCE_CPU_ONLY_INPUT_TENSORS" value { string_value: "no" } }
        model_warmup { name: "w" batch_size: 0 inputs { key: "B" value { data_type: TYPE_FP32 dims: [2, 4, 3, 6] input_data_file: "b.bin" } } }
      `),
    ).toEqual([]);
  });

  it('collects every problem in config order', () => {
    const found = problems(`max_batch_size: -1 input { name: "I" dims: [0] } output { name: "O" data_type: TYPE_FP32 dims: 1 }`);
    expect(found.map((p) => p.field)).toEqual(['max_batch_size', 'input[0].data_type', 'input[0].dims']);
  });
});

describe("sequence_batching and response_cache checks (Triton 2.51's texts, compared on its own server)", () => {
  const seq = (controls: string, direct = '') => `max_batch_size: 4 sequence_batching { ${direct} ${controls} } ${IO}`;
  const start = (values: string) => `control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START ${values} } ] } ]`;

  it('accepts the usual START / READY / END / CORRID set, and a direct strategy without delay knobs', () => {
    const controls = [
      '{ name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }',
      '{ name: "READY" control [ { kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1 ] } ] }',
      '{ name: "END" control [ { kind: CONTROL_SEQUENCE_END bool_false_true: [ false, true ] } ] }',
      '{ name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING } ] }',
    ];
    expect(problems(seq(`control_input [ ${controls.join(', ')} ]`, 'direct { }'))).toEqual([]);
    expect(problems(seq('', 'direct { max_queue_delay_microseconds: 100 minimum_slot_utilization: 0.5 }'))).toEqual([]);
  });

  it.each([
    [
      'a control input without a name',
      seq('control_input [ { control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]'),
      'sequence_batching.control_input[0].name',
      'sequence batching control tensor must have a name for m',
    ],
    [
      'one name for two control inputs',
      seq(
        'control_input [ { name: "C" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }, { name: "C" control [ { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] } ] } ]',
      ),
      'sequence_batching.control_input[1].name',
      "sequence batching control tensor 'C' is specified for multiple control kinds for m",
    ],
    [
      'two START controls',
      seq(
        'control_input [ { name: "S1" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }, { name: "S2" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]',
      ),
      'sequence_batching.control_input[1].control[0].kind',
      'sequence batching specifies multiple CONTROL_SEQUENCE_START tensors for m',
    ],
    [
      'START without values',
      seq(start('')),
      'sequence_batching.control_input[0].control[0]',
      "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_START for m",
    ],
    [
      'START with two lists',
      seq(start('int32_false_true: [ 0, 1 ] fp32_false_true: [ 0, 1 ]')),
      'sequence_batching.control_input[0].control[0]',
      "sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and 'bool_false_true' for CONTROL_SEQUENCE_START for m",
    ],
    [
      'START with three values',
      seq(start('fp32_false_true: [ 0, 1, 2 ]')),
      'sequence_batching.control_input[0].control[0].fp32_false_true',
      "sequence batching control 'fp32_false_true' must have exactly 2 entries for CONTROL_SEQUENCE_START for m",
    ],
    [
      'CORRID with values',
      seq('control_input [ { name: "C" control [ { kind: CONTROL_SEQUENCE_CORRID int32_false_true: [ 0, 1 ] data_type: TYPE_UINT64 } ] } ]'),
      'sequence_batching.control_input[0].control[0].int32_false_true',
      "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_CORRID for m",
    ],
    [
      'CORRID of type FP32',
      seq('control_input [ { name: "C" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 } ] } ]'),
      'sequence_batching.control_input[0].control[0].data_type',
      'unexpected data type for control CONTROL_SEQUENCE_CORRID for m. Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING',
    ],
    [
      'a slot utilization above 1',
      seq('', 'direct { minimum_slot_utilization: 1.5 }'),
      'sequence_batching.direct.minimum_slot_utilization',
      'sequence batching minimum slot utilization must be in range (0.0, 1.0] for m',
    ],
    [
      'a response cache with sequence batching',
      seq('', 'direct { }').replace('sequence_batching', 'response_cache { enable: true } sequence_batching'),
      'response_cache.enable',
      'Response Cache does not currently support model m with sequence batching scheduler. Please disable the response cache.',
    ],
    [
      'a response cache on a decoupled model',
      `max_batch_size: 4 model_transaction_policy { decoupled: true } response_cache { enable: true } ${IO}`,
      'response_cache.enable',
      "Response Cache does not currently support model m with 'decoupled' transaction policy. Please disable the response cache.",
    ],
  ])('%s', (_what, text, field, message) => {
    const p = only(text);
    expect(p.field).toBe(field);
    expect(p.message).toBe(`${FILE}: ${field}: ${message}`);
  });
});
