/**
 * ModelConfig ↔ JSON as Triton renders it for `GET /v2/models/<m>/config`,
 * the HTTP `load` config parameter and the Python backend's
 * `args["model_config"]` (docs/protocol-notes.md, "Model configuration normalisation"):
 * protobuf JSON with proto field names, every implicit-presence field printed
 * even when default, enums by name, unset message fields left out, maps as
 * objects, keys in declaration order — and a chosen set of 64-bit integer
 * fields turned from protobuf's strings back into JSON numbers.
 */
import { fromJson, ScalarType, type DescEnum, type DescField, type DescMessage, type JsonValue } from '@bufbuild/protobuf';
import { reflect, type ReflectMessage } from '@bufbuild/protobuf/reflect';
import { ModelConfigSchema, type ModelConfig } from '../../generated/model_config_pb.js';
import { Errors } from '../errors.js';

/**
 * The 64-bit fields Triton's ModelConfigToJson rewrites as JSON numbers
 * (protocol-notes, "Model configuration normalisation"). Every other int64/uint64 field keeps protobuf's string form, as in
 * Triton. test/config/json.test.ts fails when the schema gains a 64-bit field
 * that is in neither this set nor INT64_FIELDS_KEPT_AS_STRINGS.
 */
export const INT64_FIELDS_AS_NUMBERS: ReadonlySet<string> = new Set([
  'inference.ModelInput.dims',
  'inference.ModelOutput.dims',
  'inference.ModelTensorReshape.shape',
  'inference.ModelVersionPolicy.Specific.versions',
  'inference.ModelDynamicBatching.max_queue_delay_microseconds',
  'inference.ModelDynamicBatching.priority_levels',
  'inference.ModelDynamicBatching.default_priority_level',
  // Both default_queue_policy and every priority_queue_policy value.
  'inference.ModelQueuePolicy.default_timeout_microseconds',
  'inference.ModelSequenceBatching.max_sequence_idle_microseconds',
  'inference.ModelSequenceBatching.StrategyDirect.max_queue_delay_microseconds',
  'inference.ModelSequenceBatching.StrategyOldest.max_queue_delay_microseconds',
  'inference.ModelSequenceBatching.State.dims',
  'inference.ModelEnsembling.Step.model_version',
  'inference.ModelWarmup.Input.dims',
]);

/** 64-bit fields Triton does not rewrite: they stay JSON strings in its output. */
export const INT64_FIELDS_KEPT_AS_STRINGS: ReadonlySet<string> = new Set([
  'inference.ModelInstanceGroup.SecondaryDevice.device_id',
  'inference.ModelOptimizationPolicy.Cuda.GraphSpec.Shape.dim',
  'inference.ModelSequenceBatching.InitialState.dims',
]);

/**
 * Fields of our proto that tritonserver 2.51's has not (added by later Triton releases): 2.51
 * never prints them, so they are printed only when set to something other than their default.
 */
const FIELDS_NEWER_THAN_TRITON: ReadonlySet<string> = new Set(['inference.ModelEnsembling.max_inflight_responses']);

export interface ModelConfigJsonOptions {
  /**
   * 'triton' (default): numbers exactly for INT64_FIELDS_AS_NUMBERS, as
   * Triton does. 'all': every 64-bit integer becomes a number.
   */
  int64?: 'triton' | 'all';
}

export type JsonObject = { [key: string]: JsonValue };

/** Render a ModelConfig exactly as Triton's `/config` endpoint does. */
export function modelConfigToJson(cfg: ModelConfig, options: ModelConfigJsonOptions = {}): JsonObject {
  const asNumber = options.int64 === 'all' ? () => true : (f: DescField) => INT64_FIELDS_AS_NUMBERS.has(fieldFullName(f));
  return messageToJson(reflect(ModelConfigSchema, cfg), asNumber);
}

/** `inference.ModelInput.dims`: the message's full name plus the field name. */
export function fieldFullName(f: DescField): string {
  return `${f.parent.typeName}.${f.name}`;
}

