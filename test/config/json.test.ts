import { readFileSync } from 'node:fs';
import { equals, type DescMessage } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors/config-error.js';
import { inferBackend } from '../../src/core/config/infer-backend.js';
import { INT64_FIELDS_AS_NUMBERS, INT64_FIELDS_KEPT_AS_STRINGS, fieldFullName, modelConfigFromJson, modelConfigToJson } from '../../src/core/config/json.js';
import { normalizeModelConfig } from '../../src/core/config/normalize.js';
import { parseModelConfigText } from '../../src/core/config/parse.js';
import { DataType, ModelConfigSchema, ModelInstanceGroup_Kind, createModelConfig } from '../../src/core/config/schema.js';
import { validateModelConfig } from '../../src/core/config/validate.js';

const kitchenSink = readFileSync(new URL('./fixtures/kitchen-sink.pbtxt', import.meta.url), 'utf8');

// The /config body Triton renders for such a model, verbatim (docs/protocol-notes.md, "Model configuration normalisation").
const SPEC_EXAMPLE = `
{"name":"m","platform":"","backend":"python","runtime":"","version_policy":{"latest":{"num_versions":1}},
 "max_batch_size":8,
 "input":[{"name":"INPUT0","data_type":"TYPE_FP32","format":"FORMAT_NONE","dims":[16],"is_shape_tensor":false,
           "allow_ragged_batch":false,"optional":false,"is_non_linear_format_io":false}],
 "output":[{"name":"OUTPUT0","data_type":"TYPE_FP32","dims":[16],"label_filename":"","is_shape_tensor":false,
            "is_non_linear_format_io":false}],
 "batch_input":[],"batch_output":[],
 "optimization":{"priority":"PRIORITY_DEFAULT","input_pinned_memory":{"enable":true},
                 "output_pinned_memory":{"enable":true},"gather_kernel_buffer_threshold":0,"eager_batching":false},
 "dynamic_batching":{"preferred_batch_size":[8],"max_queue_delay_microseconds":0,"preserve_ordering":false,
                     "priority_levels":0,"default_priority_level":0,"priority_queue_policy":{}},
 "instance_group":[{"name":"m","kind":"KIND_CPU","count":1,"gpus":[],"secondary_devices":[],"profile":[],
                    "passive":false,"host_policy":""}],
 "default_model_filename":"model.py","cc_model_filenames":{},"metric_tags":{},"parameters":{},"model_warmup":[]}
`;

/** Every message type reachable from ModelConfig. */
function allMessages(root: DescMessage): DescMessage[] {
  const seen = new Map<string, DescMessage>();
  const visit = (m: DescMessage): void => {
    if (seen.has(m.typeName)) return;
    seen.set(m.typeName, m);
    for (const f of m.fields) if (f.message) visit(f.message);
  };
  visit(root);
  return [...seen.values()];
}

