/** Pure pieces of the onnxruntime backend: shapes, tensor conversion, session options, graph checks. */
import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { onnxBackendOptions } from '../../src/backends/onnx/backend.js';
import { autoCompleteFromGraph, checkConfigAgainstGraph, graphCanBatch } from '../../src/backends/onnx/auto-complete.js';
import type { SessionInfo } from '../../src/backends/onnx/runner.js';
import { chooseProvider, firstProvider, sessionSettings } from '../../src/backends/onnx/session.js';
import { groupBy, mapShape } from '../../src/backends/onnx/shapes.js';
import { concatInputs, outputTensor, splitOutput } from '../../src/backends/onnx/tensor-convert.js';
import { silentLogger } from '../../src/core/logger.js';
import { joinBytesElements, splitBytesElements } from '../../src/core/tensor.js';
import { DataType, ModelConfigSchema, ModelInstanceGroup_Kind } from '../../src/generated/model_config_pb.js';
import { f32 } from './helpers.js';

const cfg = (init: Parameters<typeof create<typeof ModelConfigSchema>>[1] = {}) => create(ModelConfigSchema, { name: 'm', ...init });

describe('mapShape', () => {
  it('carries variable dims over in order', () => {
    expect(mapShape([2, 3, 4], [-1, 3, -1], [-1, 1, 3, -1])).toEqual([2, 1, 3, 4]);
  });
  it('resolves a single variable dim by element count when the counts differ', () => {
    expect(mapShape([2, 6], [2, 6], [-1, 4])).toEqual([3, 4]);
  });
  it('gives fixed patterns as they are (scalars as [1])', () => {
    expect(mapShape([], [], [1])).toEqual([1]);
    expect(mapShape([1], [1], [])).toEqual([]);
  });
});

describe('groupBy', () => {
  it('keeps first-appearance order', () => {
    expect(groupBy(['a1', 'b1', 'a2', 'c1', 'b2'], (s) => s[0]!)).toEqual([['a1', 'a2'], ['b1', 'b2'], ['c1']]);
  });
});

describe('concatInputs / splitOutput', () => {
  it('concatenates along dim 0 into an owned buffer and splits back into views', () => {
    const a = f32('X', [1, 2], [1, 2]);
    const b = f32('X', [2, 2], [3, 4, 5, 6]);
    const w = concatInputs('X', [a, b], 'float32', [3, 2], true);
    expect(w.dims).toEqual([3, 2]);
    expect([...(w.data as Float32Array)]).toEqual([1, 2, 3, 4, 5, 6]);
    expect((w.data as Float32Array).buffer).not.toBe(a.data.buffer);
    const [ra, rb] = splitOutput('Y', 'FP32', w, [1, 2]);
    expect(ra!.shape).toEqual([1, 2]);
    expect(rb!.shape).toEqual([2, 2]);
    expect(Buffer.compare(rb!.data, b.data)).toBe(0);
    expect(rb!.data.buffer).toBe((w.data as Float32Array).buffer);
  });

  it('uses a single aligned part in place only when allowed', () => {
    const a = f32('X', [1, 2], [1, 2]);
    expect((concatInputs('X', [a], 'float32', [1, 2], true).data as Float32Array).buffer).toBe(a.data.buffer);
    expect((concatInputs('X', [a], 'float32', [1, 2], false).data as Float32Array).buffer).not.toBe(a.data.buffer);
  });

  it('copies a misaligned part instead of viewing it', () => {
    const raw = Buffer.alloc(9);
    const view = raw.subarray(1);
    new DataView(view.buffer, view.byteOffset).setFloat32(0, 1.5, true);
    const w = concatInputs('X', [{ name: 'X', datatype: 'FP32', shape: [1, 2], data: view }], 'float32', [1, 2], true);
    expect([...(w.data as Float32Array)]).toEqual([1.5, 0]);
  });

  it('turns BYTES into ORT strings and back', () => {
    const w = concatInputs('S', [{ name: 'S', datatype: 'BYTES', shape: [1, 2], data: joinBytesElements(['a', 'é']) }], 'string', [1, 2], false);
    expect(w.data).toEqual(['a', 'é']);
    const t = outputTensor('S', 'BYTES', w);
    expect(splitBytesElements(t.data).map(String)).toEqual(['a', 'é']);
  });

  it('rejects byte counts that do not match the shape, and outputs without the batch', () => {
    expect(() => concatInputs('X', [f32('X', [1, 2], [1, 2])], 'float32', [1, 3], false)).toThrow(/input 'X' has 8 bytes, expected 12/);
    expect(() => splitOutput('Y', 'FP32', { type: 'float32', dims: [2], data: new Float32Array(2) }, [1, 2])).toThrow(/output 'Y'/);
  });
});