function messageToJson(msg: ReflectMessage, asNumber: (f: DescField) => boolean): JsonObject {
  const out: JsonObject = {};
  // desc.fields is declaration order, which is the order Triton prints keys in.
  for (const f of msg.desc.fields) {
    switch (f.fieldKind) {
      case 'message':
        if (msg.isSet(f)) out[f.name] = messageToJson(msg.get(f), asNumber);
        break;
      case 'scalar':
        // A oneof member is printed only when it is the one set; other
        // proto3 scalars always (always_print_primitive_fields).
        if (FIELDS_NEWER_THAN_TRITON.has(fieldFullName(f)) && !msg.isSet(f)) break;
        if (f.oneof === undefined || msg.isSet(f)) out[f.name] = scalarToJson(f.scalar, msg.get(f), asNumber(f));
        break;
      case 'enum':
        if (FIELDS_NEWER_THAN_TRITON.has(fieldFullName(f)) && !msg.isSet(f)) break;
        if (f.oneof === undefined || msg.isSet(f)) out[f.name] = enumToJson(f.enum, msg.get(f));
        break;
      case 'list': {
        const items: JsonValue[] = [];
        for (const v of msg.get(f)) {
          if (f.listKind === 'message') items.push(messageToJson(v as ReflectMessage, asNumber));
          else if (f.listKind === 'enum') items.push(enumToJson(f.enum, v as number));
          else items.push(scalarToJson(f.scalar, v, asNumber(f)));
        }
        out[f.name] = items;
        break;
      }
      case 'map': {
        const obj: JsonObject = {};
        for (const [k, v] of msg.get(f)) {
          const key = String(k);
          if (f.mapKind === 'message') obj[key] = messageToJson(v as ReflectMessage, asNumber);
          else if (f.mapKind === 'enum') obj[key] = enumToJson(f.enum, v as number);
          else obj[key] = scalarToJson(f.scalar, v, asNumber(f));
        }
        out[f.name] = obj;
        break;
      }
    }
  }
  return out;
}

function enumToJson(desc: DescEnum, value: number): JsonValue {
  // An unknown number (open proto3 enum) prints as the number.
  return desc.values.find((v) => v.number === value)?.name ?? value;
}

function scalarToJson(type: ScalarType, value: unknown, int64AsNumber: boolean): JsonValue {
  switch (type) {
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return int64AsNumber ? Number(value as bigint) : String(value);
    case ScalarType.FLOAT:
      return floatToJson(value as number, true);
    case ScalarType.DOUBLE:
      return floatToJson(value as number, false);
    case ScalarType.BYTES:
      return Buffer.from(value as Uint8Array).toString('base64');
    default:
      return value as JsonValue;
  }
}

function floatToJson(v: number, single: boolean): JsonValue {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '-Infinity';
  if (!single) return v;
  // A float field holds a 32-bit value; print the shortest decimal that reads
  // back to the same float (0.1, not 0.10000000149011612), as C++ does.
  const f = Math.fround(v);
  for (let p = 1; p <= 9; p++) {
    const candidate = Number(f.toPrecision(p));
    if (Math.fround(candidate) === f) return candidate;
  }
  return f;
}

/**
 * Protobuf JSON → ModelConfig, for `auto_complete_config` results and the
 * `load` config override. Accepts proto (snake_case) or JSON (camelCase) field
 * names, numbers or strings for 64-bit integers, enum names in any case;
 * unknown fields are an error. `json` may be the parsed object or its text.
 */
export function modelConfigFromJson(json: unknown, file = 'model config JSON'): ModelConfig {
  let value: unknown = json;
  if (typeof json === 'string') {
    try {
      value = JSON.parse(json);
    } catch (e) {
      throw Errors.configJsonSyntax({ file }, file, (e as Error).message);
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw Errors.configJsonNotObject({ file }, file);
  }
  try {
    return fromJson(ModelConfigSchema, canonicalEnums(ModelConfigSchema, value) as JsonValue, {
      ignoreUnknownFields: false,
    });
  } catch (e) {
    throw Errors.configJsonInvalid({ file }, file, (e as Error).message);
  }
}

/** Copy of `value` with enum names rewritten to their declared spelling. */
function canonicalEnums(desc: DescMessage, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const f = desc.fields.find((x) => x.name === key || x.jsonName === key);
    out[key] = f === undefined || v === null ? v : canonicalField(f, v);
  }
  return out;
}

function canonicalField(f: DescField, v: unknown): unknown {
  let enumDesc: DescEnum | undefined;
  let msgDesc: DescMessage | undefined;
  switch (f.fieldKind) {
    case 'enum':
      enumDesc = f.enum;
      break;
    case 'message':
      msgDesc = f.message;
      break;
    case 'list':
      if (f.listKind === 'enum') enumDesc = f.enum;
      else if (f.listKind === 'message') msgDesc = f.message;
      break;
    case 'map':
      if (f.mapKind === 'enum') enumDesc = f.enum;
      else if (f.mapKind === 'message') msgDesc = f.message;
      break;
  }
  const one = (x: unknown): unknown => (enumDesc ? canonicalEnum(enumDesc, x) : msgDesc ? canonicalEnums(msgDesc, x) : x);
  if (f.fieldKind === 'list') return Array.isArray(v) ? v.map(one) : v;
  if (f.fieldKind === 'map') {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, one(x)]));
  }
  return one(v);
}

function canonicalEnum(desc: DescEnum, v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const upper = v.toUpperCase();
  return desc.values.find((e) => e.name.toUpperCase() === upper)?.name ?? v;
}