describe('modelConfigToJson', () => {
  it("reproduces the spec's /config example byte for byte from a config.pbtxt", () => {
    const text = `
      max_batch_size: 8
      input [ { name: "INPUT0", data_type: TYPE_FP32, dims: [ 16 ] } ]
      output [ { name: "OUTPUT0", data_type: TYPE_FP32, dims: [ 16 ] } ]
      dynamic_batching { }
    `;
    let cfg = parseModelConfigText(text, 'm/config.pbtxt');
    cfg = inferBackend(['model.py'], cfg);
    cfg = normalizeModelConfig(cfg, { modelName: 'm', gpuCount: 0, gpus: [] });
    validateModelConfig(cfg, 'm/config.pbtxt', { modelName: 'm', gpus: [] });
    const json = modelConfigToJson(cfg);
    const expected = JSON.parse(SPEC_EXAMPLE);
    expect(json).toEqual(expected);
    // Same keys in the same order, same number formatting.
    expect(JSON.stringify(json)).toBe(JSON.stringify(expected));
  });

  it('prints every implicit field of an empty config, and omits unset messages', () => {
    expect(modelConfigToJson(createModelConfig())).toEqual({
      name: '',
      platform: '',
      backend: '',
      runtime: '',
      max_batch_size: 0,
      input: [],
      output: [],
      batch_input: [],
      batch_output: [],
      instance_group: [],
      default_model_filename: '',
      cc_model_filenames: {},
      metric_tags: {},
      parameters: {},
      model_warmup: [],
    });
  });

  it('renders every field family of the kitchen-sink config', () => {
    const cfg = parseModelConfigText(kitchenSink, 'config.pbtxt');
    const json = modelConfigToJson(cfg) as Record<string, any>;
    expect(Object.keys(json)).toEqual([
      'name',
      'platform',
      'backend',
      'runtime',
      'version_policy',
      'max_batch_size',
      'input',
      'output',
      'batch_input',
      'batch_output',
      'optimization',
      'sequence_batching',
      'instance_group',
      'default_model_filename',
      'cc_model_filenames',
      'metric_tags',
      'parameters',
      'model_warmup',
      'model_operations',
      'model_transaction_policy',
      'model_repository_agents',
      'response_cache',
      'model_metrics',
    ]);
    expect(json.version_policy).toEqual({ specific: { versions: [1, 3] } });
    expect(json.input[0]).toEqual({
      name: 'IN',
      data_type: 'TYPE_FP32',
      format: 'FORMAT_NCHW',
      dims: [3, -1, 4],
      reshape: { shape: [3, -1, 2, 2] },
      is_shape_tensor: false,
      allow_ragged_batch: true,
      optional: true,
      is_non_linear_format_io: false,
    });
    // reshape is declared before label_filename although numbered after it.
    expect(Object.keys(json.output[0])).toEqual(['name', 'data_type', 'dims', 'reshape', 'label_filename', 'is_shape_tensor', 'is_non_linear_format_io']);
    expect(json.output[0].reshape).toEqual({ shape: [] });
    expect(json.batch_input).toEqual([{ kind: 'BATCH_ACCUMULATED_ELEMENT_COUNT', target_name: ['ACC'], data_type: 'TYPE_INT32', source_input: ['IN'] }]);
    expect(json.batch_output).toEqual([{ target_name: ['OUT'], kind: 'BATCH_SCATTER_WITH_INPUT_SHAPE', source_input: ['IN'] }]);
    expect(json.optimization).toEqual({
      graph: { level: -1 },
      priority: 'PRIORITY_MAX',
      cuda: {
        graphs: true,
        busy_wait_events: true,
        graph_spec: [
          {
            batch_size: 4,
            // Not in Triton's int64 fix-up list: stays a string there too.
            input: { IN: { dim: ['3', '8', '4'] } },
            graph_lower_bound: { batch_size: 1, input: { IN: { dim: ['3', '1', '4'] } } },
          },
        ],
        output_copy_stream: true,
      },
      execution_accelerators: {
        gpu_execution_accelerator: [{ name: 'tensorrt', parameters: { precision_mode: 'FP16' } }],
        cpu_execution_accelerator: [{ name: 'openvino', parameters: {} }],
      },
      input_pinned_memory: { enable: false },
      output_pinned_memory: { enable: true },
      gather_kernel_buffer_threshold: 2,
      eager_batching: true,
    });
    expect(json.sequence_batching).toEqual({
      oldest: { max_candidate_sequences: 4, preferred_batch_size: [2, 4], max_queue_delay_microseconds: 100, preserve_ordering: true },
      max_sequence_idle_microseconds: 5000000,
      control_input: [
        {
          name: 'START',
          control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [], fp32_false_true: [0, 1], bool_false_true: [], data_type: 'TYPE_INVALID' }],
        },
        {
          name: 'CORRID',
          control: [{ kind: 'CONTROL_SEQUENCE_CORRID', int32_false_true: [], fp32_false_true: [], bool_false_true: [], data_type: 'TYPE_UINT64' }],
        },
        {
          name: 'READY',
          control: [
            { kind: 'CONTROL_SEQUENCE_READY', int32_false_true: [0, 1], fp32_false_true: [], bool_false_true: [false, true], data_type: 'TYPE_INVALID' },
          ],
        },
      ],
      state: [
        {
          input_name: 'STATE_IN',
          output_name: 'STATE_OUT',
          data_type: 'TYPE_INT32',
          dims: [-1],
          // Oneof member printed because it is the one set; dims kept as strings (not fixed by Triton).
          initial_state: [{ data_type: 'TYPE_INT32', dims: ['1'], zero_data: true, name: 'init' }],
          use_same_buffer_for_input_output: true,
          use_growable_memory: true,
        },
      ],
      iterative_sequence: true,
    });
    expect(json.instance_group).toEqual([
      {
        name: 'grp',
        kind: 'KIND_GPU',
        count: 2,
        rate_limiter: { resources: [{ name: 'R1', global: true, count: 2 }], priority: 1 },
        gpus: [0, 1],
        secondary_devices: [{ kind: 'KIND_NVDLA', device_id: '7' }],
        profile: ['0'],
        passive: true,
        host_policy: 'numa0',
      },
    ]);
    expect(json.cc_model_filenames).toEqual({ '7.5': 'model_75.py' });
    expect(json.metric_tags).toEqual({ team: 'search' });
    expect(json.parameters).toEqual({
      EXECUTION_ENV_PATH: { string_value: '$$TRITON_MODEL_DIRECTORY/env.tar.gz' },
      FORCE_CPU_ONLY_INPUT_TENSORS: { string_value: 'no' },
    });
    expect(json.model_warmup).toEqual([
      { name: 'w1', batch_size: 2, inputs: { IN: { data_type: 'TYPE_FP32', dims: [3, 2, 4], random_data: true } }, count: 3 },
      { name: 'w2', batch_size: 1, inputs: { IN: { data_type: 'TYPE_FP32', dims: [3, 2, 4], input_data_file: 'in.bin' } }, count: 0 },
    ]);
    expect(json.model_operations).toEqual({ op_library_filename: ['libcustom.so'] });
    expect(json.model_transaction_policy).toEqual({ decoupled: true });
    expect(json.model_repository_agents).toEqual({ agents: [{ name: 'checksum', parameters: { 'MD5:1/model.py': 'abc' } }] });
    expect(json.response_cache).toEqual({ enable: false });
    expect(json.model_metrics).toEqual({
      metric_control: [{ metric_identifier: { family: 'nv_inference_first_response_histogram_ms' }, histogram_options: { buckets: [-5, 0, 2.5, 1000] } }],
    });
  });

  it('renders dynamic batching queue policies with 64-bit numbers and string map keys', () => {
    const cfg = parseModelConfigText(
      `max_batch_size: 4
       dynamic_batching {
         max_queue_delay_microseconds: 100
         priority_levels: 2
         default_priority_level: 1
         default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 5 allow_timeout_override: true max_queue_size: 9 }
         priority_queue_policy { key: 2 value { default_timeout_microseconds: 7 } }
       }`,
      'config.pbtxt',
    );
    expect((modelConfigToJson(cfg) as any).dynamic_batching).toEqual({
      preferred_batch_size: [],
      max_queue_delay_microseconds: 100,
      preserve_ordering: false,
      priority_levels: 2,
      default_priority_level: 1,
      default_queue_policy: { timeout_action: 'DELAY', default_timeout_microseconds: 5, allow_timeout_override: true, max_queue_size: 9 },
      priority_queue_policy: { '2': { timeout_action: 'REJECT', default_timeout_microseconds: 7, allow_timeout_override: false, max_queue_size: 0 } },
    });
  });

  it('renders ensembles with numeric model_version (and without max_inflight_responses, which 2.51 lacks) and direct strategy delays', () => {
    const ens = parseModelConfigText(
      `platform: "ensemble"
       ensemble_scheduling { step [ { model_name: "a" model_version: -1 input_map { key: "x" value: "in" } output_map { key: "y" value: "out" } } ] }`,
      'config.pbtxt',
    );
    expect((modelConfigToJson(ens) as any).ensemble_scheduling).toEqual({
      step: [{ model_name: 'a', model_version: -1, input_map: { x: 'in' }, output_map: { y: 'out' }, model_namespace: '' }],
    });
    const seq = parseModelConfigText('sequence_batching { direct { max_queue_delay_microseconds: 3 minimum_slot_utilization: 0.1 } }', 'c');
    expect((modelConfigToJson(seq) as any).sequence_batching.direct).toEqual({
      max_queue_delay_microseconds: 3,
      // A float prints as its shortest decimal, not 0.10000000149011612.
      minimum_slot_utilization: 0.1,
    });
  });

  it("with int64: 'all' prints every 64-bit integer as a number", () => {
    const cfg = parseModelConfigText(kitchenSink, 'config.pbtxt');
    const json = modelConfigToJson(cfg, { int64: 'all' }) as any;
    expect(json.instance_group[0].secondary_devices[0].device_id).toBe(7);
    expect(json.optimization.cuda.graph_spec[0].input.IN.dim).toEqual([3, 8, 4]);
    expect(json.sequence_batching.state[0].initial_state[0].dims).toEqual([1]);
  });

  it('classifies every 64-bit field of the schema (add new ones to json.ts)', () => {
    const int64 = allMessages(ModelConfigSchema).flatMap((m) =>
      m.fields.filter((f) => f.scalar !== undefined && [3, 4, 6, 16, 18].includes(f.scalar)).map(fieldFullName),
    );
    const known = new Set([...INT64_FIELDS_AS_NUMBERS, ...INT64_FIELDS_KEPT_AS_STRINGS]);
    expect(int64.filter((n) => !known.has(n))).toEqual([]);
    expect([...known].filter((n) => !int64.includes(n))).toEqual([]);
  });
});

