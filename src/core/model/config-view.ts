/**
 * @module core/model/config-view
 * Reads what the runtime needs from the generated `ModelConfig` once, at load time, into plain
 * numbers and strings (the protobuf types carry int64 as bigint and enums as numbers).
 */
import { type DataType, ModelQueuePolicy_TimeoutAction, type ModelConfig, type ModelQueuePolicy } from '../../generated/model_config_pb.js';
import { isDatatype, type Datatype } from '../datatype.js';
import { dataTypeToProtocol } from '../config/schema.js';
import type { TensorSpec } from '../model-handle.js';
import type { DynamicBatchingOptions, QueuePolicy } from '../scheduling/dynamic-batcher.js';

export function datatypeOf(dt: DataType): Datatype {
  const name = dataTypeToProtocol(dt);
  if (!isDatatype(name)) throw new Error(`invalid data type ${dt}`);
  return name;
}

export function inputSpecs(cfg: ModelConfig): TensorSpec[] {
  return cfg.input.map((i) => ({ name: i.name, datatype: datatypeOf(i.dataType), dims: i.dims.map(Number), optional: i.optional }));
}

export function outputSpecs(cfg: ModelConfig): TensorSpec[] {
  return cfg.output.map((o) => ({ name: o.name, datatype: datatypeOf(o.dataType), dims: o.dims.map(Number), optional: false }));
}

export function isDecoupled(cfg: ModelConfig): boolean {
  return cfg.modelTransactionPolicy?.decoupled === true;
}

function queuePolicy(p: ModelQueuePolicy | undefined): QueuePolicy {
  return {
    timeoutAction: p?.timeoutAction === ModelQueuePolicy_TimeoutAction.DELAY ? 'DELAY' : 'REJECT',
    defaultTimeoutUs: Number(p?.defaultTimeoutMicroseconds ?? 0n),
    allowTimeoutOverride: p?.allowTimeoutOverride ?? false,
    maxQueueSize: p?.maxQueueSize ?? 0,
  };
}

/** Dynamic-batcher options, or undefined when the model has no `dynamic_batching`. */
export function dynamicBatching(cfg: ModelConfig): DynamicBatchingOptions | undefined {
  if (cfg.schedulingChoice.case !== 'dynamicBatching') return undefined;
  const db = cfg.schedulingChoice.value;
  const perLevel = new Map<number, QueuePolicy>();
  for (const [k, v] of Object.entries(db.priorityQueuePolicy)) perLevel.set(Number(k), queuePolicy(v));
  return {
    maxBatchSize: cfg.maxBatchSize,
    preferredBatchSizes: [...db.preferredBatchSize],
    maxQueueDelayUs: Number(db.maxQueueDelayMicroseconds),
    preserveOrdering: db.preserveOrdering,
    priorityLevels: Number(db.priorityLevels),
    defaultPriorityLevel: Number(db.defaultPriorityLevel),
    defaultQueuePolicy: queuePolicy(db.defaultQueuePolicy),
    priorityQueuePolicy: perLevel,
  };
}
