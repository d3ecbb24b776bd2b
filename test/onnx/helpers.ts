/**
 * Helpers for the ONNX backend tests: generate the test models once per test file (with the
 * `onnx` Python package, fixtures/make_onnx_models.py), lay out throw-away model repositories, and
 * drive the backend with hand-built requests.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { InferRequest, InferResponse, RequestedOutput } from '../../src/core/inference.js';
import { createLogger, type Logger } from '../../src/core/logger.js';
import { ModelManager } from '../../src/core/model/model-manager.js';
import { nullObserver } from '../../src/core/model/observer.js';
import { PendingRequestImpl } from '../../src/core/request/pending.js';
import type { Tensor } from '../../src/core/tensor.js';
import { OnnxBackend, type OnnxBackendOptions } from '../../src/backends/onnx/backend.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const PYTHON = process.env.TRITIUM_PYTHON ?? path.join(ROOT, '.venv', 'bin', 'python');

/** Generates the models into a fresh temp dir; returns it. */
export function makeModels(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-onnx-'));
  execFileSync(PYTHON, [path.join(ROOT, 'fixtures', 'make_onnx_models.py'), dir], { stdio: 'inherit' });
  return dir;
}

export interface RepoModel {
  /** Generated model file name without .onnx. */
  from: string;
  /** config.pbtxt text; undefined = no config file. */
  config?: string;
  /** Extra files relative to the model dir. */
  files?: Record<string, Buffer | string>;
}

/** `<tmp>/repo/<name>/1/model.onnx` (+ config.pbtxt) for each entry. */
export function makeRepo(modelsDir: string, models: Record<string, RepoModel>): string {
  const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-onnx-repo-'));
  for (const [name, m] of Object.entries(models)) {
    const dir = path.join(repo, name);
    fs.mkdirSync(path.join(dir, '1'), { recursive: true });
    fs.copyFileSync(path.join(modelsDir, `${m.from}.onnx`), path.join(dir, '1', 'model.onnx'));
    if (m.config !== undefined) fs.writeFileSync(path.join(dir, 'config.pbtxt'), m.config);
    for (const [rel, content] of Object.entries(m.files ?? {})) {
      fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      fs.writeFileSync(path.join(dir, rel), content);
    }
  }
  return repo;
}

/** A logger that keeps its lines. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger({ info: true, warning: true, error: true, verbose: 0 }, (l) => lines.push(l));
  return Object.assign(logger, { lines });
}

export function newBackend(o: Partial<OnnxBackendOptions> = {}): OnnxBackend {
  return new OnnxBackend({ defaultMaxBatchSize: 4, gpus: [], ...o });
}

export function manager(repo: string, backend: OnnxBackend, logger: Logger, o: { gpus?: number[]; autoComplete?: boolean } = {}): ModelManager {
  return new ModelManager({
    repositories: [repo],
    autoCompleteConfig: o.autoComplete ?? true,
    defaultMaxBatchSize: 4,
    gpus: o.gpus ?? [],
    backends: new Map([['onnxruntime', backend]]),
    logger,
    observer: nullObserver,
  });
}

export function f32(name: string, shape: number[], values: number[]): Tensor {
  return { name, datatype: 'FP32', shape, data: Buffer.from(new Float32Array(values).buffer) };
}

export function i64(name: string, shape: number[], values: bigint[]): Tensor {
  return { name, datatype: 'INT64', shape, data: Buffer.from(new BigInt64Array(values).buffer) };
}

export function bool(name: string, shape: number[], values: boolean[]): Tensor {
  return { name, datatype: 'BOOL', shape, data: Buffer.from(values.map((v) => (v ? 1 : 0))) };
}

export function readF32(t: Tensor): number[] {
  const copy = Buffer.from(t.data);
  return [...new Float32Array(copy.buffer, copy.byteOffset, copy.length / 4)];
}

export function readI64(t: Tensor): bigint[] {
  const copy = Buffer.from(t.data);
  return [...new BigInt64Array(copy.buffer, copy.byteOffset, copy.length / 8)];
}

export function request(model: string, inputs: Tensor[], outputs?: string[], id = ''): InferRequest {
  const req: InferRequest = { modelName: model, modelVersion: '', id, parameters: {}, inputs };
  if (outputs) req.outputs = outputs.map((name): RequestedOutput => ({ name, parameters: {} }));
  return req;
}

/** A pending request as the core would build it, with its responses collected. */
export function pending(req: InferRequest, batchSize = req.inputs[0]?.shape[0] ?? 1) {
  const responses: InferResponse[] = [];
  const pr = new PendingRequestImpl(
    req,
    batchSize,
    '',
    0,
    0,
    '1',
    (r) => responses.push(r),
    () => {},
  );
  return { pr, responses };
}

/** Sends a request through the model manager (validation, scheduler) and awaits the final response. */
export function infer(mgr: ModelManager, req: InferRequest): Promise<InferResponse> {
  const mv = mgr.resolve(req.modelName, '');
  return new Promise((resolve) => {
    mv.infer(req, (r) => {
      if (r.final) resolve(r);
    });
  });
}

export interface MlpWeights {
  w1: number[][];
  b1: number[];
  w2: number[][];
  b2: number[];
}

/** The MLP's expected output for one row, in float64 (compare with a tolerance). */
export function mlpRef(w: MlpWeights, x: number[]): number[] {
  const h = w.b1.map((b, j) =>
    Math.max(
      0,
      x.reduce((s, xi, i) => s + xi * w.w1[i]![j]!, b),
    ),
  );
  return w.b2.map((b, k) => h.reduce((s, hj, j) => s + hj * w.w2[j]![k]!, b));
}

export function loadMlpWeights(modelsDir: string): MlpWeights {
  return JSON.parse(fs.readFileSync(path.join(modelsDir, 'mlp_weights.json'), 'utf8')) as MlpWeights;
}
