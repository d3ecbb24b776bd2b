/**
 * @module core/model/config-view
 * Reads what the runtime needs from the generated `ModelConfig` once, at load time, into plain
 * numbers and strings (the protobuf types carry int64 as bigint and enums as numbers).
 */
import {
  type DataType,
  ModelQueuePolicy_TimeoutAction,
  ModelSequenceBatching_Control_Kind,
  type ModelConfig,
  type ModelQueuePolicy,
} from '../../generated/model_config_pb.js';
import { isDatatype, type Datatype } from '../datatype.js';
import { dataTypeToProtocol } from '../config/schema.js';
import type { TensorSpec } from '../model-handle.js';
import type { DynamicBatchingOptions, QueuePolicy } from '../scheduling/dynamic-batcher.js';
import type { ControlSpec, SequenceBatchingOptions, StateSpec } from '../scheduling/sequence-controls.js';

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

/** Sequence-batcher options, or undefined when the model has no `sequence_batching`. */
export function sequenceBatching(cfg: ModelConfig, states: StateSpec[] = []): SequenceBatchingOptions | undefined {
  if (cfg.schedulingChoice.case !== 'sequenceBatching') return undefined;
  const sb = cfg.schedulingChoice.value;
  const controls: ControlSpec[] = [];
  for (const input of sb.controlInput) {
    for (const c of input.control) {
      const kind = CONTROL_KINDS[c.kind];
      if (kind === undefined) continue;
      if (kind === 'corrid') {
        controls.push({ kind, name: input.name, datatype: datatypeOf(c.dataType) });
        continue;
      }
      // Exactly one [false, true] list is given (core/config/validate-sequence.ts); it sets the type.
      const [datatype, values]: [Datatype, number[]] =
        c.int32FalseTrue.length > 0
          ? ['INT32', c.int32FalseTrue]
          : c.fp32FalseTrue.length > 0
            ? ['FP32', c.fp32FalseTrue]
            : ['BOOL', c.boolFalseTrue.map((b) => (b ? 1 : 0))];
      controls.push({ kind, name: input.name, datatype, falseTrue: [values[0] ?? 0, values[1] ?? 1] });
    }
  }
  const strategy = sb.strategyChoice;
  const maxBatchSize = cfg.maxBatchSize;
  return {
    maxBatchSize,
    idleUs: Number(sb.maxSequenceIdleMicroseconds),
    iterative: sb.iterativeSequence,
    controls,
    states,
    strategy:
      strategy.case === 'oldest'
        ? {
            kind: 'oldest',
            // 0 means one candidate per batch row (Triton's default).
            candidates: strategy.value.maxCandidateSequences > 0 ? strategy.value.maxCandidateSequences : Math.max(1, maxBatchSize),
            preferredBatchSizes: [...strategy.value.preferredBatchSize],
            maxQueueDelayUs: Number(strategy.value.maxQueueDelayMicroseconds),
            preserveOrdering: strategy.value.preserveOrdering,
          }
        : {
            kind: 'direct',
            maxQueueDelayUs: Number(strategy.value?.maxQueueDelayMicroseconds ?? 0n),
            minimumSlotUtilization: strategy.value?.minimumSlotUtilization ?? 0,
          },
  };
}

const CONTROL_KINDS: Record<number, ControlSpec['kind']> = {
  [ModelSequenceBatching_Control_Kind.CONTROL_SEQUENCE_START]: 'start',
  [ModelSequenceBatching_Control_Kind.CONTROL_SEQUENCE_READY]: 'ready',
  [ModelSequenceBatching_Control_Kind.CONTROL_SEQUENCE_END]: 'end',
  [ModelSequenceBatching_Control_Kind.CONTROL_SEQUENCE_CORRID]: 'corrid',
};

/** A tensor the sequence batcher adds to a model's inputs or takes from its outputs. */
export interface SequenceTensor {
  name: string;
  datatype: Datatype;
  /** Without the batch dimension. */
  dims: number[];
}

/**
 * The tensors of a sequence model that are not in its `input` / `output`: the control inputs
 * (one element per request), the state inputs, and the state outputs with the input each feeds.
 * A backend feeds and fetches them as the graph's own (backends/onnx/).
 */
export function sequenceTensors(cfg: ModelConfig): { inputs: SequenceTensor[]; stateOutputs: Array<SequenceTensor & { input: string }> } {
  if (cfg.schedulingChoice.case !== 'sequenceBatching') return { inputs: [], stateOutputs: [] };
  const sb = cfg.schedulingChoice.value;
  const options = sequenceBatching(cfg)!;
  const inputs: SequenceTensor[] = options.controls.map((c) => ({ name: c.name, datatype: c.datatype, dims: [1] }));
  const stateOutputs: Array<SequenceTensor & { input: string }> = [];
  for (const s of sb.state) {
    const datatype = datatypeOf(s.dataType);
    const dims = s.dims.map(Number);
    inputs.push({ name: s.inputName, datatype, dims });
    stateOutputs.push({ name: s.outputName, input: s.inputName, datatype, dims });
  }
  return { inputs, stateOutputs };
}
