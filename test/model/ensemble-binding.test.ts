/**
 * The parts of an ensemble's load checks that the end-to-end suite (test/e2e/ensemble.test.ts)
 * does not reach with real models: the lineage of tensors below decoupled steps (which pairs a
 * decoupled step's responses with the tensors read after it) and the refusal of a step that
 * reads from two unrelated decoupled steps, checked against composing models described by
 * their handles (the shape `InternalClient.resolveModel` answers with).
 */
import { describe, expect, it } from 'vitest';
import { parseModelConfigText } from '../../src/core/config/parse.js';
import { bindEnsemble } from '../../src/core/ensemble/binding.js';
import { planEnsemble } from '../../src/core/ensemble/plan.js';
import { Errors } from '../../src/core/errors.js';
import type { InternalClient } from '../../src/core/internal-client.js';
import type { ModelHandle, TensorSpec } from '../../src/core/model-handle.js';

const spec = (name: string): TensorSpec => ({ name, datatype: 'FP32', dims: [1], optional: false });

/** A composing model: one input IN, one output OUT, FP32 [1]. */
function handle(name: string, decoupled: boolean): ModelHandle {
  return {
    name,
    version: '1',
    directory: '',
    maxBatchSize: 0,
    decoupled,
    inputs: [spec('IN')],
    outputs: [spec('OUT')],
    metadata: () => ({ name, versions: ['1'], platform: 'python', inputs: [], outputs: [] }),
    configJson: () => ({}),
    isReady: () => true,
  };
}

/** Resolves the given models; any other name is unknown, with the core's error. */
function models(list: ModelHandle[]): InternalClient {
  return {
    infer: () => {},
    resolveModel: (name) => {
      const h = list.find((m) => m.name === name);
      if (!h) throw Errors.unknownModel(name);
      return h;
    },
    isModelReady: (name) => list.some((m) => m.name === name),
  };
}

/** An ensemble of single-input steps: `steps` as [model, input tensor, output tensor]. */
function ensemble(steps: Array<[string, string, string]>, outputs: string[], join?: [string, string, string, string]) {
  const step = ([m, i, o]: [string, string, string]) =>
    `{ model_name: "${m}" model_version: -1 input_map { key: "IN" value: "${i}" } output_map { key: "OUT" value: "${o}" } }`;
  const joinStep = join
    ? `, { model_name: "${join[0]}" model_version: -1 input_map [ { key: "A" value: "${join[1]}" }, { key: "B" value: "${join[2]}" } ] output_map { key: "OUT" value: "${join[3]}" } }`
    : '';
  const config = parseModelConfigText(
    `name: "e" platform: "ensemble" max_batch_size: 0
     input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
     output [ ${outputs.map((o) => `{ name: "${o}" data_type: TYPE_FP32 dims: [ 1 ] }`).join(', ')} ]
     ensemble_scheduling { step [ ${steps.map(step).join(', ')}${joinStep} ] }`,
    'config.pbtxt',
  );
  return { config, plan: planEnsemble(config) };
}

function joiner(name: string): ModelHandle {
  return { ...handle(name, false), inputs: [spec('A'), spec('B')] };
}

describe('ensemble binding', () => {
  it('gives every tensor the chain of decoupled steps it descends from', () => {
    const { config, plan } = ensemble(
      [
        ['plain', 'X', 'P'],
        ['stream', 'P', 'S'],
        ['plain', 'S', 'Q'],
        ['stream', 'Q', 'Y'],
      ],
      ['Y'],
    );
    const b = bindEnsemble(config, plan, models([handle('plain', false), handle('stream', true)]));
    expect(b.decoupled).toBe(true);
    expect(b.decoupledSteps).toEqual([false, true, false, true]);
    expect(Object.fromEntries(b.lineage)).toEqual({ X: [], P: [], S: [1], Q: [1], Y: [1, 3] });
  });

  it('lets a step read a tensor from above a decoupled step beside one below it', () => {
    const { config, plan } = ensemble(
      [
        ['plain', 'X', 'P'],
        ['stream', 'P', 'S'],
      ],
      ['Y'],
      ['join', 'P', 'S', 'Y'],
    );
    const b = bindEnsemble(config, plan, models([handle('plain', false), handle('stream', true), joiner('join')]));
    expect(b.lineage.get('Y')).toEqual([1]);
  });

  it('refuses a step reading from two unrelated decoupled steps', () => {
    const { config, plan } = ensemble(
      [
        ['stream', 'X', 'S1'],
        ['stream', 'X', 'S2'],
      ],
      ['Y'],
      ['join', 'S1', 'S2', 'Y'],
    );
    expect(() => bindEnsemble(config, plan, models([handle('stream', true), joiner('join')]))).toThrow(Errors.ensembleDecoupledOrigins('e', 2, 'join').message);
  });

  it('names every unavailable model at once', () => {
    const { config, plan } = ensemble(
      [
        ['a', 'X', 'P'],
        ['b', 'P', 'Y'],
      ],
      ['Y'],
    );
    expect(() => bindEnsemble(config, plan, models([]))).toThrow('ensemble e contains models that are not available or ambiguous: a, b');
  });
});