describe('modelConfigFromJson', () => {
  it('round-trips the kitchen-sink config through its JSON rendering', () => {
    const cfg = parseModelConfigText(kitchenSink, 'config.pbtxt');
    const back = modelConfigFromJson(JSON.parse(JSON.stringify(modelConfigToJson(cfg))));
    expect(equals(ModelConfigSchema, back, cfg)).toBe(true);
    // The text form works too.
    expect(equals(ModelConfigSchema, modelConfigFromJson(JSON.stringify(modelConfigToJson(cfg))), cfg)).toBe(true);
  });

  it('round-trips the normalised spec example', () => {
    const expected = JSON.parse(SPEC_EXAMPLE);
    expect(modelConfigToJson(modelConfigFromJson(expected))).toEqual(expected);
  });

  it('accepts camelCase names, string int64s and enums in any case', () => {
    const cfg = modelConfigFromJson({
      name: 'm',
      maxBatchSize: 4,
      input: [{ name: 'I', dataType: 'type_fp32', dims: ['-1', 3] }],
      instance_group: [{ kind: 'Kind_Gpu', gpus: [1] }],
      dynamicBatching: { maxQueueDelayMicroseconds: '100', defaultQueuePolicy: { timeoutAction: 'delay' } },
    });
    expect(cfg.maxBatchSize).toBe(4);
    expect(cfg.input[0]!.dataType).toBe(DataType.TYPE_FP32);
    expect(cfg.input[0]!.dims).toEqual([-1n, 3n]);
    expect(cfg.instanceGroup[0]!.kind).toBe(ModelInstanceGroup_Kind.GPU);
    expect(cfg.schedulingChoice.case).toBe('dynamicBatching');
  });

  it('rejects unknown fields, bad enum names, and non-objects with a ConfigError', () => {
    expect(() => modelConfigFromJson({ name: 'm', max_batch: 3 }, 'load config')).toThrowError(ConfigError);
    expect(() => modelConfigFromJson({ input: [{ name: 'x', dims: [1], dimz: [2] }] })).toThrowError(/dimz/);
    expect(() => modelConfigFromJson({ input: [{ data_type: 'TYPE_FLOAT' }] })).toThrowError(ConfigError);
    expect(() => modelConfigFromJson('[1]')).toThrowError(/must be a JSON object/);
    expect(() => modelConfigFromJson('{bad json', 'load config')).toThrowError(/^load config: invalid JSON/);
  });
});
