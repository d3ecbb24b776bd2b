/**
 * @module core/ensemble/plan
 * An ensemble's data flow read from its config alone (docs/design.md, "Ensembles"): its steps,
 * which step writes each tensor and which steps read it. `planEnsemble` refuses, with
 * tritonserver 2.51's texts and in its order, what Triton refuses before it looks at the
 * composing models (docs/protocol-notes.md, "Ensembles"): a tensor written twice, an ensemble
 * input no step reads, an ensemble output no step writes, an output that cannot be reached from
 * the inputs (a tensor nobody writes, or a cycle), a written tensor nobody reads.
 */
import type { ModelConfig } from '../../generated/model_config_pb.js';
import { Errors } from '../errors.js';

export interface PlanStep {
  index: number;
  modelName: string;
  /** '' = the latest ready version (`model_version: -1`). */
  modelVersion: string;
  /** [model input, ensemble tensor], in config order. */
  inputs: Array<[string, string]>;
  /** [model output, ensemble tensor], in config order. */
  outputs: Array<[string, string]>;
}

export interface EnsemblePlan {
  model: string;
  steps: PlanStep[];
  /** The ensemble's inputs and outputs, in config order. */
  inputs: string[];
  outputs: string[];
  /** Ensemble tensor → index of the step that writes it. */
  producer: Map<string, number>;
  /** Ensemble tensor → indexes of the steps that read it. */
  consumers: Map<string, number[]>;
}

/** The names of the models an ensemble's steps call (its dependencies), without repeats. */
export function stepModels(config: ModelConfig): string[] {
  if (config.schedulingChoice.case !== 'ensembleScheduling') return [];
  return [...new Set(config.schedulingChoice.value.step.map((s) => s.modelName).filter((n) => n !== ''))];
}

/** Reads and checks the data flow of an ensemble config; throws the first problem. */
export function planEnsemble(config: ModelConfig): EnsemblePlan {
  const model = config.name;
  if (config.schedulingChoice.case !== 'ensembleScheduling') throw Errors.ensembleSchedulingMissing(model);
  const raw = config.schedulingChoice.value.step;
  if (raw.length === 0) throw Errors.ensembleNoSteps(model);
  const producer = new Map<string, number>();
  const consumers = new Map<string, number[]>();
  const steps: PlanStep[] = raw.map((s, index) => {
    if (s.modelName === '') throw Errors.ensembleStepNoModel(model, index);
    const inputs = Object.entries(s.inputMap);
    const outputs = Object.entries(s.outputMap);
    for (const [, tensor] of inputs) {
      const list = consumers.get(tensor) ?? [];
      if (!list.includes(index)) list.push(index);
      consumers.set(tensor, list);
    }
    for (const [, tensor] of outputs) {
      if (producer.has(tensor)) throw Errors.ensembleOutputTwice(tensor, model, index);
      producer.set(tensor, index);
    }
    return { index, modelName: s.modelName, modelVersion: s.modelVersion < 0n ? '' : String(s.modelVersion), inputs, outputs };
  });
  const inputs = config.input.map((i) => i.name);
  const outputs = config.output.map((o) => o.name);
  for (const name of inputs) if (!consumers.has(name)) throw Errors.ensembleInputUnused(name, model);
  for (const name of outputs) if (!producer.has(name)) throw Errors.ensembleOutputUnused(name, model);

  // Walk back from every output: each tensor must lead to the ensemble's inputs. A tensor nobody
  // writes, or one that reaches a step already on the walk (a cycle), is "not connected".
  const inputSet = new Set(inputs);
  const connected = new Set<number>();
  const onWalk = new Set<number>();
  const reach = (tensor: string): string | undefined => {
    if (inputSet.has(tensor)) return undefined;
    const p = producer.get(tensor);
    if (p === undefined || onWalk.has(p)) return tensor;
    if (connected.has(p)) return undefined;
    onWalk.add(p);
    for (const [, t] of steps[p]!.inputs) {
      const broken = reach(t);
      if (broken !== undefined) return broken;
    }
    onWalk.delete(p);
    connected.add(p);
    return undefined;
  };
  for (const output of outputs) {
    onWalk.clear();
    const broken = reach(output);
    if (broken !== undefined) throw Errors.ensembleOutputNotWritten(output, model, broken);
  }
  const outputSet = new Set(outputs);
  for (const tensor of producer.keys()) {
    if (!consumers.has(tensor) && !outputSet.has(tensor)) throw Errors.ensembleTensorUnused(tensor, model);
  }
  return { model, steps, inputs, outputs, producer, consumers };
}