describe('session settings', () => {
  it('maps graph levels as Triton documents them', () => {
    const level = (l: number) => sessionSettings(cfg({ optimization: { graph: { level: l } } }), 'cpu', 0).options.graphOptimizationLevel;
    expect(sessionSettings(cfg(), 'cpu', 0).options.graphOptimizationLevel).toBe('all');
    expect(level(-1)).toBe('basic');
    expect(level(1)).toBe('extended');
    expect(level(2)).toBe('disabled');
    const odd = sessionSettings(cfg({ optimization: { graph: { level: 7 } } }), 'cpu', 0);
    expect(odd.options.graphOptimizationLevel).toBe('all');
    expect(odd.notes[0]).toContain('level 7');
  });

  it('reads thread counts and modes from parameters', () => {
    const p = (kv: Record<string, string>) => cfg({ parameters: Object.fromEntries(Object.entries(kv).map(([k, v]) => [k, { stringValue: v }])) });
    const s = sessionSettings(p({ intra_op_thread_count: '3', inter_op_thread_count: '2', execution_mode: '1', enable_mem_arena: '0' }), 'cpu', 0);
    expect(s.options).toMatchObject({
      intraOpNumThreads: 3,
      interOpNumThreads: 2,
      executionMode: 'parallel',
      enableCpuMemArena: false,
      executionProviders: ['cpu'],
    });
    expect(() => sessionSettings(p({ intra_op_thread_count: 'many' }), 'cpu', 0)).toThrow(/intra_op_thread_count/);
  });

  it('puts the CUDA provider on the instance device and notes what it cannot pass', () => {
    const c = cfg({
      optimization: {
        executionAccelerators: {
          gpuExecutionAccelerator: [
            { name: 'tensorrt', parameters: { precision_mode: 'FP16' } },
            { name: 'cuda', parameters: { cudnn_conv_use_max_workspace: '0' } },
          ],
        },
      },
    });
    const s = sessionSettings(c, 'cuda', 1);
    expect(s.options.executionProviders).toEqual([{ name: 'cuda', deviceId: 1 }, 'cpu']);
    expect(s.notes.join('\n')).toContain("gpu_execution_accelerator 'tensorrt': onnxruntime-node was installed without its TensorRT execution provider");
    expect(s.notes.join('\n')).toContain('cudnn_conv_use_max_workspace');
    // With the TensorRT provider installed: TensorRT first on the instance's device, then CUDA
    // and CPU for what TensorRT does not take; the parameters it cannot pass are said.
    const trt = sessionSettings(c, 'cuda', 1, { tensorrt: true });
    expect(trt.options.executionProviders).toEqual([{ name: 'tensorrt', deviceId: 1 }, { name: 'cuda', deviceId: 1 }, 'cpu']);
    expect(firstProvider(trt.options)).toBe('tensorrt');
    expect(trt.notes.join('\n')).toContain('TensorRT execution accelerator parameters are not passed by onnxruntime-node (only the device is)');
    expect(trt.notes.join('\n')).toContain('ignored: precision_mode');
    // OpenVINO has no provider in onnxruntime-node.
    const ov = cfg({ optimization: { executionAccelerators: { gpuExecutionAccelerator: [{ name: 'openvino', parameters: {} }] } } });
    expect(sessionSettings(ov, 'cuda', 0).notes).toEqual([
      "gpu_execution_accelerator 'openvino' is not available in onnxruntime-node; running on the CUDA provider",
    ]);
    // A CPU instance says that the GPU accelerators do not apply to it.
    expect(sessionSettings(c, 'cpu', 0).notes).toEqual([
      "gpu_execution_accelerator 'tensorrt' applies to GPU instances only; this instance runs on the CPU provider",
      "gpu_execution_accelerator 'cuda' applies to GPU instances only; this instance runs on the CPU provider",
    ]);
  });

  it('chooses CUDA only for GPU instances with the provider and the device', () => {
    expect(chooseProvider('CPU', 0, [0], true)).toEqual({ provider: 'cpu' });
    expect(chooseProvider('GPU', 0, [0], true)).toEqual({ provider: 'cuda' });
    expect(chooseProvider('GPU', 1, [0], true).fallbackReason).toContain('GPU 1 is not available');
    expect(chooseProvider('GPU', 0, [0], false).fallbackReason).toContain('without its CUDA execution provider');
  });
});

