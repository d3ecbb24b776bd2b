/**
 * A minimal ServerCore for PROTOCOL-LAYER tests of the HTTP frontend. It is not the real core:
 * no config, no scheduler, no Python. Models:
 *   - "identity":   any inputs; each INPUTn comes back as OUTPUTn (same datatype/shape/bytes)
 *   - "single":     one FP32 input INPUT0 dims [-1], no batching (for raw binary bodies)
 *   - "batched":    one INT32 input INPUT0 dims [4], max_batch_size 8
 *   - "bytes1":     one BYTES input INPUT0 dims [1], no batching
 *   - "decoupled":  decoupled transaction policy (refused on /infer)
 *   - "broken":     exists but fails its runtime readiness check
 * Request parameters understood by "identity": `fail` (string → INTERNAL error with that text),
 * `delay_ms` (answer later), `echo_params` (copy request parameters into the response).
 */
import type { Datatype } from '../../src/core/datatype.js';
import { ErrorCode, Errors } from '../../src/core/errors.js';
import { deliverTo, type InferRequest, type InferResponse, type ResponseSink } from '../../src/core/inference.js';
import type { ModelHandle, TensorSpec } from '../../src/core/model-handle.js';
import { SystemSharedMemory } from '../../src/core/extensions/shared-memory.js';
import { TraceSettingsStore } from '../../src/core/extensions/trace-settings.js';
import { Tracer } from '../../src/core/trace/tracer.js';
import type { RepositoryIndexEntry, ServerCore, ServerMetadata } from '../../src/core/server-core.js';
import type { ModelStatistics, StatDuration } from '../../src/core/stats/types.js';

function spec(name: string, datatype: Datatype, dims: number[]): TensorSpec {
  return { name, datatype, dims, optional: false };
}

function handle(
  name: string,
  opts: { inputs?: TensorSpec[]; outputs?: TensorSpec[]; maxBatchSize?: number; decoupled?: boolean; ready?: boolean },
): ModelHandle {
  const inputs = opts.inputs ?? [];
  const outputs = opts.outputs ?? [];
  const mbs = opts.maxBatchSize ?? 0;
  const shapeOf = (t: TensorSpec) => ({ name: t.name, datatype: t.datatype, shape: mbs > 0 ? [-1, ...t.dims] : t.dims });
  return {
    name,
    version: '1',
    directory: '',
    maxBatchSize: mbs,
    decoupled: opts.decoupled ?? false,
    inputs,
    outputs,
    metadata: () => ({ name, versions: ['1'], platform: 'python', inputs: inputs.map(shapeOf), outputs: outputs.map(shapeOf) }),
    configJson: () => ({ name, platform: '', backend: 'python', max_batch_size: mbs, big_number: 2n ** 63n - 1n }),
    isReady: () => opts.ready ?? true,
  };
}

const MODELS: Record<string, ModelHandle> = {
  identity: handle('identity', {
    inputs: [spec('INPUT0', 'FP32', [-1]), spec('INPUT1', 'BYTES', [-1])],
    outputs: [spec('OUTPUT0', 'FP32', [-1]), spec('OUTPUT1', 'BYTES', [-1])],
  }),
  single: handle('single', { inputs: [spec('INPUT0', 'FP32', [-1])], outputs: [spec('OUTPUT0', 'FP32', [-1])] }),
  batched: handle('batched', { inputs: [spec('INPUT0', 'INT32', [4])], outputs: [spec('OUTPUT0', 'INT32', [4])], maxBatchSize: 8 }),
  bytes1: handle('bytes1', { inputs: [spec('INPUT0', 'BYTES', [1])], outputs: [spec('OUTPUT0', 'BYTES', [1])] }),
  decoupled: handle('decoupled', { inputs: [spec('IN', 'INT32', [1])], outputs: [spec('OUT', 'INT32', [1])], decoupled: true }),
  broken: handle('broken', { inputs: [spec('INPUT0', 'FP32', [1])], outputs: [spec('OUTPUT0', 'FP32', [1])], ready: false }),
};

const d = (count: bigint, ns: bigint): StatDuration => ({ count, ns });

