/**
 * @module backends/onnx/auto-complete
 * The ONNX graph as the source of truth for a model's config, as in Triton's ORT backend:
 *
 * - `autoCompleteFromGraph`: a config without inputs or without outputs gets them from the
 *   session's metadata (names, element types, shapes). When every graph input and output has a
 *   dynamic first dimension the model can batch: max_batch_size 0 becomes the backend's
 *   default-max-batch-size (an explicit non-zero value is kept) and, above 1, `dynamic_batching {}`
 *   is added unless a scheduler is configured. A config that lists both inputs and outputs is
 *   left as written (Triton skips auto-complete then) and is checked at load instead.
 * - `checkConfigAgainstGraph`: every configured input/output must exist in the graph with the
 *   same element type and compatible dims; a contradiction fails the load naming the tensor.
 */
import { create } from '@bufbuild/protobuf';
import { Errors } from '../../core/errors.js';
import { cloneModelConfig, dataTypeName, protocolToDataType } from '../../core/config/schema.js';
import { emptyDynamicBatching } from '../../core/config/normalize.js';
import type { Logger } from '../../core/logger.js';
import {
  type DataType,
  ModelInputSchema,
  ModelOutputSchema,
  ModelTensorReshapeSchema,
  type ModelConfig,
  type ModelInput,
  type ModelOutput,
} from '../../generated/model_config_pb.js';
import { sequenceTensors } from '../../core/model/config-view.js';
import { datatypeOfOrt } from './ort-types.js';
import type { SessionInfo, TensorMeta } from './runner.js';

/** Every input and output has a dynamic first dimension (Triton's test for "can batch"). */
export function graphCanBatch(info: SessionInfo): boolean {
  return [...info.inputs, ...info.outputs].every((t) => t.shape.length > 0 && t.shape[0] === -1);
}

/** The config enum for a graph tensor's element type; fails naming the tensor when there is none. */
export function configTypeOf(model: string, t: TensorMeta): DataType {
  const dt = t.isTensor && t.type !== undefined ? datatypeOfOrt(t.type) : undefined;
  if (dt === undefined) {
    const what = t.isTensor ? `element type '${t.type}'` : 'a non-tensor type (sequence or map)';
    throw Errors.onnxAutofillType(model, t.name, what);
  }
  return protocolToDataType(dt);
}

export function autoCompleteFromGraph(config: ModelConfig, info: SessionInfo, defaultMaxBatchSize: number, logger: Logger): ModelConfig {
  const out = cloneModelConfig(config);
  const hasInputs = out.input.length + out.batchInput.length > 0;
  const hasOutputs = out.output.length > 0;
  if (hasInputs && hasOutputs) {
    logger.info(`skipping model configuration auto-complete for '${out.name}': inputs and outputs already specified`, 'onnxruntime');
    return out;
  }
  if (graphCanBatch(info)) {
    if (out.maxBatchSize === 0) {
      out.maxBatchSize = Math.max(0, defaultMaxBatchSize);
      logger.warn(
        `autofilled max_batch_size to ${out.maxBatchSize} for model '${out.name}' since batching is supported but no max_batch_size is specified in model configuration. Must specify max_batch_size to utilize autofill with a larger max batch size`,
        'onnxruntime',
      );
    }
    if (out.maxBatchSize > 1 && out.schedulingChoice.case === undefined) out.schedulingChoice = emptyDynamicBatching();
  } else if (out.maxBatchSize !== 0) {
    throw Errors.onnxAutofillBatching(out.name);
  }
  // A sequence model's control and state tensors are the batcher's, not the client's.
  const seq = sequenceTensors(out);
  const own = new Set([...seq.inputs.map((t) => t.name), ...seq.stateOutputs.map((t) => t.name)]);
  if (!hasInputs) out.input = info.inputs.filter((t) => !own.has(t.name)).map((t) => completeTensor(out, t, ModelInputSchema) as ModelInput);
  if (!hasOutputs) out.output = info.outputs.filter((t) => !own.has(t.name)).map((t) => completeTensor(out, t, ModelOutputSchema) as ModelOutput);
  return out;
}

