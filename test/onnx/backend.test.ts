/**
 * The onnxruntime backend end to end inside the core: configs built by the model manager
 * (parse → auto-complete → normalise → validate), instances loaded through OnnxBackend, requests
 * through the real schedulers, statistics from the model version.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelInstanceGroup_Kind } from '../../src/generated/model_config_pb.js';
import type { ModelManager } from '../../src/core/model/model-manager.js';
import type { OnnxInstance } from '../../src/backends/onnx/instance.js';
import type { OnnxBackend } from '../../src/backends/onnx/backend.js';
import {
  bool,
  f32,
  i64,
  infer,
  loadMlpWeights,
  makeModels,
  makeRepo,
  manager,
  memoryLogger,
  mlpRef,
  newBackend,
  readF32,
  readI64,
  request,
  type MlpWeights,
} from './helpers.js';

let models: string;
let weights: MlpWeights;
const cleanup: Array<() => Promise<void>> = [];

beforeAll(() => {
  models = makeModels();
  weights = loadMlpWeights(models);
});

afterAll(async () => {
  for (const c of cleanup) await c();
  fs.rmSync(models, { recursive: true, force: true });
});

async function load(
  repoModels: Parameters<typeof makeRepo>[1],
  o: { backend?: Parameters<typeof newBackend>[0]; gpus?: number[]; autoComplete?: boolean } = {},
): Promise<{ mgr: ModelManager; backend: OnnxBackend; failed: Array<{ name: string; reason: string }>; log: string[] }> {
  const repo = makeRepo(models, repoModels);
  const logger = memoryLogger();
  const backend = newBackend({ logger, ...o.backend });
  const mgr = manager(repo, backend, logger, { gpus: o.gpus, autoComplete: o.autoComplete });
  const failed = await mgr.loadAll();
  cleanup.push(async () => {
    await mgr.unloadAll(5000);
    fs.rmSync(repo, { recursive: true, force: true });
  });
  return { mgr, backend, failed, log: logger.lines };
}

const rowsOf = (n: number, width: number, seed: number) =>
  Array.from({ length: n }, (_, r) => Array.from({ length: width }, (_, c) => Math.sin(seed * 31 + r * 7 + c) * 2));

function expectClose(got: number[], want: number[]) {
  expect(got.length).toBe(want.length);
  got.forEach((g, i) => expect(g).toBeCloseTo(want[i]!, 4));
}

describe('explicit config', () => {
  it('serves add_sub with the config as written', async () => {
    const config = `
      name: "add_sub"
      backend: "onnxruntime"
      max_batch_size: 0
      input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [4] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [4] } ]
      output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [4] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [4] } ]
      instance_group [ { kind: KIND_CPU count: 1 } ]`;
    const { mgr, failed } = await load({ add_sub: { from: 'add_sub', config } });
    expect(failed).toEqual([]);
    const mv = mgr.resolve('add_sub', '');
    expect(mv.config.platform).toBe('onnxruntime_onnx');
    const r = await infer(mgr, request('add_sub', [f32('INPUT0', [4], [1, 2, 3, 4]), f32('INPUT1', [4], [10, 20, 30, 40])]));
    expect(r.error).toBeUndefined();
    expect(r.outputs.map((o) => o.name)).toEqual(['OUTPUT0', 'OUTPUT1']);
    expect(r.outputs[0]!.shape).toEqual([4]);
    expect(readF32(r.outputs[0]!)).toEqual([11, 22, 33, 44]);
    expect(readF32(r.outputs[1]!)).toEqual([-9, -18, -27, -36]);
    // Only the requested output, in the requested order.
    const one = await infer(mgr, request('add_sub', [f32('INPUT0', [4], [1, 1, 1, 1]), f32('INPUT1', [4], [1, 1, 1, 1])], ['OUTPUT1']));
    expect(one.outputs.map((o) => o.name)).toEqual(['OUTPUT1']);
    expect(readF32(one.outputs[0]!)).toEqual([0, 0, 0, 0]);
  });

  it('takes platform onnxruntime_onnx alone and a custom default_model_filename', async () => {
    const config = `
      platform: "onnxruntime_onnx"
      default_model_filename: "net.onnx"
      max_batch_size: 8
      input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [16] } ]
      output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [8] } ]`;
    const repo = { mlp: { from: 'mlp', config, files: { '1/net.onnx': fs.readFileSync(`${models}/mlp.onnx`) } } };
    const { mgr, failed } = await load(repo);
    expect(failed).toEqual([]);
    const x = rowsOf(2, 16, 1);
    const r = await infer(mgr, request('mlp', [f32('INPUT0', [2, 16], x.flat())]));
    expect(r.outputs[0]!.shape).toEqual([2, 8]);
    expectClose(
      readF32(r.outputs[0]!),
      x.flatMap((row) => mlpRef(weights, row)),
    );
  });
});

describe('auto-complete from the graph', () => {
  it('fills inputs, outputs, max_batch_size and dynamic_batching for a batchable graph without config.pbtxt', async () => {
    const { mgr, failed, log } = await load({ mlp: { from: 'mlp' } });
    expect(failed).toEqual([]);
    const mv = mgr.resolve('mlp', '');
    const json = mv.configJson() as Record<string, any>;
    expect(json['backend']).toBe('onnxruntime');
    expect(json['platform']).toBe('onnxruntime_onnx');
    expect(json['max_batch_size']).toBe(4);
    expect(json['dynamic_batching']).toBeDefined();
    expect(json['dynamic_batching'].preferred_batch_size).toEqual([4]);
    expect(json['input']).toMatchObject([{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [16] }]);
    expect(json['output']).toMatchObject([{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [8] }]);
    // ORT on CPU defaults to two instances.
    expect(json['instance_group']).toMatchObject([{ kind: 'KIND_CPU', count: 2 }]);
    expect(log.some((l) => l.includes("autofilled max_batch_size to 4 for model 'mlp'"))).toBe(true);
  });

  it('leaves max_batch_size 0 for a graph with fixed shapes', async () => {
    const { mgr, failed } = await load({ add_sub: { from: 'add_sub' } });
    expect(failed).toEqual([]);
    const json = mgr.resolve('add_sub', '').configJson() as Record<string, any>;
    expect(json['max_batch_size']).toBe(0);
    expect(json['dynamic_batching']).toBeUndefined();
    expect(json['input'].map((i: any) => [i.name, i.dims])).toEqual([
      ['INPUT0', [4]],
      ['INPUT1', [4]],
    ]);
  });

  it('keeps an explicit max_batch_size and fills only what is missing', async () => {
    const config = `
      max_batch_size: 2
      input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [16] } ]`;
    const { mgr, failed } = await load({ mlp: { from: 'mlp', config } });
    expect(failed).toEqual([]);
    const json = mgr.resolve('mlp', '').configJson() as Record<string, any>;
    expect(json['max_batch_size']).toBe(2);
    expect(json['output']).toMatchObject([{ name: 'OUTPUT0', dims: [8] }]);
  });

  it('refuses a non-zero max_batch_size for a graph that cannot batch', async () => {
    const { failed } = await load({ add_sub: { from: 'add_sub', config: 'max_batch_size: 8' } });
    expect(failed[0]?.reason).toContain("autofill failed for model 'add_sub': model does not support batching while non-zero max_batch_size is specified");
  });

  it('maps INT64, BOOL, STRING and FP16 graph types', async () => {
    const { mgr, failed } = await load({
      int64_bool: { from: 'int64_bool' },
      string_identity: { from: 'string_identity' },
      fp16_identity: { from: 'fp16_identity' },
    });
    expect(failed).toEqual([]);
    const ib = mgr.resolve('int64_bool', '').configJson() as Record<string, any>;
    expect(ib['input'].map((i: any) => i.data_type)).toEqual(['TYPE_INT64', 'TYPE_INT64', 'TYPE_BOOL']);
    expect(ib['output'].map((o: any) => o.data_type)).toEqual(['TYPE_INT64', 'TYPE_BOOL', 'TYPE_BOOL']);
    const s = mgr.resolve('string_identity', '').configJson() as Record<string, any>;
    expect(s['input']).toMatchObject([{ data_type: 'TYPE_STRING', dims: [-1] }]);
    const h = mgr.resolve('fp16_identity', '').configJson() as Record<string, any>;
    expect(h['input']).toMatchObject([{ data_type: 'TYPE_FP16', dims: [3] }]);
  });
});

describe('a config that contradicts the graph', () => {
  const io = (inType: string, inDims: string, outName = 'OUTPUT0') => `
      max_batch_size: 4
      input [ { name: "INPUT0" data_type: ${inType} dims: ${inDims} } ]
      output [ { name: "${outName}" data_type: TYPE_FP32 dims: [8] } ]`;

  it('fails on a wrong data type, naming the tensor', async () => {
    const { failed } = await load({ mlp: { from: 'mlp', config: io('TYPE_INT32', '[16]') } });
    expect(failed).toHaveLength(1);
    expect(failed[0]!.reason).toContain("configuration expects datatype TYPE_INT32 for input 'INPUT0', model provides TYPE_FP32");
  });

  it('fails on wrong dims, naming the tensor', async () => {
    const { failed } = await load({ mlp: { from: 'mlp', config: io('TYPE_FP32', '[15]') } });
    expect(failed[0]!.reason).toMatch(/input 'INPUT0': the model expects dims \[-1,16\] but the model configuration specifies dims \[-1,15\]/);
  });

  it('fails on a wrong rank', async () => {
    const { failed } = await load({ mlp: { from: 'mlp', config: io('TYPE_FP32', '[4, 4]') } });
    expect(failed[0]!.reason).toContain("input 'INPUT0': the model's shape [-1,16] has 2 dimensions but the configuration gives 3");
  });

  it('fails on an output the graph does not have', async () => {
    const { failed } = await load({ mlp: { from: 'mlp', config: io('TYPE_FP32', '[16]', 'LOGITS') } });
    expect(failed[0]!.reason).toContain("configuration expects output 'LOGITS' but the model's outputs are 'OUTPUT0'");
  });

  it('fails when batching is configured for a graph without a dynamic first dimension', async () => {
    const config = `
      max_batch_size: 4
      input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [4] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [4] } ]
      output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [4] } ]`;
    const { failed } = await load({ add_sub: { from: 'add_sub', config } });
    expect(failed[0]!.reason).toContain("input 'INPUT0': a model that batches (max_batch_size > 0) needs a dynamic first dimension");
  });
});

describe('batching', () => {
  it('runs several queued requests as one session run and splits the outputs back', async () => {
    const config = `
      max_batch_size: 8
      dynamic_batching { max_queue_delay_microseconds: 200000 preferred_batch_size: [6] }
      instance_group [ { kind: KIND_CPU count: 1 } ]`;
    const { mgr, backend, failed } = await load({ mlp: { from: 'mlp', config } });
    expect(failed).toEqual([]);
    const inst = [...backend.instances][0]!;
    const before = inst.runCount;
    // Requests of 1, 2 and 3 rows: one batch of 6 rows.
    const xs = [rowsOf(1, 16, 1), rowsOf(2, 16, 2), rowsOf(3, 16, 3)];
    const rs = await Promise.all(xs.map((x, k) => infer(mgr, request('mlp', [f32('INPUT0', [x.length, 16], x.flat())], undefined, `r${k}`))));
    expect(inst.runCount - before).toBe(1);
    rs.forEach((r, k) => {
      expect(r.error).toBeUndefined();
      expect(r.id).toBe(`r${k}`);
      expect(r.outputs[0]!.shape).toEqual([xs[k]!.length, 8]);
      expectClose(
        readF32(r.outputs[0]!),
        xs[k]!.flatMap((row) => mlpRef(weights, row)),
      );
    });
    const stats = mgr.resolve('mlp', '').statistics();
    expect(stats.execution_count).toBe(1n);
    expect(stats.inference_count).toBe(6n);
    expect(stats.inference_stats.success.count).toBe(3n);
    expect(stats.inference_stats.compute_infer.count).toBe(3n);
    expect(stats.batch_stats.map((b) => [b.batch_size, b.compute_infer.count])).toEqual([[6n, 1n]]);
  });

  it('serves each request its own requested outputs from a shared run (INT64, BOOL)', async () => {
    const config = `
      max_batch_size: 4
      dynamic_batching { max_queue_delay_microseconds: 200000 preferred_batch_size: [2] }
      instance_group [ { kind: KIND_CPU count: 1 } ]`;
    const { mgr, backend, failed } = await load({ int64_bool: { from: 'int64_bool', config } });
    expect(failed).toEqual([]);
    const inst = [...backend.instances][0]!;
    const before = inst.runCount;
    const a = request(
      'int64_bool',
      [i64('A', [1, 3], [1n, 5n, -(2n ** 40n)]), i64('B', [1, 3], [2n, 5n, 1n]), bool('MASK', [1, 3], [true, false, true])],
      ['SUM'],
    );
    const b = request(
      'int64_bool',
      [i64('A', [1, 3], [9n, 0n, 3n]), i64('B', [1, 3], [1n, 1n, 3n]), bool('MASK', [1, 3], [false, false, true])],
      ['NOT_MASK', 'GT'],
    );
    const [ra, rb] = await Promise.all([infer(mgr, a), infer(mgr, b)]);
    expect(inst.runCount - before).toBe(1);
    expect(ra.outputs.map((o) => o.name)).toEqual(['SUM']);
    expect(ra.outputs[0]!.datatype).toBe('INT64');
    expect(readI64(ra.outputs[0]!)).toEqual([3n, 10n, -(2n ** 40n) + 1n]);
    expect(rb.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual([
      ['NOT_MASK', 'BOOL', [1, 3]],
      ['GT', 'BOOL', [1, 3]],
    ]);
    expect([...rb.outputs[0]!.data]).toEqual([1, 1, 0]);
    expect([...rb.outputs[1]!.data]).toEqual([1, 0, 0]);
  });

  it('keeps requests with different variable dims in separate runs of one batch (BYTES)', async () => {
    const { mgr, failed } = await load({
      string_identity: { from: 'string_identity', config: 'max_batch_size: 4\ninstance_group [ { kind: KIND_CPU count: 1 } ]' },
    });
    expect(failed).toEqual([]);
    const { joinBytesElements, splitBytesElements } = await import('../../src/core/tensor.js');
    const s1 = ['héllo', 'wörld'];
    const s2 = ['x', '', 'zz'];
    const [r1, r2] = await Promise.all([
      infer(mgr, request('string_identity', [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 2], data: joinBytesElements(s1) }])),
      infer(mgr, request('string_identity', [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 3], data: joinBytesElements(s2) }])),
    ]);
    expect(r1.outputs[0]!.shape).toEqual([1, 2]);
    expect(splitBytesElements(r1.outputs[0]!.data).map((b) => b.toString('utf8'))).toEqual(s1);
    expect(splitBytesElements(r2.outputs[0]!.data).map((b) => b.toString('utf8'))).toEqual(s2);
  });

  it('passes FP16 through as raw 16-bit words', async () => {
    const { mgr, failed } = await load({ fp16_identity: { from: 'fp16_identity' } });
    expect(failed).toEqual([]);
    const words = new Uint16Array([0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x3555]);
    const r = await infer(mgr, request('fp16_identity', [{ name: 'INPUT0', datatype: 'FP16', shape: [2, 3], data: Buffer.from(words.buffer) }]));
    expect(r.outputs[0]!.datatype).toBe('FP16');
    expect(Buffer.compare(r.outputs[0]!.data, Buffer.from(words.buffer))).toBe(0);
  });
});

describe('warmup', () => {
  it('runs each sample on every instance before the model is ready', async () => {
    const config = `
      max_batch_size: 4
      instance_group [ { kind: KIND_CPU count: 2 } ]
      model_warmup [ { name: "zeros" batch_size: 3 count: 2 inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [16] zero_data: true } } } ]`;
    const { mgr, backend, failed } = await load({ mlp: { from: 'mlp', config } });
    expect(failed).toEqual([]);
    const insts = [...backend.instances];
    expect(insts).toHaveLength(2);
    // batch_size 3 = one execution of three batch-1 requests = one concatenated run; count 2.
    for (const i of insts) expect(i.runCount).toBe(2);
    expect(mgr.resolve('mlp', '').isReady()).toBe(true);
  });

  it('fails the load when a warmup sample cannot run', async () => {
    const config = `
      max_batch_size: 4
      instance_group [ { kind: KIND_CPU count: 1 } ]
      model_warmup [ { name: "bad" batch_size: 1 inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [3] zero_data: true } } } ]`;
    const { failed } = await load({ mlp: { from: 'mlp', config } });
    expect(failed[0]!.reason).toContain("failed to run warmup sample 'bad'");
  });
});

describe('instances', () => {
  it('spreads concurrent work over several instances, each with its own session', async () => {
    const config = `
      max_batch_size: 4
      instance_group [ { kind: KIND_CPU count: 3 } ]`;
    const { mgr, backend, failed } = await load({ mlp: { from: 'mlp', config } });
    expect(failed).toEqual([]);
    const insts = [...backend.instances];
    expect(insts.map((i) => i.name).sort()).toEqual(['mlp_0_0', 'mlp_0_1', 'mlp_0_2']);
    const xs = Array.from({ length: 12 }, (_, k) => rowsOf(1, 16, k));
    const rs = await Promise.all(xs.map((x) => infer(mgr, request('mlp', [f32('INPUT0', [1, 16], x.flat())]))));
    rs.forEach((r, k) => expectClose(readF32(r.outputs[0]!), mlpRef(weights, xs[k]![0]!)));
    expect(insts.filter((i) => i.runCount > 0).length).toBeGreaterThan(1);
    const stats = mgr.resolve('mlp', '').statistics();
    expect(stats.inference_stats.success.count).toBe(12n);
    expect(stats.execution_count).toBe(BigInt(insts.reduce((n, i) => n + i.runCount, 0)));
  });

  it('runs on the main thread too (runIn: main)', async () => {
    const { mgr, failed } = await load({ mlp: { from: 'mlp' } }, { backend: { runIn: 'main' } });
    expect(failed).toEqual([]);
    const x = rowsOf(3, 16, 9);
    const r = await infer(mgr, request('mlp', [f32('INPUT0', [3, 16], x.flat())]));
    expectClose(
      readF32(r.outputs[0]!),
      x.flatMap((row) => mlpRef(weights, row)),
    );
  });

  it('falls back to CPU for KIND_GPU without the CUDA provider, saying why once', async () => {
    const config = `
      max_batch_size: 4
      instance_group [ { kind: KIND_GPU count: 2 gpus: [0] } ]`;
    const { mgr, backend, failed, log } = await load({ mlp: { from: 'mlp', config } }, { gpus: [0], backend: { gpus: [0], cudaInstalled: false } });
    expect(failed).toEqual([]);
    expect(mgr.resolve('mlp', '').config.instanceGroup[0]!.kind).toBe(ModelInstanceGroup_Kind.GPU);
    const insts = [...backend.instances];
    expect(insts.map((i) => [i.kind, i.deviceId, i.provider])).toEqual([
      ['GPU', 0, 'cpu'],
      ['GPU', 0, 'cpu'],
    ]);
    const lines = log.filter((l) => l.includes('runs on CPU instead of GPU'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('without its CUDA execution provider');
    const r = await infer(mgr, request('mlp', [f32('INPUT0', [1, 16], rowsOf(1, 16, 4).flat())]));
    expect(r.error).toBeUndefined();
  });

  it('tries TensorRT, then CUDA, then CPU for a tensorrt accelerator, saying why each step failed once', async () => {
    // Both providers "are installed" but this onnxruntime-node build has neither: each session
    // creation fails in turn and the instance ends on CPU (a GPU host runs the same chain).
    const config = `
      max_batch_size: 4
      instance_group [ { kind: KIND_GPU count: 2 gpus: [0] } ]
      optimization { execution_accelerators { gpu_execution_accelerator [ { name: "tensorrt" parameters { key: "precision_mode" value: "FP16" } } ] } }`;
    const { mgr, backend, failed, log } = await load(
      { mlp: { from: 'mlp', config } },
      { gpus: [0], backend: { gpus: [0], cudaInstalled: true, tensorrtInstalled: true } },
    );
    expect(failed).toEqual([]);
    expect([...backend.instances].map((i) => i.provider)).toEqual(['cpu', 'cpu']);
    const trt = log.filter((l) => l.includes('runs on the CUDA provider instead of TensorRT'));
    expect(trt).toHaveLength(1);
    expect(trt[0]).toContain('creating a TensorRT session failed');
    expect(log.filter((l) => l.includes('creating a CUDA session failed'))).toHaveLength(1);
    expect(log.filter((l) => l.includes('ignored: precision_mode'))).toHaveLength(1);
    const r = await infer(mgr, request('mlp', [f32('INPUT0', [1, 16], rowsOf(1, 16, 4).flat())]));
    expect(r.error).toBeUndefined();
  });

  it('falls back to CPU when creating the CUDA session fails, saying why once', async () => {
    // The provider "is installed" but the library is not there: session creation fails.
    const config = `
      max_batch_size: 4
      instance_group [ { kind: KIND_GPU count: 2 gpus: [0] } ]`;
    const { backend, failed, log } = await load({ mlp: { from: 'mlp', config } }, { gpus: [0], backend: { gpus: [0], cudaInstalled: true } });
    expect(failed).toEqual([]);
    expect([...backend.instances].map((i) => i.provider)).toEqual(['cpu', 'cpu']);
    const lines = log.filter((l) => l.includes('runs on CPU instead of GPU'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('creating a CUDA session failed');
  });

  it('logs execution accelerators it cannot honour without failing', async () => {
    const config = `
      max_batch_size: 4
      optimization { graph { level: 1 } execution_accelerators { cpu_execution_accelerator: [ { name: "openvino" } ] } }
      parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
      parameters { key: "inter_op_thread_count" value: { string_value: "1" } }
      instance_group [ { kind: KIND_CPU count: 2 } ]`;
    const { failed, log } = await load({ mlp: { from: 'mlp', config } });
    expect(failed).toEqual([]);
    expect(log.filter((l) => l.includes("cpu_execution_accelerator 'openvino'"))).toHaveLength(1);
  });

  it('restarts a session whose worker died and serves again', async () => {
    const config = `
      max_batch_size: 4
      instance_group [ { kind: KIND_CPU count: 1 } ]`;
    const { mgr, backend, failed } = await load({ mlp: { from: 'mlp', config } }, { backend: { restartPolicy: { firstDelayMs: 10 } } });
    expect(failed).toEqual([]);
    const inst: OnnxInstance = [...backend.instances][0]!;
    // Kill the session's worker thread from outside, as a native crash in it would.
    const runner = (inst as unknown as { runner: { worker: { terminate(): Promise<number> } } }).runner;
    await runner.worker.terminate();
    expect(inst.isReady()).toBe(false);
    const deadline = Date.now() + 10_000;
    while (!inst.isReady() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(inst.isReady()).toBe(true);
    const r = await infer(mgr, request('mlp', [f32('INPUT0', [1, 16], rowsOf(1, 16, 5).flat())]));
    expect(r.error).toBeUndefined();
  });
});

describe('the python_models/simple_onnx example', () => {
  it('loads with its committed config and answers with probabilities and a class', async () => {
    const repo = fs.mkdtempSync(`${models}/example-`);
    fs.cpSync(new URL('../../python_models/simple_onnx', import.meta.url), `${repo}/simple_onnx`, { recursive: true });
    const logger = memoryLogger();
    const backend = newBackend({ logger });
    const mgr = manager(repo, backend, logger);
    cleanup.push(() => mgr.unloadAll(5000));
    expect(await mgr.loadAll()).toEqual([]);
    const x = rowsOf(2, 16, 11);
    const r = await infer(mgr, request('simple_onnx', [f32('FEATURES', [2, 16], x.flat())]));
    expect(r.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual([
      ['PROBABILITIES', 'FP32', [2, 3]],
      ['CLASS', 'INT64', [2, 1]],
    ]);
    const p = readF32(r.outputs[0]!);
    const cls = readI64(r.outputs[1]!);
    for (let i = 0; i < 2; i++) {
      const rowP = p.slice(i * 3, i * 3 + 3);
      expect(rowP.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 5);
      expect(Number(cls[i])).toBe(rowP.indexOf(Math.max(...rowP)));
    }
  });
});

describe('scalars', () => {
  it('serves rank-0 graph tensors as dims [1], and per-row scalars of a batching model through reshape', async () => {
    const { mgr, failed } = await load({ scalar_add: { from: 'scalar_add' }, row_sum: { from: 'row_sum' } });
    expect(failed).toEqual([]);
    const sa = mgr.resolve('scalar_add', '').configJson() as Record<string, any>;
    expect(sa['max_batch_size']).toBe(0);
    expect(sa['input'][0]).toMatchObject({ dims: [1] });
    const r1 = await infer(mgr, request('scalar_add', [f32('X', [1], [1.5]), f32('Y', [1], [2])]));
    expect(r1.error).toBeUndefined();
    expect(r1.outputs[0]!.shape).toEqual([1]);
    expect(readF32(r1.outputs[0]!)).toEqual([3.5]);

    const rs = mgr.resolve('row_sum', '').configJson() as Record<string, any>;
    expect(rs['output'][0]).toMatchObject({ dims: [1], reshape: { shape: [] } });
    const r2 = await infer(mgr, request('row_sum', [f32('X', [2, 4], [1, 2, 3, 4, 10, 20, 30, 40])]));
    expect(r2.error).toBeUndefined();
    expect(r2.outputs[0]!.shape).toEqual([2, 1]);
    expect(readF32(r2.outputs[0]!)).toEqual([10, 100]);
  });
});
