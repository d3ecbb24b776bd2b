/**
 * @module core/request/validate
 * Checks an inference request against the model config the way Triton's core does (docs/protocol-notes.md,
 * "Request validation"): input names and count, datatypes, shapes with and without a batch dimension,
 * byte sizes, BYTES element counts, requested outputs. Returns what the scheduler needs.
 */
import { Errors } from '../errors.js';
import type { InferRequest } from '../inference.js';
import type { TensorSpec } from '../model-handle.js';
import { countBytesElements, elementCount, expectedByteSize } from '../tensor.js';

export interface ValidationModel {
  name: string;
  maxBatchSize: number;
  inputs: readonly TensorSpec[];
  outputs: readonly TensorSpec[];
}

export interface ValidatedRequest {
  /** size(r): first dimension for batching models, else 1. */
  batchSize: number;
  shapeSignature: string;
}

/** What validation looks up in a model's inputs, built once per model (its spec array). */
interface InputTable {
  byName: Map<string, TensorSpec>;
  required: number;
}

const inputTables = new WeakMap<readonly TensorSpec[], InputTable>();
const outputNameSets = new WeakMap<readonly TensorSpec[], Set<string>>();

function inputTable(inputs: readonly TensorSpec[]): InputTable {
  let table = inputTables.get(inputs);
  if (table === undefined) {
    table = { byName: new Map(inputs.map((s) => [s.name, s])), required: inputs.filter((s) => !s.optional).length };
    inputTables.set(inputs, table);
  }
  return table;
}

function outputNames(outputs: readonly TensorSpec[]): Set<string> {
  let names = outputNameSets.get(outputs);
  if (names === undefined) {
    names = new Set(outputs.map((o) => o.name));
    outputNameSets.set(outputs, names);
  }
  return names;
}

/** True when an input before position `i` has the same name (requests carry a handful of inputs). */
function namedEarlier(inputs: InferRequest['inputs'], i: number): boolean {
  const name = inputs[i]!.name;
  for (let j = 0; j < i; j++) if (inputs[j]!.name === name) return true;
  return false;
}

export function validateRequest(model: ValidationModel, req: InferRequest): ValidatedRequest {
  // Runs for every request: the model's lookup tables are cached, not built again each time.
  const { byName, required } = inputTable(model.inputs);
  let requiredSeen = 0;
  for (let i = 0; i < req.inputs.length; i++) {
    const t = req.inputs[i]!;
    const spec = byName.get(t.name);
    if (spec === undefined) throw Errors.unexpectedInput(model.name, t.name);
    if (namedEarlier(req.inputs, i)) throw Errors.duplicateInput(model.name, t.name);
    if (!spec.optional) requiredSeen++;
  }
  if (requiredSeen < required || req.inputs.length > model.inputs.length) {
    const expected = required === model.inputs.length ? String(required) : `between ${required} and ${model.inputs.length}`;
    throw Errors.inputCount(model.name, expected, req.inputs.length);
  }

  const batching = model.maxBatchSize > 0;
  let batch = -1;
  // Only models with variable dims or optional inputs have a signature (most have none).
  let signature: string[] | undefined;
  for (const t of req.inputs) {
    const spec = byName.get(t.name)!;
    if (t.datatype !== spec.datatype) throw Errors.dataTypeMismatch(model.name, t.name, t.datatype, spec.datatype);
    for (const d of t.shape) {
      if (!Number.isSafeInteger(d) || d < 0) {
        throw Errors.invalidShape(model.name, t.name);
      }
    }
    let dims = t.shape;
    if (batching) {
      if (t.shape.length === 0) throw Errors.emptyBatchShape(model.name, t.name);
      const b = t.shape[0]!;
      if (batch === -1) batch = b;
      else if (b !== batch) throw Errors.batchSizeMismatch(model.name, t.name);
      dims = t.shape.slice(1);
    }
    if (!shapeMatches(spec.dims, dims)) {
      const want = batching ? [-1, ...spec.dims] : spec.dims;
      throw Errors.shapeMismatch(model.name, t.name, want, t.shape, batching);
    }
    const expected = expectedByteSize(t.datatype, t.shape);
    if (expected !== undefined) {
      if (t.data.length !== expected) throw Errors.byteSizeMismatch(t.name, expected, t.data.length);
    } else {
      const n = countBytesElements(t.data);
      if (n < 0) throw Errors.bytesMalformed(t.name);
      const want = elementCount(t.shape);
      if (n !== want) throw Errors.bytesElementCount(t.name, want, n);
    }
    if (hasVariableDim(spec.dims)) (signature ??= []).push(`${t.name}:${dims.join('x')}`);
    if (spec.optional) (signature ??= []).push(`+${t.name}`);
  }
  if (batching && batch > model.maxBatchSize) throw Errors.batchTooLarge(model.name, model.maxBatchSize);

  if (req.outputs) {
    const outNames = outputNames(model.outputs);
    const outs = req.outputs;
    let repeated = false;
    for (let i = 0; i < outs.length; i++) {
      const name = outs[i]!.name;
      if (!outNames.has(name)) throw Errors.unexpectedOutput(model.name, name);
      // Requests name a handful of outputs: a scan of the earlier ones allocates nothing.
      for (let j = 0; j < i && !repeated; j++) if (outs[j]!.name === name) repeated = true;
    }
    // A name asked for twice is one requested output, as in Triton (a set of names): the model
    // sees it once and the response carries it once; the first request's choices stand.
    if (repeated) req.outputs = outs.filter((o, i, all) => all.findIndex((p) => p.name === o.name) === i);
  }
  return { batchSize: batching ? Math.max(1, batch) : 1, shapeSignature: signature === undefined ? '' : signature.join(';') };
}

function hasVariableDim(dims: readonly number[]): boolean {
  for (let i = 0; i < dims.length; i++) if (dims[i]! < 0) return true;
  return false;
}

function shapeMatches(config: readonly number[], got: readonly number[]): boolean {
  if (config.length !== got.length) return false;
  for (let i = 0; i < config.length; i++) {
    if (config[i] !== -1 && config[i] !== got[i]) return false;
  }
  return true;
}