describe('graph auto-complete and checks', () => {
  const batchable: SessionInfo = {
    inputs: [
      { name: 'X', isTensor: true, type: 'float32', shape: [-1, 16] },
      { name: 'N', isTensor: true, type: 'int64', shape: [-1] },
    ],
    outputs: [{ name: 'Y', isTensor: true, type: 'bool', shape: [-1, 8] }],
  };

  it('detects batchable graphs', () => {
    expect(graphCanBatch(batchable)).toBe(true);
    expect(graphCanBatch({ inputs: [{ name: 'X', isTensor: true, type: 'float32', shape: [4] }], outputs: [] })).toBe(false);
  });

  it('fills I/O, a reshape for per-row scalars, max_batch_size and dynamic_batching', () => {
    const out = autoCompleteFromGraph(cfg(), batchable, 4, silentLogger);
    expect(out.maxBatchSize).toBe(4);
    expect(out.schedulingChoice.case).toBe('dynamicBatching');
    expect(out.input.map((i) => [i.name, i.dataType, i.dims, i.reshape?.shape])).toEqual([
      ['X', DataType.TYPE_FP32, [16n], undefined],
      ['N', DataType.TYPE_INT64, [1n], []],
    ]);
    expect(out.output[0]!.dataType).toBe(DataType.TYPE_BOOL);
    checkConfigAgainstGraph(out, batchable);
  });

  it('keeps a configured scheduler and does not add dynamic batching for max_batch_size 1', () => {
    expect(autoCompleteFromGraph(cfg({ maxBatchSize: 1 }), batchable, 4, silentLogger).schedulingChoice.case).toBeUndefined();
    const seq = autoCompleteFromGraph(cfg({ schedulingChoice: { case: 'sequenceBatching', value: {} } }), batchable, 4, silentLogger);
    expect(seq.schedulingChoice.case).toBe('sequenceBatching');
  });

  it('names the tensor whose type tritium cannot serve', () => {
    const info: SessionInfo = { inputs: [{ name: 'SEQ', isTensor: false, type: undefined, shape: [] }], outputs: [] };
    expect(() => autoCompleteFromGraph(cfg(), info, 4, silentLogger)).toThrow(/tensor 'SEQ'/);
  });

  it('checks input counts and scalar dims', () => {
    const scalar: SessionInfo = { inputs: [{ name: 'S', isTensor: true, type: 'float32', shape: [] }], outputs: [] };
    const c = cfg({ input: [{ name: 'S', dataType: DataType.TYPE_FP32, dims: [2n] }] });
    expect(() => checkConfigAgainstGraph(c, scalar)).toThrow(/scalar tensor 'S'/);
    const two = cfg({
      input: [
        { name: 'S', dataType: DataType.TYPE_FP32, dims: [1n] },
        { name: 'T', dataType: DataType.TYPE_FP32, dims: [1n] },
      ],
    });
    expect(() => checkConfigAgainstGraph(two, scalar)).toThrow(/configuration expects 2 inputs, model provides 1/);
  });

  it('does not depend on instance kinds', () => {
    const c = cfg({ instanceGroup: [{ kind: ModelInstanceGroup_Kind.GPU, count: 1, gpus: [0] }] });
    expect(autoCompleteFromGraph(c, batchable, 4, silentLogger).instanceGroup).toHaveLength(1);
  });
});

describe('onnxBackendOptions', () => {
  const bc = (kv: Record<string, string>) => new Map([['onnxruntime', new Map(Object.entries(kv))]]);
  it("reads Triton's onnxruntime,default-max-batch-size over the global one, and run-in", () => {
    expect(onnxBackendOptions(new Map(), 4, [0])).toMatchObject({ defaultMaxBatchSize: 4, gpus: [0], runIn: 'worker' });
    expect(onnxBackendOptions(bc({ 'default-max-batch-size': '16', 'run-in': 'main' }), 4, [])).toMatchObject({ defaultMaxBatchSize: 16, runIn: 'main' });
  });
  it('names a bad entry', () => {
    expect(() => onnxBackendOptions(bc({ 'default-max-batch-size': 'x' }), 4, [])).toThrow(/default-max-batch-size/);
    expect(() => onnxBackendOptions(bc({ threads: '2' }), 4, [])).toThrow(/onnxruntime,threads/);
    expect(() => onnxBackendOptions(bc({ 'run-in': 'gpu' }), 4, [])).toThrow(/run-in/);
  });
});
