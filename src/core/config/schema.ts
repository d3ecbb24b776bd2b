/**
 * The model configuration types every layer shares, re-exported from the
 * code generated out of proto/model_config.proto (never edit src/generated),
 * plus the few helpers other layers need around them.
 *
 * Shape of the generated types: camelCase fields (`maxBatchSize`,
 * `dataType`), enums as numeric TS enums (`DataType.TYPE_FP32 === 11`),
 * 64-bit integers as `bigint` (`dims: bigint[]`), maps as plain objects,
 * oneofs as `{ case: 'dynamicBatching', value } | { case: undefined }`.
 */
import { clone, create, type MessageInitShape } from '@bufbuild/protobuf';
import { DataType, ModelConfigSchema, type ModelConfig } from '../../generated/model_config_pb.js';

export {
  BatchInput_Kind,
  BatchOutput_Kind,
  DataType,
  ModelConfigSchema,
  ModelDynamicBatchingSchema,
  ModelInput_Format,
  ModelInputSchema,
  ModelInstanceGroup_Kind,
  ModelInstanceGroupSchema,
  ModelOptimizationPolicy_ModelPriority,
  ModelOutputSchema,
  ModelQueuePolicy_TimeoutAction,
  ModelQueuePolicySchema,
  ModelSequenceBatching_Control_Kind,
  ModelWarmupSchema,
} from '../../generated/model_config_pb.js';

export type {
  BatchInput,
  BatchOutput,
  ModelConfig,
  ModelDynamicBatching,
  ModelEnsembling,
  ModelEnsembling_Step,
  ModelInput,
  ModelInstanceGroup,
  ModelMetrics,
  ModelOptimizationPolicy,
  ModelOutput,
  ModelParameter,
  ModelQueuePolicy,
  ModelRateLimiter,
  ModelResponseCache,
  ModelSequenceBatching,
  ModelSequenceBatching_Control,
  ModelSequenceBatching_ControlInput,
  ModelSequenceBatching_State,
  ModelTensorReshape,
  ModelTransactionPolicy,
  ModelVersionPolicy,
  ModelWarmup,
  ModelWarmup_Input,
} from '../../generated/model_config_pb.js';

/** Protocol datatype names (HTTP/gRPC `datatype`) by config enum. */
const PROTOCOL_NAMES: ReadonlyMap<DataType, string> = new Map([
  [DataType.TYPE_BOOL, 'BOOL'],
  [DataType.TYPE_UINT8, 'UINT8'],
  [DataType.TYPE_UINT16, 'UINT16'],
  [DataType.TYPE_UINT32, 'UINT32'],
  [DataType.TYPE_UINT64, 'UINT64'],
  [DataType.TYPE_INT8, 'INT8'],
  [DataType.TYPE_INT16, 'INT16'],
  [DataType.TYPE_INT32, 'INT32'],
  [DataType.TYPE_INT64, 'INT64'],
  [DataType.TYPE_FP16, 'FP16'],
  [DataType.TYPE_FP32, 'FP32'],
  [DataType.TYPE_FP64, 'FP64'],
  // The config says STRING, the wire protocol says BYTES.
  [DataType.TYPE_STRING, 'BYTES'],
  [DataType.TYPE_BF16, 'BF16'],
]);

const BY_PROTOCOL_NAME: ReadonlyMap<string, DataType> = new Map([...PROTOCOL_NAMES].map(([dt, name]) => [name, dt]));

const BYTE_SIZES: ReadonlyMap<DataType, number> = new Map([
  [DataType.TYPE_BOOL, 1],
  [DataType.TYPE_UINT8, 1],
  [DataType.TYPE_UINT16, 2],
  [DataType.TYPE_UINT32, 4],
  [DataType.TYPE_UINT64, 8],
  [DataType.TYPE_INT8, 1],
  [DataType.TYPE_INT16, 2],
  [DataType.TYPE_INT32, 4],
  [DataType.TYPE_INT64, 8],
  [DataType.TYPE_FP16, 2],
  [DataType.TYPE_FP32, 4],
  [DataType.TYPE_FP64, 8],
  [DataType.TYPE_BF16, 2],
]);

/** `TYPE_FP32` → `"FP32"`, `TYPE_STRING` → `"BYTES"`; `""` for TYPE_INVALID or an unknown number. */
export function dataTypeToProtocol(dt: DataType): string {
  return PROTOCOL_NAMES.get(dt) ?? '';
}

/** `"FP32"` → `TYPE_FP32`, `"BYTES"` → `TYPE_STRING`; TYPE_INVALID for anything else (case-sensitive, like Triton). */
export function protocolToDataType(name: string): DataType {
  return BY_PROTOCOL_NAME.get(name) ?? DataType.TYPE_INVALID;
}

/** The config enum's name, e.g. `"TYPE_FP32"`, as used in config JSON and error texts. */
export function dataTypeName(dt: DataType): string {
  return DataType[dt] ?? String(dt);
}

/** Bytes per element; 0 for TYPE_STRING (variable) and TYPE_INVALID. */
export function dataTypeByteSize(dt: DataType): number {
  return BYTE_SIZES.get(dt) ?? 0;
}

/** A new ModelConfig with every field at its default, optionally initialised. */
export function createModelConfig(init?: MessageInitShape<typeof ModelConfigSchema>): ModelConfig {
  return create(ModelConfigSchema, init);
}

/** Deep copy, so that normalisation never changes a caller's object. */
export function cloneModelConfig(cfg: ModelConfig): ModelConfig {
  return clone(ModelConfigSchema, cfg);
}
