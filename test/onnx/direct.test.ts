/**
 * OnnxBackend driven directly, without the model manager or a scheduler: the test builds the
 * PendingRequests and calls `execute`, as the schedulers and warmup do.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoadedModel } from '../../src/core/backend.js';
import { modelConfigToJson } from '../../src/core/config/json.js';
import { inferBackend, normalizeModelConfig } from '../../src/core/config/normalize.js';
import { parseModelConfigText } from '../../src/core/config/parse.js';
import { ErrorCode } from '../../src/core/errors.js';
import type { OnnxInstance } from '../../src/backends/onnx/instance.js';
import { f32, loadMlpWeights, makeModels, makeRepo, memoryLogger, mlpRef, newBackend, pending, readF32, request, type MlpWeights } from './helpers.js';

let models: string;
let repo: string;
let weights: MlpWeights;
let loaded: LoadedModel;

const hooks = { onReadinessChange() {}, onRestart() {}, warmup: async () => {} };

beforeAll(async () => {
  models = makeModels();
  weights = loadMlpWeights(models);
  repo = makeRepo(models, { mlp: { from: 'mlp' } });
  const text =
    'name: "mlp"\nmax_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [16] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [8] } ]\ninstance_group [ { kind: KIND_CPU count: 1 } ]';
  let config = inferBackend(['model.onnx'], parseModelConfigText(text, 'config.pbtxt'));
  config = normalizeModelConfig(config, { modelName: 'mlp', gpuCount: 0, gpus: [] });
  const logger = memoryLogger();
  const backend = newBackend({ logger });
  const dir = path.join(repo, 'mlp');
  loaded = await backend.load(
    {
      source: { name: 'mlp', dir, repository: repo, configFile: path.join(dir, 'config.pbtxt'), versions: [1] },
      version: 1,
      versionDir: path.join(dir, '1'),
      config,
      configJson: JSON.stringify(modelConfigToJson(config)),
      logger,
      // This backend-level test loads one model alone: there are no other models to reach.
      client: {
        infer: () => {
          throw new Error('no other models in this test');
        },
        resolveModel: () => {
          throw new Error('no other models in this test');
        },
        isModelReady: () => false,
      },
    },
    hooks,
  );
});

afterAll(async () => {
  await loaded?.unload(5000);
  fs.rmSync(models, { recursive: true, force: true });
  fs.rmSync(repo, { recursive: true, force: true });
});

const row = (seed: number) => Array.from({ length: 16 }, (_, i) => Math.cos(seed + i));

describe('OnnxInstance.execute', () => {
  it('concatenates a batch into one run, splits it back and reports ordered phase times', async () => {
    const inst = loaded.instances[0] as OnnxInstance;
    const before = inst.runCount;
    const a = pending(request('mlp', [f32('INPUT0', [2, 16], [...row(1), ...row(2)])]));
    const b = pending(request('mlp', [f32('INPUT0', [1, 16], row(3))]));
    const times = await inst.execute([a.pr, b.pr]);
    expect(inst.runCount - before).toBe(1);
    expect(times.startNs <= times.inputEndNs && times.inputEndNs <= times.inferEndNs && times.inferEndNs <= times.endNs).toBe(true);
    expect(a.responses).toHaveLength(1);
    expect(a.responses[0]!.final).toBe(true);
    expect(a.responses[0]!.modelVersion).toBe('1');
    expect(a.responses[0]!.outputs[0]!.shape).toEqual([2, 8]);
    const want = [...mlpRef(weights, row(1)), ...mlpRef(weights, row(2))];
    readF32(a.responses[0]!.outputs[0]!).forEach((v, i) => expect(v).toBeCloseTo(want[i]!, 4));
    readF32(b.responses[0]!.outputs[0]!).forEach((v, i) => expect(v).toBeCloseTo(mlpRef(weights, row(3))[i]!, 4));
  });

  it('answers a cancelled request with CANCELLED and runs the rest', async () => {
    const inst = loaded.instances[0]!;
    const ac = new AbortController();
    const gone = pending({ ...request('mlp', [f32('INPUT0', [1, 16], row(4))]), signal: ac.signal });
    ac.abort();
    const kept = pending(request('mlp', [f32('INPUT0', [1, 16], row(5))]));
    await inst.execute([gone.pr, kept.pr]);
    expect(gone.responses[0]!.error?.code).toBe(ErrorCode.CANCELLED);
    expect(kept.responses[0]!.error).toBeUndefined();
  });

  it('fails the requests of a run onnxruntime refuses, without rejecting', async () => {
    const inst = loaded.instances[0]!;
    // Not validated by a core here: 15 columns reach the session and it refuses them.
    const bad = pending(request('mlp', [f32('INPUT0', [1, 15], row(6).slice(0, 15))]));
    const good = pending(request('mlp', [f32('INPUT0', [1, 16], row(7))]));
    await expect(inst.execute([bad.pr, good.pr])).resolves.toBeDefined();
    expect(bad.responses[0]!.error?.code).toBe(ErrorCode.INTERNAL);
    expect(bad.responses[0]!.error?.message).toMatch(/^onnxruntime error: /);
    // Different inner shapes never share a run, so the good request is unaffected.
    expect(good.responses[0]!.error).toBeUndefined();
  });
});
