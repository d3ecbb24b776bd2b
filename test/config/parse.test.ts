import { readFileSync } from 'node:fs';
import { equals } from '@bufbuild/protobuf';
import { fromText } from '@bufbuild/protobuf/txtpb';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors/config-error.js';
import { ErrorCode } from '../../src/core/errors.js';
import { parseModelConfigText, parseModelConfigTextWithPositions } from '../../src/core/config/parse.js';
import {
  DataType,
  ModelConfigSchema,
  ModelInput_Format,
  ModelInstanceGroup_Kind,
  ModelQueuePolicy_TimeoutAction,
  type ModelConfig,
} from '../../src/core/config/schema.js';

const kitchenSink = readFileSync(new URL('./fixtures/kitchen-sink.pbtxt', import.meta.url), 'utf8');
const parse = (text: string): ModelConfig => parseModelConfigText(text, 'config.pbtxt');

function parseError(text: string): ConfigError {
  try {
    parse(text);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('parseModelConfigText: syntax', () => {
  it('reads scalars, enums and negative dims', () => {
    const cfg = parse(`
      name: "m"
      backend: "python"
      max_batch_size: 8
      input { name: "INPUT0" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ -1, 16 ] }
    `);
    expect(cfg.name).toBe('m');
    expect(cfg.backend).toBe('python');
    expect(cfg.maxBatchSize).toBe(8);
    expect(cfg.input[0]!.dataType).toBe(DataType.TYPE_FP32);
    expect(cfg.input[0]!.format).toBe(ModelInput_Format.NHWC);
    expect(cfg.input[0]!.dims).toEqual([-1n, 16n]);
  });

  it('accepts message fields with and without a colon, and <> delimiters', () => {
    const a = parse('dynamic_batching { max_queue_delay_microseconds: 100 }');
    const b = parse('dynamic_batching: { max_queue_delay_microseconds: 100 }');
    const c = parse('dynamic_batching < max_queue_delay_microseconds: 100 >');
    for (const cfg of [a, b, c]) {
      expect(cfg.schedulingChoice.case).toBe('dynamicBatching');
      expect(cfg.schedulingChoice.value?.$typeName).toBe('inference.ModelDynamicBatching');
    }
    expect(equals(ModelConfigSchema, a, b) && equals(ModelConfigSchema, a, c)).toBe(true);
  });

  it('reads repeated scalars as a list, as repeated lines, and mixed', () => {
    const list = parse('input { dims: [1, 2, 3] }');
    const lines = parse('input { dims: 1 dims: 2 dims: 3 }');
    const mixed = parse('input { dims: [1] dims: 2, dims: [3] }');
    const empty = parse('input { dims: [] }');
    expect(list.input[0]!.dims).toEqual([1n, 2n, 3n]);
    expect(lines.input[0]!.dims).toEqual([1n, 2n, 3n]);
    expect(mixed.input[0]!.dims).toEqual([1n, 2n, 3n]);
    expect(empty.input[0]!.dims).toEqual([]);
  });

  it('reads repeated messages as a list or as repeated blocks', () => {
    const list = parse('input [ { name: "a" }, { name: "b" } ]');
    const listColon = parse('input: [ { name: "a" }, { name: "b" } ]');
    const blocks = parse('input { name: "a" }\ninput: { name: "b" }');
    for (const cfg of [list, listColon, blocks]) expect(cfg.input.map((i) => i.name)).toEqual(['a', 'b']);
  });

  it('reads double- and single-quoted strings with C escapes, and concatenates adjacent literals', () => {
    const cfg = parse(String.raw`
      name: "a\"b\\c\n\t"
      platform: 'it\'s "x"'
      backend: "\x41\101\u00e9\U0001F600\?\a"
      runtime: "con" 'cat' "enated"
      default_model_filename: "é ok"
    `);
    expect(cfg.name).toBe('a"b\\c\n\t');
    expect(cfg.platform).toBe('it\'s "x"');
    expect(cfg.backend).toBe('AAé😀?\x07');
    expect(cfg.runtime).toBe('concatenated');
    expect(cfg.defaultModelFilename).toBe('é ok');
  });

  it('skips # comments everywhere', () => {
    const cfg = parse(`# header
      name: "m" # trailing
      input [ # inside a list
        { name: "x" # inside a block
          dims: [ 1, # between elements
                  2 ] }
      ]
      # footer`);
    expect(cfg.name).toBe('m');
    expect(cfg.input[0]!.dims).toEqual([1n, 2n]);
  });

  it('reads maps as repeated {key value} entries, in every spelling', () => {
    const cfg = parse(`
      parameters { key: "EXECUTION_ENV_PATH" value: { string_value: "$$TRITON_MODEL_DIRECTORY/env" } }
      parameters { value { string_value: "yes" } key: "FORCE_CPU_ONLY_INPUT_TENSORS" }
      parameters [ { key: "A" value { string_value: "1" } }, { key: "B", value: < string_value: "2" > } ]
      metric_tags { key: "team" value: "search" }
      metric_tags: { key: "team" value: "ads" }
      dynamic_batching { priority_levels: 2 priority_queue_policy { key: 1 value: { timeout_action: DELAY max_queue_size: 3 } } }
    `);
    expect(Object.keys(cfg.parameters)).toEqual(['EXECUTION_ENV_PATH', 'FORCE_CPU_ONLY_INPUT_TENSORS', 'A', 'B']);
    expect(cfg.parameters['EXECUTION_ENV_PATH']!.stringValue).toBe('$$TRITON_MODEL_DIRECTORY/env');
    expect(cfg.parameters['FORCE_CPU_ONLY_INPUT_TENSORS']!.stringValue).toBe('yes');
    expect(cfg.parameters['B']!.stringValue).toBe('2');
    // A repeated key: the last entry wins.
    expect(cfg.metricTags).toEqual({ team: 'ads' });
    const db = cfg.schedulingChoice.case === 'dynamicBatching' ? cfg.schedulingChoice.value : undefined;
    expect(db?.priorityQueuePolicy['1']?.timeoutAction).toBe(ModelQueuePolicy_TimeoutAction.DELAY);
    expect(db?.priorityQueuePolicy['1']?.maxQueueSize).toBe(3);
  });

  it('reads booleans in every spelling Triton accepts', () => {
    const spellings: Array<[string, boolean]> = [
      ['true', true],
      ['True', true],
      ['t', true],
      ['1', true],
      ['false', false],
      ['False', false],
      ['f', false],
      ['0', false],
    ];
    for (const [text, value] of spellings) {
      expect(parse(`model_transaction_policy { decoupled: ${text} }`).modelTransactionPolicy?.decoupled).toBe(value);
    }
  });

  it('reads enums by number, hex and octal integers, floats, inf and nan', () => {
    const cfg = parse(`
      max_batch_size: 0x10
      instance_group { kind: 2 count: 010 }
      sequence_batching {
        direct { minimum_slot_utilization: 2.5f max_queue_delay_microseconds: 18446744073709551615 }
        control_input { control { fp32_false_true: [ -inf, 1e-3, .5, nan ] } }
      }
      model_metrics { metric_control { histogram_options { buckets: [ -5.0, 0, 1E3, inf ] } } }
    `);
    expect(cfg.maxBatchSize).toBe(16);
    expect(cfg.instanceGroup[0]!.kind).toBe(ModelInstanceGroup_Kind.CPU);
    expect(cfg.instanceGroup[0]!.count).toBe(8);
    const sb = cfg.schedulingChoice.case === 'sequenceBatching' ? cfg.schedulingChoice.value : undefined;
    const direct = sb?.strategyChoice.case === 'direct' ? sb.strategyChoice.value : undefined;
    expect(direct?.minimumSlotUtilization).toBe(2.5);
    expect(direct?.maxQueueDelayMicroseconds).toBe(2n ** 64n - 1n);
    const fp = sb!.controlInput[0]!.control[0]!.fp32FalseTrue;
    expect(fp.slice(0, 3)).toEqual([-Infinity, 0.001, 0.5]);
    expect(Number.isNaN(fp[3])).toBe(true);
    expect(cfg.modelMetrics?.metricControl[0]?.metricOptions.value?.buckets).toEqual([-5, 0, 1000, Infinity]);
  });

  it('accepts ; and , between fields and an empty file', () => {
    const cfg = parse('name: "m"; max_batch_size: 2, backend: "python";');
    expect([cfg.name, cfg.maxBatchSize, cfg.backend]).toEqual(['m', 2, 'python']);
    expect(equals(ModelConfigSchema, parse(''), parse('# only a comment\n'))).toBe(true);
  });

  it('lets a singular field that still holds its zero value be given again, like the C++ parser', () => {
    // tritonserver 2.51 loads this: an implicit-presence zero is not "present".
    const cfg = parse('max_batch_size: 0\nmax_batch_size: 8\nruntime: ""\nruntime: ""\nmodel_transaction_policy { decoupled: false decoupled: false }');
    expect(cfg.maxBatchSize).toBe(8);
  });

  it('parses the kitchen-sink config that sets every message', () => {
    const cfg = parse(kitchenSink);
    expect(cfg.instanceGroup[0]!.rateLimiter?.resources[0]?.global).toBe(true);
    expect(cfg.optimization?.cuda?.graphSpec[0]?.graphLowerBound?.input['IN']?.dim).toEqual([3n, 1n, 4n]);
    expect(cfg.modelWarmup[1]!.inputs['IN']!.inputDataType).toEqual({ case: 'inputDataFile', value: 'in.bin' });
    expect(cfg.output[0]!.reshape?.shape).toEqual([]);
    expect(cfg.modelRepositoryAgents?.agents[0]?.parameters).toEqual({ 'MD5:1/model.py': 'abc' });
  });

  it('agrees with @bufbuild/protobuf txtpb.fromText wherever both accept the input', () => {
    const samples = [
      kitchenSink,
      'name: "m" backend: "python" max_batch_size: 8 input [ { name: "I" data_type: TYPE_FP32 dims: [ -1 ] } ]',
      String.raw`name: 'q\'s' parameters { key: "k" value { string_value: "\x41\n" } }`,
      'dynamic_batching { preferred_batch_size: [ 2, 4 ] priority_queue_policy { key: 2 value { default_timeout_microseconds: 9 } } }',
    ];
    for (const text of samples) {
      expect(equals(ModelConfigSchema, parse(text), fromText(ModelConfigSchema, text))).toBe(true);
    }
  });
});

describe('parseModelConfigText: errors name file, line, column and field', () => {
  it('reports an unknown field', () => {
    const text = ['name: "m"', 'backend: "python"', 'max_batch_size: 8', 'input [', '  {', '    name: "INPUT0"', '  dimz: [ 16 ]', '  }', ']'].join('\n');
    const e = parseError(text);
    expect(e.message).toBe('config.pbtxt:7:3: Message type "inference.ModelInput" has no field named "dimz".');
    // A catalogue error (docs/errors.md): INVALID_ARG, built by syntaxUnknownField.
    expect(e.code).toBe(ErrorCode.INVALID_ARG);
    expect(e.entry).toBe('syntaxUnknownField');
    expect(e.file).toBe('config.pbtxt');
    expect(e.line).toBe(7);
    expect(e.field).toBe('input[0].dimz');
  });

  it.each([
    [
      'dynamic_batching {}\nsequence_batching {}',
      2,
      1,
      'sequence_batching',
      'Field "sequence_batching" is specified along with field "dynamic_batching", another member of oneof "scheduling_choice".',
    ],
    ['dynamic_batching {}\ndynamic_batching {}', 2, 1, 'dynamic_batching', 'Non-repeated field "dynamic_batching" is specified multiple times.'],
    ['input { data_type: TYPE_FLOAT32 }', 1, 20, 'input[0].data_type', 'Unknown enumeration value of "TYPE_FLOAT32" for field "data_type".'],
    ['max_batch_size 8', 1, 16, 'max_batch_size', "expected ':' after field 'max_batch_size'"],
    ['max_batch_size: [1, 2]', 1, 17, 'max_batch_size', 'is not repeated'],
    ['max_batch_size: "8"', 1, 17, 'max_batch_size', "expected an integer for field 'max_batch_size'"],
    ['max_batch_size: 3000000000', 1, 17, 'max_batch_size', 'out of range for int32'],
    ['dynamic_batching { priority_levels: -1 }', 1, 38, 'dynamic_batching.priority_levels', 'out of range for uint64'],
    ['name: m', 1, 7, 'name', "expected a string for field 'name', got 'm'"],
    ['model_transaction_policy { decoupled: yes }', 1, 39, 'model_transaction_policy.decoupled', "invalid value 'yes' for boolean field 'decoupled'"],
    ['name: "abc', 1, 7, 'name', 'unterminated string'],
    ['name: "a\nb"', 1, 7, 'name', 'string literals cannot cross line boundaries'],
    [String.raw`name: "\q"`, 1, 8, 'name', 'invalid escape sequence'],
    ['input {\n  name: "x"\n', 3, 1, 'input[0]', "unexpected end of input, expected '}'"],
    ['input { dims: [1 2] }', 1, 18, 'input[0].dims', "expected ',' or ']' in list"],
    ['max_batch_size: 16x', 1, 19, 'max_batch_size', 'need space between number and identifier'],
    ['parameters { key: "a" val: "b" }', 1, 23, 'parameters', 'Message type "inference.ModelConfig.ParametersEntry" has no field named "val".'],
    ['[ext.field]: 1', 1, 1, undefined, "extension and Any syntax '[...]' is not supported"],
    ['}', 1, 1, undefined, "expected a field name, got '}'"],
    ['name: "x" $', 1, 11, 'name', "unexpected character '$'"],
  ])('%j', (text, line, column, field, fragment) => {
    const e = parseError(text);
    expect(e.message.startsWith(`config.pbtxt:${line}:${column}: `)).toBe(true);
    expect(e.message).toContain(fragment);
    expect(e.line).toBe(line);
    expect(e.field).toBe(field);
  });
});

/**
 * Each input below was loaded by tritonserver 2.51 (as the whole config.pbtxt of a Python model,
 * with input/output added) and the outcome is what it logged: `Error parsing text-format
 * inference.ModelConfig: <line>:<column>: <message>` or a model that loaded. tritium gives the same
 * message; its column points at the field name, where C++ points at the token after it.
 */
describe('parseModelConfigText: what tritonserver refuses and accepts', () => {
  it.each([
    ['max_batch_size: 4\nmax_batch_size: 8', 2, 'max_batch_size', 'Non-repeated field "max_batch_size" is specified multiple times.'],
    ['max_batch_size: 4\nmax_batch_size: 4', 2, 'max_batch_size', 'Non-repeated field "max_batch_size" is specified multiple times.'],
    ['max_batch_size: 4\nmax_batch_size: 0', 2, 'max_batch_size', 'Non-repeated field "max_batch_size" is specified multiple times.'],
    ['backend: "python"\nbackend: "python"', 2, 'backend', 'Non-repeated field "backend" is specified multiple times.'],
    [
      'optimization { priority: PRIORITY_MAX }\noptimization { input_pinned_memory { enable: false } }',
      2,
      'optimization',
      'Non-repeated field "optimization" is specified multiple times.',
    ],
    ['optimization { }\noptimization { }', 2, 'optimization', 'Non-repeated field "optimization" is specified multiple times.'],
    ['input [ { name: "IN" name: "IN" } ]', 1, 'input[0].name', 'Non-repeated field "name" is specified multiple times.'],
    ['input [ { data_type: TYPE_FP32 data_type: TYPE_FP32 } ]', 1, 'input[0].data_type', 'Non-repeated field "data_type" is specified multiple times.'],
    ['metric_tags { key: "a" value: "b" key: "c" }', 1, 'metric_tags', 'Non-repeated field "key" is specified multiple times.'],
    ['parameters { key: "" key: "" value { string_value: "1" } }', 1, 'parameters', 'Non-repeated field "key" is specified multiple times.'],
    [
      'parameters { key: "A" value { string_value: "1" } value { string_value: "2" } }',
      1,
      'parameters',
      'Non-repeated field "value" is specified multiple times.',
    ],
    [
      'model_warmup { inputs { key: "IN" value { zero_data: false random_data: true } } }',
      1,
      'model_warmup[0].inputs[IN].random_data',
      'Field "random_data" is specified along with field "zero_data", another member of oneof "input_data_type".',
    ],
    ['foo_bar: 3', 1, 'foo_bar', 'Message type "inference.ModelConfig" has no field named "foo_bar".'],
    ['max_batch_size: "4"', 1, 'max_batch_size', "expected an integer for field 'max_batch_size'"],
    ['max_batch_size: 4.0', 1, 'max_batch_size', "expected an integer for field 'max_batch_size'"],
    ['max_batch_size: [4]', 1, 'max_batch_size', 'is not repeated'],
    ['max_batch_size 4', 1, 'max_batch_size', "expected ':' after field 'max_batch_size'"],
    ['input [ { data_type: "TYPE_FP32" } ]', 1, 'input[0].data_type', 'expected an enumeration value'],
    ['optimization [ { priority: PRIORITY_MAX } ]', 1, 'optimization', "expected '{' to open inference.ModelOptimizationPolicy"],
  ])('refuses %j', (text, line, field, fragment) => {
    const e = parseError(text);
    expect(e.message).toContain(fragment);
    expect(e.line).toBe(line);
    expect(e.field).toBe(field);
  });

  it.each([
    // Enums by number, known or not (proto3 enums are open; validation judges the value later).
    [
      'input [ { data_type: 11 } ] instance_group { kind: 2 count: 1 }',
      (c: ModelConfig) => c.input[0]!.dataType === DataType.TYPE_FP32 && c.instanceGroup[0]!.kind === ModelInstanceGroup_Kind.CPU,
    ],
    ['instance_group { kind: 77 }', (c: ModelConfig) => (c.instanceGroup[0]!.kind as number) === 77],
    ['optimization { priority: -1 }', (c: ModelConfig) => (c.optimization!.priority as number) === -1],
    [
      'dynamic_batching { preferred_batch_size: [ 2, 4 ] }',
      (c: ModelConfig) => c.schedulingChoice.case === 'dynamicBatching' && c.schedulingChoice.value.preferredBatchSize.join() === '2,4',
    ],
    ['# header\nbackend: "python" # trailing\nmax_batch_size: 4 # x\n# end', (c: ModelConfig) => c.maxBatchSize === 4],
    ['backend: "python"; max_batch_size: 4,', (c: ModelConfig) => c.maxBatchSize === 4],
    ['model_transaction_policy { decoupled: f }', (c: ModelConfig) => c.modelTransactionPolicy!.decoupled === false],
    ['instance_group [ ]', (c: ModelConfig) => c.instanceGroup.length === 0],
    ['max_batch_size: 0\nmax_batch_size: 0', (c: ModelConfig) => c.maxBatchSize === 0],
    ['optimization { priority: PRIORITY_DEFAULT priority: PRIORITY_DEFAULT }', (c: ModelConfig) => c.optimization!.priority === 0],
    [
      'parameters { key: "A" value { string_value: "1" } }\nparameters { key: "A" value { string_value: "2" } }',
      (c: ModelConfig) => c.parameters['A']!.stringValue === '2',
    ],
  ])('accepts %j', (text, check) => {
    expect(check(parse(text))).toBe(true);
  });
});

describe('parseModelConfigTextWithPositions', () => {
  it('records where each field was written', () => {
    const { config, positions } = parseModelConfigTextWithPositions(
      [
        'name: "m"',
        'input [',
        '  { name: "a" dims: [1] },',
        '  { name: "b"',
        '    dims: [2] }',
        ']',
        'parameters { key: "K" value { string_value: "v" } }',
      ].join('\n'),
      'config.pbtxt',
    );
    expect(config.input).toHaveLength(2);
    expect(positions.get('name')).toEqual({ line: 1, column: 1 });
    expect(positions.get('input')).toEqual({ line: 2, column: 1 });
    expect(positions.get('input[0].dims')).toEqual({ line: 3, column: 15 });
    expect(positions.get('input[1]')).toEqual({ line: 4, column: 3 });
    expect(positions.get('input[1].dims')).toEqual({ line: 5, column: 5 });
    expect(positions.get('parameters[K]')).toEqual({ line: 7, column: 12 });
    expect(positions.get('parameters[K].string_value')).toEqual({ line: 7, column: 31 });
  });
});
