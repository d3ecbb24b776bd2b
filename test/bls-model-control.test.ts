/**
 * pb_utils.load_model / unload_model reaching the Python backend's `modelControl` callback (the
 * seam explicit model control plugs into): a real stub runs test/models/bls_probe, in-process
 * with the model manager, and the callback records what it was asked. Without a callback the
 * calls raise Triton's not-explicit-mode text (test/e2e/bls.test.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PythonBackend } from '../src/backends/python/backend.js';
import type { ModelControl } from '../src/backends/python/bls.js';
import { Errors } from '../src/core/errors.js';
import type { InferResponse } from '../src/core/inference.js';
import { createLogger } from '../src/core/logger.js';
import { ModelManager } from '../src/core/model/model-manager.js';
import { nullObserver } from '../src/core/model/observer.js';
import { joinBytesElements, splitBytesElements } from '../src/core/tensor.js';
import { MODELS, PYTHON, TEST_MODELS } from './helpers/server.js';

const asked: unknown[] = [];
const control: ModelControl = {
  load: async (name, o) => {
    asked.push(['load', name, o.config, Object.fromEntries(Object.entries(o.files).map(([k, v]) => [k, v.toString('utf8')]))]);
    if (name === 'broken') throw Errors.unknownModel(name);
  },
  unload: async (name, o) => {
    asked.push(['unload', name, o.unloadDependents]);
  },
};

let manager: ModelManager;
let backend: PythonBackend;

beforeAll(async () => {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-bls-ctl-'));
  fs.cpSync(path.join(TEST_MODELS, 'bls_probe'), path.join(repo, 'bls_probe'), { recursive: true });
  fs.cpSync(path.join(MODELS, 'add_sub'), path.join(repo, 'add_sub'), { recursive: true });
  backend = new PythonBackend({
    pythonExecutable: PYTHON,
    shmDefaultByteSize: 1 << 20,
    shmGrowthByteSize: 1 << 20,
    stubTimeoutSeconds: 30,
    modelControl: control,
  });
  manager = new ModelManager({
    repositories: [repo],
    autoCompleteConfig: false,
    defaultMaxBatchSize: 4,
    gpus: [],
    backends: new Map([['python', backend]]),
    logger: createLogger({ info: false, warning: false, error: false, verbose: 0 }, () => {}),
    observer: nullObserver,
  });
  expect(await manager.loadAll()).toEqual([]);
}, 120_000);

afterAll(async () => {
  await Promise.all([...backend.instances].map((i) => i.stop(5000)));
  await backend.close();
});

/** Runs one probe command through the core; resolves with its JSON result. */
function probe(cmd: unknown): Promise<any> {
  return new Promise((resolve, reject) => {
    const data = joinBytesElements([JSON.stringify(cmd)]);
    manager.client.infer(
      { modelName: 'bls_probe', modelVersion: '', id: '', parameters: {}, inputs: [{ name: 'CMD', datatype: 'BYTES', shape: [1], data }] },
      (r: InferResponse) => {
        if (r.error) reject(r.error);
        else resolve(JSON.parse(splitBytesElements(r.outputs[0]!.data)[0]!.toString('utf8')));
        r.release?.();
      },
    );
  });
}

describe('load_model / unload_model with a model-control callback', () => {
  it('hands the callback the name, config and files (decoded), and the unload_dependents flag', async () => {
    expect(await probe({ op: 'load', args: ['add_sub', '{"max_batch_size": 0}', { 'file:1/model.py': 'print(1)' }] })).toEqual({ value: null });
    expect(await probe({ op: 'unload', args: ['add_sub', true] })).toEqual({ value: null });
    expect(asked).toEqual([
      ['load', 'add_sub', '{"max_batch_size": 0}', { 'file:1/model.py': 'print(1)' }],
      ['unload', 'add_sub', true],
    ]);
  });

  it("raises the callback's failure in Triton's form", async () => {
    const r = await probe({ op: 'load', args: ['broken'] });
    expect(r.raised).toMatch(/^TritonModelException: Failed to load model: Failed to process the request for model 'bls_probe_0_0', message: /);
    expect(r.raised).toContain("'broken'");
  });
});
