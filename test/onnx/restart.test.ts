/**
 * Supervision of ONNX instances, through the real model manager, real onnxruntime sessions in
 * worker threads and the core's lifecycle: a worker that dies is restarted, runs the model's
 * warmup samples again before it serves, and counts as a restart; when its model file is gone,
 * restarting fails, and after 5 failed starts the instance gives up and the version turns
 * UNAVAILABLE with the reason. The worker is killed from outside, as a native crash in it would.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OnnxInstance } from '../../src/backends/onnx/instance.js';
import { ModelManager } from '../../src/core/model/model-manager.js';
import { nullObserver } from '../../src/core/model/observer.js';
import { f32, infer, makeModels, makeRepo, memoryLogger, newBackend, request } from './helpers.js';

let models: string;
const cleanup: Array<() => Promise<void>> = [];

beforeAll(() => {
  models = makeModels();
});

afterAll(async () => {
  for (const c of cleanup) await c();
  fs.rmSync(models, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Loads `mlp` with `config`; restart back-off shortened (the delays are the unit test's). */
async function loadMlp(config: string) {
  const repo = makeRepo(models, { mlp: { from: 'mlp', config } });
  const logger = memoryLogger();
  const backend = newBackend({ logger, restartPolicy: { firstDelayMs: 10 } });
  const restarts: string[] = [];
  const mgr = new ModelManager({
    repositories: [repo],
    autoCompleteConfig: true,
    defaultMaxBatchSize: 4,
    gpus: [],
    backends: new Map([['onnxruntime', backend]]),
    logger,
    observer: { ...nullObserver, stubRestart: (_model, instance) => restarts.push(instance) },
  });
  expect(await mgr.loadAll()).toEqual([]);
  cleanup.push(async () => {
    await mgr.unloadAll(5000);
    fs.rmSync(repo, { recursive: true, force: true });
  });
  const instance: OnnxInstance = [...backend.instances][0]!;
  return { repo, mgr, instance, restarts, log: logger.lines };
}

/** Ends the instance's worker thread from outside. */
async function killWorker(instance: OnnxInstance): Promise<void> {
  const runner = (instance as unknown as { runner: { worker: { terminate(): Promise<number> } } }).runner;
  await runner.worker.terminate();
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(10);
  }
}

describe('an ONNX instance whose worker dies', () => {
  it('is restarted, warmed up again before it serves, and counted', async () => {
    const config = `
      max_batch_size: 4
      instance_group [ { kind: KIND_CPU count: 1 } ]
      model_warmup [ { name: "zeros" batch_size: 3 count: 2 inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [16] zero_data: true } } } ]`;
    const { mgr, instance, restarts, log } = await loadMlp(config);
    // Load-time warmup: two executions of three requests, one concatenated run each.
    expect(instance.runCount).toBe(2);

    await killWorker(instance);
    expect(instance.isReady()).toBe(false);
    expect(instance.reason).toMatch(/^onnxruntime session of instance 'mlp_0_0' \(model 'mlp'\) died: /);
    await waitFor('ready again', () => instance.isReady());
    // Ready only after the warmup ran on the new session, before any request reached it.
    expect(instance.runCount).toBe(4);
    expect(restarts).toEqual(['mlp_0_0']);
    expect(log.some((l) => l.includes("onnxruntime instance 'mlp_0_0' of model 'mlp' restarted (restart 1)."))).toBe(true);

    const r = await infer(mgr, request('mlp', [f32('INPUT0', [1, 16], Array(16).fill(0.5))]));
    expect(r.error).toBeUndefined();
    expect(instance.runCount).toBe(5);
  });

  it('gives up after 5 failed starts when its model file is gone; the version turns UNAVAILABLE', async () => {
    const config = `
      max_batch_size: 4
      instance_group [ { kind: KIND_CPU count: 1 } ]`;
    const { repo, mgr, instance, restarts, log } = await loadMlp(config);
    fs.rmSync(path.join(repo, 'mlp', '1', 'model.onnx'));

    await killWorker(instance);
    await waitFor('given up', () => instance.gaveUp);
    expect(instance.reason).toMatch(
      /^onnxruntime session of instance 'mlp_0_0' \(model 'mlp'\) died: .* Restarting it failed 5 times in a row, so it will not be restarted again; last error: unable to create an onnxruntime session for instance 'mlp_0_0' of model 'mlp': /,
    );
    expect(log.filter((l) => /Restart of 'mlp_0_0' failed \(\d in a row\)/.test(l))).toHaveLength(5);
    expect(restarts).toEqual([]);

    const entry = mgr.index(false).find((e) => e.name === 'mlp');
    expect(entry).toMatchObject({ name: 'mlp', version: '1', state: 'UNAVAILABLE' });
    expect(entry!.reason).toContain("instance 'mlp_0_0': onnxruntime session of instance 'mlp_0_0' (model 'mlp') died");
    expect(() => mgr.resolve('mlp', '')).toThrow("Request for unknown model: 'mlp' has no available versions");
  });
});