function completeTensor(cfg: ModelConfig, t: TensorMeta, schema: typeof ModelInputSchema | typeof ModelOutputSchema): ModelInput | ModelOutput {
  const dataType = configTypeOf(cfg.name, t);
  const dims = t.shape.slice(cfg.maxBatchSize > 0 ? 1 : 0).map(BigInt);
  const io = create(schema as typeof ModelInputSchema, { name: t.name, dataType, dims });
  if (dims.length === 0) {
    // A scalar (or, with batching, a [batch] tensor): config dims cannot be empty, so [1],
    // reshaped to the graph's empty shape when batching.
    io.dims = [1n];
    if (cfg.maxBatchSize > 0) io.reshape = create(ModelTensorReshapeSchema, { shape: [] });
  }
  return io;
}

/** Throws the load error for the first configured tensor the graph contradicts. */
export function checkConfigAgainstGraph(config: ModelConfig, info: SessionInfo): void {
  const m = config.name;
  const seq = sequenceTensors(config);
  const required = config.input.filter((i) => !i.optional).length + seq.inputs.length;
  if (info.inputs.length !== required) {
    throw Errors.onnxInputCount(m, required, info.inputs.length);
  }
  const graphInputs = new Map(info.inputs.map((t) => [t.name, t]));
  for (const io of config.input) {
    if (io.optional && config.maxBatchSize !== 0) {
      throw Errors.onnxOptionalBatching(m, io.name);
    }
    const g = graphInputs.get(io.name);
    if (!g) {
      throw Errors.onnxMissingTensor(m, 'input', io.name, names(info.inputs));
    }
    checkTensor(config, 'input', io.name, io.dataType, io.reshape ? io.reshape.shape : io.dims, g, io.allowRaggedBatch);
  }
  const graphOutputs = new Map(info.outputs.map((t) => [t.name, t]));
  for (const io of config.output) {
    const g = graphOutputs.get(io.name);
    if (!g) {
      throw Errors.onnxMissingTensor(m, 'output', io.name, names(info.outputs));
    }
    checkTensor(config, 'output', io.name, io.dataType, io.reshape ? io.reshape.shape : io.dims, g, false);
  }
  // The sequence batcher's inputs (controls, state) and the state outputs are the graph's too.
  for (const t of seq.inputs) {
    const g = graphInputs.get(t.name);
    if (!g) throw Errors.onnxMissingTensor(m, 'input', t.name, names(info.inputs));
    checkTensor(config, 'input', t.name, protocolToDataType(t.datatype), t.dims.map(BigInt), g, false);
  }
  for (const t of seq.stateOutputs) {
    const g = graphOutputs.get(t.name);
    if (!g) throw Errors.onnxMissingTensor(m, 'output', t.name, names(info.outputs));
    checkTensor(config, 'output', t.name, protocolToDataType(t.datatype), t.dims.map(BigInt), g, false);
  }
}

function names(list: readonly TensorMeta[]): string {
  return list.length ? list.map((t) => `'${t.name}'`).join(', ') : '(none)';
}

function checkTensor(
  config: ModelConfig,
  kind: 'input' | 'output',
  name: string,
  dataType: DataType,
  configDims: readonly bigint[],
  g: TensorMeta,
  ragged: boolean,
): void {
  const m = config.name;
  const graphType = configTypeOf(m, g);
  if (graphType !== dataType) {
    throw Errors.onnxDataType(m, dataTypeName(dataType), kind, name, dataTypeName(graphType));
  }
  const dims = configDims.map(Number);
  if (ragged) {
    if (g.shape.length !== 1 || g.shape[0] !== -1) {
      throw Errors.onnxRaggedShape(m, name, g.shape);
    }
    return;
  }
  if (g.shape.length === 0) {
    // A scalar in the graph: the config may only say [1] (Triton's convention).
    if (dims.some((d) => d !== 1)) {
      throw Errors.onnxScalarDims(m, name, dims);
    }
    return;
  }
  const batching = config.maxBatchSize > 0;
  if (batching && g.shape[0] !== -1) {
    throw Errors.onnxBatchDim(m, kind, name, g.shape);
  }
  const full = batching ? [-1, ...dims] : dims;
  if (full.length !== g.shape.length) {
    throw Errors.onnxRank(m, kind, name, g.shape, full, batching);
  }
  for (let i = batching ? 1 : 0; i < full.length; i++) {
    if (g.shape[i] !== -1 && g.shape[i] !== full[i]) {
      throw Errors.onnxDims(m, kind, name, g.shape, full);
    }
  }
}
