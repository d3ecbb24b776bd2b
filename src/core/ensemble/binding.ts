/**
 * @module core/ensemble/binding
 * An ensemble's plan checked against its composing models once they are loaded (the second half
 * of Triton's checks, same texts and order, docs/protocol-notes.md "Ensembles"): every step's
 * model and version serve, its maps name real inputs and outputs and cover every required input,
 * and each tensor's data type and dims agree at both ends (the ensemble's own inputs and outputs
 * included). It also works out what running needs: which steps are decoupled and, for every
 * tensor, the chain of decoupled steps it descends from (its *lineage*), which is how the
 * responses of a decoupled step are paired with the tensors downstream steps read
 * (core/ensemble/run.ts).
 */
import type { ModelConfig } from '../../generated/model_config_pb.js';
import type { Datatype } from '../datatype.js';
import { Errors, TritonError } from '../errors.js';
import type { InternalClient } from '../internal-client.js';
import type { ModelHandle, TensorSpec } from '../model-handle.js';
import { inputSpecs, outputSpecs } from '../model/config-view.js';
import type { EnsemblePlan } from './plan.js';

export interface EnsembleBinding {
  /** Per step: whether its model is decoupled (each of its responses feeds the steps after it). */
  decoupledSteps: boolean[];
  /** Tensor → indexes of the decoupled steps it descends from, outermost first. */
  lineage: Map<string, number[]>;
  /** Whether any step is decoupled: the ensemble then answers as a decoupled model. */
  decoupled: boolean;
}

/** Config data type name as Triton prints it (`TYPE_FP32`; BYTES is TYPE_STRING). */
const typeName = (d: Datatype): string => (d === 'BYTES' ? 'TYPE_STRING' : `TYPE_${d}`);
const dimsText = (dims: readonly number[]): string => `[${dims.join(',')}]`;
const dimsAgree = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((d, i) => d === -1 || b[i] === -1 || d === b[i]);

/** Resolves every step's model through `client` and checks the ensemble against them. */
export function bindEnsemble(config: ModelConfig, plan: EnsemblePlan, client: InternalClient): EnsembleBinding {
  const model = plan.model;
  const handles: ModelHandle[] = [];
  const unavailable: string[] = [];
  for (const step of plan.steps) {
    try {
      handles.push(client.resolveModel(step.modelName, step.modelVersion));
    } catch (err) {
      // A model with some version loaded but not this one, or none at all.
      if (step.modelVersion !== '' && hasAnyVersion(client, step.modelName)) throw Errors.ensembleVersionNotLoaded(model, step.modelName, step.modelVersion);
      if (!(err instanceof TritonError)) throw err;
      if (!unavailable.includes(step.modelName)) unavailable.push(step.modelName);
    }
  }
  if (unavailable.length > 0) throw Errors.ensembleModelsUnavailable(model, unavailable);

  // Each tensor's data type and dims, and who said so first: the ensemble itself, then the steps.
  const seen = new Map<string, { datatype: Datatype; dims: number[]; from: string }>();
  const agree = (tensor: string, spec: TensorSpec, from: string) => {
    const first = seen.get(tensor);
    if (!first) {
      seen.set(tensor, { datatype: spec.datatype, dims: spec.dims, from });
      return;
    }
    if (first.datatype !== spec.datatype) {
      throw Errors.ensembleDataTypeMismatch(model, tensor, typeName(first.datatype), first.from, typeName(spec.datatype), from);
    }
    if (!dimsAgree(first.dims, spec.dims)) throw Errors.ensembleShapeMismatch(model, tensor, dimsText(first.dims), first.from, dimsText(spec.dims), from);
  };
  for (const spec of inputSpecs(config)) agree(spec.name, spec, model);
  for (const spec of outputSpecs(config)) agree(spec.name, spec, model);

  plan.steps.forEach((step, k) => {
    const h = handles[k]!;
    if (config.maxBatchSize > 0 && h.maxBatchSize > 0 && config.maxBatchSize > h.maxBatchSize) {
      throw Errors.ensembleBatchSize(model, config.maxBatchSize, h.name, h.maxBatchSize);
    }
    for (const [input, tensor] of step.inputs) {
      const spec = h.inputs.find((s) => s.name === input);
      if (!spec) throw Errors.ensembleStepInputUnknown(model, tensor, input, h.name);
      agree(tensor, spec, h.name);
    }
    for (const spec of h.inputs) {
      if (!spec.optional && !step.inputs.some(([input]) => input === spec.name)) throw Errors.ensembleStepInputUnmapped(model, spec.name, h.name);
    }
    for (const [output, tensor] of step.outputs) {
      const spec = h.outputs.find((s) => s.name === output);
      if (!spec) throw Errors.ensembleStepOutputUnknown(model, tensor, output, h.name);
      agree(tensor, spec, h.name);
    }
  });

  const decoupledSteps = handles.map((h) => h.decoupled);
  return { decoupledSteps, lineage: lineages(plan, decoupledSteps), decoupled: decoupledSteps.some(Boolean) };
}

function hasAnyVersion(client: InternalClient, name: string): boolean {
  try {
    client.resolveModel(name, '');
    return true;
  } catch {
    return false;
  }
}

/**
 * The decoupled ancestry of every tensor. A step's inputs must descend from one chain of
 * decoupled steps (each lineage a prefix of the longest), else their responses cannot be paired
 * and Triton refuses the ensemble; a decoupled step adds itself to what it writes.
 */
function lineages(plan: EnsemblePlan, decoupledSteps: boolean[]): Map<string, number[]> {
  const lineage = new Map<string, number[]>();
  for (const name of plan.inputs) lineage.set(name, []);
  const stepLineage = new Map<number, number[]>();
  const of = (k: number): number[] => {
    const known = stepLineage.get(k);
    if (known) return known;
    const step = plan.steps[k]!;
    let longest: number[] = [];
    stepLineage.set(k, longest); // a cycle (refused by the plan unless unreachable) reads as no ancestry
    for (const [, tensor] of step.inputs) {
      const p = plan.producer.get(tensor);
      const l = lineage.get(tensor) ?? (p === undefined ? [] : outputLineage(p));
      const [short, long] = l.length <= longest.length ? [l, longest] : [longest, l];
      if (!short.every((s, i) => long[i] === s)) throw Errors.ensembleDecoupledOrigins(plan.model, k, step.modelName);
      longest = long;
    }
    stepLineage.set(k, longest);
    return longest;
  };
  const outputLineage = (k: number): number[] => (decoupledSteps[k] ? [...of(k), k] : of(k));
  plan.steps.forEach((step, k) => {
    const out = outputLineage(k);
    for (const [, tensor] of step.outputs) lineage.set(tensor, out);
  });
  return lineage;
}