function stats(name: string): ModelStatistics {
  const big = 2n ** 60n + 7n; // beyond 2^53: must print exactly
  return {
    name,
    version: '1',
    last_inference: 1700000000000n,
    inference_count: 3n,
    execution_count: 2n,
    inference_stats: {
      success: d(3n, big),
      fail: d(0n, 0n),
      queue: d(3n, 300n),
      compute_input: d(3n, 30n),
      compute_infer: d(3n, 3000n),
      compute_output: d(3n, 33n),
      cache_hit: d(0n, 0n),
      cache_miss: d(0n, 0n),
    },
    response_stats: {},
    batch_stats: [{ batch_size: 1n, compute_input: d(2n, 20n), compute_infer: d(2n, 2000n), compute_output: d(2n, 22n) }],
    memory_usage: [],
  };
}

export interface ProtocolCore extends ServerCore {
  live: boolean;
  ready: boolean;
  exiting: boolean;
  /** Requests seen by infer(), most recent last. */
  seen: InferRequest[];
  /** Number of `release()` calls on responses handed out. */
  released: number;
  /** Requests whose signal was aborted. */
  aborted: number;
}

export function createProtocolCore(): ProtocolCore {
  const core: ProtocolCore = {
    // No mapper: this protocol-layer core cannot map memory (the real one is in test/e2e/client-shm.test.ts).
    systemSharedMemory: new SystemSharedMemory(undefined),
    tracer: new Tracer(new TraceSettingsStore()),
    live: true,
    ready: true,
    exiting: false,
    seen: [],
    released: 0,
    aborted: 0,
    isLive: () => core.live,
    isReady: () => core.ready,
    checkReady: async () => core.ready,
    checkModelReady: async (name: string, version: string) => core.resolveModel(name, version).isReady(),
    isExiting: () => core.exiting,
    serverMetadata: (): ServerMetadata => ({
      name: 'triton',
      version: '2.99.0',
      extensions: ['classification', 'sequence', 'model_repository', 'binary_tensor_data', 'parameters', 'statistics'],
    }),
    resolveModel: (name: string, version: string): ModelHandle => {
      const m = MODELS[name];
      if (m === undefined) throw Errors.unknownModel(name);
      if (version !== '' && version !== '1') throw Errors.unknownVersion(name, version);
      return m;
    },
    infer: (request: InferRequest, sink: ResponseSink): void => {
      core.seen.push(request);
      request.signal?.addEventListener('abort', () => core.aborted++);
      const p = request.parameters;
      const respond = (): void => {
        const base = { modelName: request.modelName, modelVersion: '1', id: request.id, final: true };
        if (typeof p.fail === 'string') {
          deliverTo(sink, { ...base, outputs: [], error: Errors.modelRaised(ErrorCode.INTERNAL, p.fail) });
          return;
        }
        if (request.signal?.aborted) {
          deliverTo(sink, { ...base, outputs: [], error: Errors.cancelled() });
          return;
        }
        let outputs = request.inputs.map((t) => ({ ...t, name: t.name.replace(/^INPUT/, 'OUTPUT') }));
        if (request.outputs !== undefined) {
          const wanted = new Set(request.outputs.map((o) => o.name));
          outputs = outputs.filter((o) => wanted.has(o.name));
        }
        const response: InferResponse = { ...base, outputs, release: () => core.released++ };
        if (p.echo_params === true) {
          const { echo_params: _e, ...rest } = p;
          response.parameters = rest;
        }
        deliverTo(sink, response);
      };
      if (typeof p.delay_ms === 'number') setTimeout(respond, p.delay_ms);
      else respond();
    },
    statistics: (name?: string, version?: string): ModelStatistics[] => {
      if (name === undefined) return [stats('identity')];
      const m = core.resolveModel(name, version ?? '');
      if (!m.isReady()) throw Errors.modelNotAvailable(name);
      return [stats(name)];
    },
    repositoryIndex: (readyOnly: boolean): RepositoryIndexEntry[] => {
      const all: RepositoryIndexEntry[] = [
        { name: 'identity', version: '1', state: 'READY' },
        { name: 'broken', version: '1', state: 'UNAVAILABLE', reason: 'stub died' },
        { name: 'never_loaded' },
      ];
      return readyOnly ? all.filter((e) => e.state === 'READY') : all;
    },
    // As a core in --model-control-mode=none answers.
    loadModel: async () => {
      throw Errors.explicitLoadUnload();
    },
    unloadModel: async () => {
      throw Errors.explicitLoadUnload();
    },
  };
  return core;
}
