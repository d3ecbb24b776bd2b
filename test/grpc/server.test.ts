/**
 * Protocol-layer test of the gRPC frontend: the real server on an ephemeral port, a minimal
 * in-file `ServerCore` (an identity model, a decoupled model that streams N responses, a failing
 * model and a slow one), and the real Python `tritonclient.grpc` driving it through
 * `client_checks.py`. End-to-end tests with real Python stubs live elsewhere.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { ErrorCode, Errors } from '../../src/core/errors.js';
import { deliverTo, type InferRequest, type InferResponse, type ResponseSink } from '../../src/core/inference.js';
import type { ModelHandle, TensorSpec } from '../../src/core/model-handle.js';
import { SystemSharedMemory } from '../../src/core/extensions/shared-memory.js';
import { TraceSettingsStore } from '../../src/core/extensions/trace-settings.js';
import { Tracer } from '../../src/core/trace/tracer.js';
import type { RepositoryIndexEntry, ServerCore, ServerMetadata } from '../../src/core/server-core.js';
import type { ModelStatistics, StatDuration } from '../../src/core/stats/types.js';
import type { Tensor } from '../../src/core/tensor.js';
import { startGrpcServer, type GrpcServerHandle } from '../../src/frontends/grpc/server.js';
import {
  ModelInferRequestSchema,
  ModelStreamInferResponseSchema,
  ServerLiveRequestSchema,
  ServerLiveResponseSchema,
} from '../../src/generated/grpc_service_pb.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PYTHON = process.env.TRITIUM_PYTHON ?? path.join(ROOT, '.venv', 'bin', 'python');
const SCRIPT = path.join(ROOT, 'test', 'grpc', 'client_checks.py');

// ---------------------------------------------------------------------------------------------
// A minimal core: just enough behaviour to exercise the protocol layer.

function handle(name: string, decoupled: boolean, inputs: TensorSpec[], outputs: TensorSpec[]): ModelHandle {
  return {
    name,
    version: '1',
    directory: '',
    maxBatchSize: 0,
    decoupled,
    inputs,
    outputs,
    metadata: () => ({
      name,
      versions: ['1'],
      platform: 'python',
      inputs: inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.dims })),
      outputs: outputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.dims })),
    }),
    configJson: () => ({
      name,
      platform: '',
      backend: 'python',
      version_policy: { latest: { num_versions: 1 } },
      max_batch_size: 0,
      input: inputs.map((t) => ({ name: t.name, data_type: `TYPE_${t.datatype}`, dims: t.dims })),
      output: outputs.map((t) => ({ name: t.name, data_type: `TYPE_${t.datatype}`, dims: t.dims })),
      instance_group: [{ name: `${name}_0`, kind: 'KIND_CPU', count: 1, gpus: [] }],
      model_transaction_policy: { decoupled },
      parameters: {},
    }),
    isReady: () => true,
  };
}

const spec = (name: string, datatype: TensorSpec['datatype'], dims: number[]): TensorSpec => ({
  name,
  datatype,
  dims,
  optional: false,
});

const zero = (): StatDuration => ({ count: 0n, ns: 0n });

class FakeCore implements ServerCore {
  // No mapper: this protocol-layer core cannot map memory (the real one is in test/e2e/client-shm.test.ts).
  readonly systemSharedMemory = new SystemSharedMemory(undefined);
  readonly tracer = new Tracer(new TraceSettingsStore());
  exiting = false;
  responses = 0;
  released = 0;
  aborted: string[] = [];
  readonly models = new Map<string, ModelHandle>([
    ['identity', handle('identity', false, [spec('INPUT0', 'FP32', [-1])], [spec('OUTPUT0', 'FP32', [-1])])],
    ['decoupled', handle('decoupled', true, [spec('IN', 'INT32', [1])], [spec('OUT', 'INT32', [1])])],
    ['failing', handle('failing', false, [spec('INPUT0', 'FP32', [-1])], [spec('OUTPUT0', 'FP32', [-1])])],
    ['slow', handle('slow', false, [spec('INPUT0', 'FP32', [-1])], [spec('OUTPUT0', 'FP32', [-1])])],
  ]);

  isLive(): boolean {
    return !this.exiting;
  }
  isReady(): boolean {
    return !this.exiting;
  }
  async checkReady(): Promise<boolean> {
    return this.isReady();
  }
  async checkModelReady(name: string, version: string): Promise<boolean> {
    return this.resolveModel(name, version).isReady();
  }
  isExiting(): boolean {
    return this.exiting;
  }
  serverMetadata(): ServerMetadata {
    return { name: 'tritium', version: '2.73.0', extensions: ['statistics', 'model_configuration'] };
  }
  resolveModel(name: string, version: string): ModelHandle {
    const m = this.models.get(name);
    if (!m) throw Errors.unknownModel(name);
    if (version !== '' && version !== '1') throw Errors.unknownVersion(name, version);
    return m;
  }
  statistics(name?: string): ModelStatistics[] {
    if (name !== undefined && !this.models.has(name)) {
      throw Errors.modelNotAvailable(name);
    }
    const names = name === undefined ? ['identity'] : [name];
    return names.map((n) => ({
      name: n,
      version: '1',
      last_inference: 1_700_000_000_123n,
      inference_count: 3n,
      execution_count: 2n,
      inference_stats: {
        success: { count: 3n, ns: 2n ** 60n + 5n },
        fail: zero(),
        queue: { count: 3n, ns: 300n },
        compute_input: { count: 3n, ns: 30n },
        compute_infer: { count: 3n, ns: 3000n },
        compute_output: { count: 3n, ns: 3n },
        cache_hit: zero(),
        cache_miss: zero(),
      },
      response_stats: {},
      batch_stats: [{ batch_size: 1n, compute_input: zero(), compute_infer: zero(), compute_output: zero() }],
      memory_usage: [],
    }));
  }
  repositoryIndex(): RepositoryIndexEntry[] {
    return [{ name: 'identity', version: '1', state: 'READY' }, { name: 'unloaded' }];
  }
  // As a core in --model-control-mode=none answers.
  async loadModel(): Promise<void> {
    throw Errors.explicitLoadUnload();
  }
  async unloadModel(): Promise<void> {
    throw Errors.explicitLoadUnload();
  }

  infer(req: InferRequest, sink: ResponseSink): void {
    const send = (r: Omit<InferResponse, 'modelName' | 'modelVersion' | 'id'>): void => {
      this.responses++;
      deliverTo(sink, { modelName: req.modelName, modelVersion: '1', id: req.id, release: () => this.released++, ...r });
    };
    switch (req.modelName) {
      case 'identity':
        setImmediate(() => {
          const outputs: Tensor[] = req.inputs.map((t) => ({
            ...t,
            name: t.name.replace('INPUT', 'OUTPUT'),
            // A copy, as a backend's shared-memory output would be.
            data: Buffer.from(t.data),
          }));
          const wanted = req.outputs?.map((o) => o.name);
          send({
            outputs: wanted ? outputs.filter((o) => wanted.includes(o.name)).sort((a, b) => a.name.localeCompare(b.name)) : outputs,
            parameters: req.parameters,
            final: true,
          });
        });
        return;
      case 'decoupled': {
        const n = req.inputs[0]!.data.readInt32LE(0);
        // Each response schedules the next: Node orders timers of different durations only by
        // due time, so timers of 10 and 15 ms from two requests can fire out of order on a busy loop.
        let i = 0;
        const next = (): void => {
          if (i === n) {
            setTimeout(() => send({ outputs: [], final: true, flagsOnly: true }), 5);
            return;
          }
          const data = Buffer.alloc(4);
          data.writeInt32LE(i++);
          send({ outputs: [{ name: 'OUT', datatype: 'INT32', shape: [1], data }], final: false });
          setTimeout(next, 5);
        };
        setTimeout(next, 0);
        return;
      }
      case 'failing':
        setImmediate(() => send({ outputs: [], error: Errors.modelRaised(ErrorCode.INTERNAL, 'model failed on purpose'), final: true }));
        return;
      case 'slow': {
        const timer = setTimeout(() => send({ outputs: [], final: true, flagsOnly: true }), 10_000);
        req.signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          this.aborted.push(req.id || req.modelName);
          send({ outputs: [], error: Errors.cancelled(), final: true });
        });
        return;
      }
      default:
        send({ outputs: [], error: Errors.unknownModel(req.modelName), final: true });
    }
  }
}

// ---------------------------------------------------------------------------------------------

function runClient(port: number): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    const p = spawn(PYTHON, [SCRIPT, `127.0.0.1:${port}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('error', reject);
    p.on('close', (code) => {
      if (code !== 0) reject(new Error(`client_checks.py exited ${code}: ${err}`));
      else resolve(JSON.parse(out));
    });
  });
}

const havePython = fs.existsSync(PYTHON);

describe('gRPC frontend against tritonclient.grpc (protocol layer)', () => {
  const core = new FakeCore();
  let server: GrpcServerHandle;
  let r: Record<string, any>;

  beforeAll(async () => {
    server = await startGrpcServer(core, { port: 0, address: '127.0.0.1', maxMessageSize: 2 ** 31 - 1 });
    if (havePython) r = await runClient(server.port);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  const pyIt = havePython ? it : it.skip;

  pyIt('health and readiness', () => {
    expect(r.health).toEqual({
      live: true,
      ready: true,
      model_ready: true,
      // Triton 2.51: ModelReady for a model it does not serve is ready=false, not an error.
      unknown_model: false,
    });
    // grpc.health.v1 HealthCheckResponse{status: SERVING(1)}
    expect(r.health_service).toBe('0801');
  });

  pyIt('server and model metadata', () => {
    expect(r.server_metadata).toEqual({ name: 'tritium', version: '2.73.0', extensions: ['statistics', 'model_configuration'] });
    expect(r.model_metadata.json).toEqual({
      name: 'identity',
      versions: ['1'],
      platform: 'python',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: ['-1'] }],
      outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: ['-1'] }],
    });
    expect(r.model_metadata.shape).toEqual([-1]);
    expect(r.model_metadata.versioned).toEqual(['1']);
  });

  pyIt('model config', () => {
    const c = r.model_config.json.config;
    expect(c.name).toBe('identity');
    expect(c.backend).toBe('python');
    expect(c.input[0]).toMatchObject({ name: 'INPUT0', data_type: 'TYPE_FP32', dims: ['-1'] });
    expect(c.instance_group[0]).toMatchObject({ kind: 'KIND_CPU', count: 1 });
    expect(r.model_config.max_batch_size).toBe(0);
    expect(r.model_config.dims).toEqual([-1]);
    expect(r.model_config.decoupled).toBe(true);
  });

  pyIt('statistics keep 64-bit integers', () => {
    expect(r.statistics.success_ns).toBe((2n ** 60n + 5n).toString());
    expect(r.statistics.queue_count).toBe(3);
    expect(r.statistics.batch_sizes).toEqual([1]);
    const s = r.statistics.json.model_stats[0];
    expect(s.name).toBe('identity');
    expect(s.version).toBe('1');
    expect(s.inference_count).toBe('3');
    expect(s.last_inference).toBe('1700000000123');
    expect(s.inference_stats.success.ns).toBe((2n ** 60n + 5n).toString());
    expect(r.statistics.unknown).toEqual({ status: 'StatusCode.INVALID_ARGUMENT', message: "requested model 'nope' is not available" });
  });

  pyIt('infer with raw tensors of every datatype', () => {
    for (const dt of ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BYTES']) {
      expect(r.infer_raw[dt], dt).toEqual({ equal: true, shape: [2, 3], id: `id-${dt}`, model_version: '1', raw_count: 1, outputs: 1 });
    }
  });

  pyIt('several inputs, requested outputs, empty tensors and parameters', () => {
    const m = r.infer_multi;
    expect(m.names).toEqual(['OUTPUT0', 'OUTPUT2']);
    expect(m.raw_sizes).toEqual([24, 0]);
    expect(m.out0).toBe(true);
    expect(m.out2_shape).toEqual([0, 4]);
    expect(m.echo_params).toEqual({
      custom: 'string_param: "x"',
      n: 'int64_param: 7',
      f: 'double_param: 0.5',
      flag: 'bool_param: true',
      priority: 'int64_param: 2',
      timeout: 'int64_param: 1000000',
      sequence_id: 'int64_param: 42',
      sequence_start: 'bool_param: true',
      sequence_end: 'bool_param: false',
    });
  });

  pyIt('classification outputs', () => {
    expect(r.classification).toEqual(['0.700000:1', '0.200000:2']);
  });

  pyIt('typed contents for every type, and their errors', () => {
    const t = r.infer_typed;
    for (const dt of ['BOOL', 'INT8', 'INT16', 'INT32', 'INT64', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'FP32', 'FP64']) {
      expect(t[dt], dt).toBe(true);
    }
    expect(t.BYTES_raw).toBe('020000006162' + '00000000' + '0300000078797a');
    expect(t.both).toEqual({
      status: 'StatusCode.INVALID_ARGUMENT',
      message: "contents field must not be specified when using raw_input_contents for 'INPUT0' for model 'identity'",
    });
    expect(t.wrong_field.status).toBe('StatusCode.INVALID_ARGUMENT');
    expect(t.count.status).toBe('StatusCode.INVALID_ARGUMENT');
    expect(t.fp16_typed.status).toBe('StatusCode.INVALID_ARGUMENT');
    expect(t.reserved_param.status).toBe('StatusCode.INVALID_ARGUMENT');
    expect(t.reserved_param.message).toContain("'triton_bogus'");
    expect(t.uint64_custom.status).toBe('StatusCode.INVALID_ARGUMENT');
  });

  pyIt('error status codes', () => {
    const e = r.errors;
    expect(e.unknown_model.status).toBe('StatusCode.NOT_FOUND');
    expect(e.unknown_version).toEqual({
      status: 'StatusCode.NOT_FOUND',
      message: "Request for unknown model: 'identity' version 9 is not found",
    });
    expect(e.decoupled_infer).toEqual({
      status: 'StatusCode.UNIMPLEMENTED',
      message: "ModelInfer RPC doesn't support models with decoupled transaction policy",
    });
    expect(e.failing).toEqual({ status: 'StatusCode.INTERNAL', message: 'model failed on purpose' });
    expect(e.raw_size).toEqual({
      status: 'StatusCode.INVALID_ARGUMENT',
      message: "input byte size mismatch for input 'INPUT0' for model, expected 16 bytes, got 12 bytes",
    });
    expect(e.load).toEqual({
      status: 'StatusCode.UNAVAILABLE',
      message: 'explicit model load / unload is not allowed if polling is enabled',
    });
    expect(e.unload.status).toBe('StatusCode.UNAVAILABLE');
    expect(e.shm_register.status).toBe('StatusCode.UNIMPLEMENTED');
    // The same text as HTTP gives (test/http/server.test.ts): one core rule for both protocols.
    expect(e.shm_register.message).toBe("failed to register system shared memory region 'r': system shared memory is not supported by tritium");
    expect(e.cuda_register.status).toBe('StatusCode.UNIMPLEMENTED');
    expect(e.shm_status).toEqual({});
    expect(e.cuda_status).toEqual({});
    expect(e.shm_status_named.status).toBe('StatusCode.NOT_FOUND');
    expect(e.shm_unregister).toEqual({ status: 'no error' });
  });

  pyIt('repository index, trace and log settings', () => {
    const s = r.settings;
    expect(s.repository_index).toEqual({ models: [{ name: 'identity', version: '1', state: 'READY' }, { name: 'unloaded' }] });
    expect(s.trace.settings.trace_level).toEqual({ value: ['OFF'] });
    expect(s.log.settings).toEqual({
      log_file: { string_param: '' },
      log_info: { bool_param: true },
      log_warning: { bool_param: true },
      log_error: { bool_param: true },
      log_verbose_level: { uint32_param: 0 },
      log_format: { string_param: 'default' },
    });
    expect(s.log_update.settings.log_verbose_level).toEqual({ uint32_param: 2 });
    expect(s.log_update.settings.log_info).toEqual({ bool_param: false });
    // Triton 2.51's gRPC text (its HTTP text and status differ: docs/errors.md, logFormatHttp).
    expect(s.log_bad).toEqual({ status: 'StatusCode.INVALID_ARGUMENT', message: 'invalid argument for log_format, got: weird' });
    // Same texts as HTTP (test/http/server.test.ts), as in Triton 2.51.
    expect(s.log_file).toEqual({ status: 'StatusCode.UNIMPLEMENTED', message: 'log file location can not be updated through network protocol' });
    expect(s.trace_file).toEqual({ status: 'StatusCode.UNIMPLEMENTED', message: 'trace file location can not be updated through network protocol' });
    expect(s.trace_unknown).toEqual({ status: 'StatusCode.INVALID_ARGUMENT', message: 'Request for unknown model : nomodel' });
    expect(s.trace_on).toEqual({
      status: 'StatusCode.INVALID_ARGUMENT',
      message: 'Attempting to set invalid trace setting :trace file name is not given',
    });
  });

  pyIt('async_infer', () => {
    expect(r.async_infer).toEqual({ '0': [0, 0], '1': [1, 1], '2': [2, 2], '3': [3, 3] });
  });

  pyIt('stream: every response in order, final flags, empty final only on request, in-band errors', () => {
    const events: any[] = r.stream.events;
    expect(r.stream.extra).toBe(0);
    const of = (id: string) => events.filter((e) => e.id === id);
    expect(of('d-empty')).toEqual([
      { id: 'd-empty', final: false, value: 0, outputs: 1 },
      { id: 'd-empty', final: false, value: 1, outputs: 1 },
      { id: 'd-empty', final: false, value: 2, outputs: 1 },
      { id: 'd-empty', final: false, value: 3, outputs: 1 },
      { id: 'd-empty', final: true, value: null, outputs: 0 },
    ]);
    expect(of('d-plain')).toEqual([0, 1, 2, 3].map((value) => ({ id: 'd-plain', final: false, value, outputs: 1 })));
    expect(of('ident')).toEqual([{ id: 'ident', final: true, value: null, outputs: 1 }]);
    expect(of('after-errors')).toHaveLength(1);
    const errors = events.filter((e) => e.error !== undefined).map((e) => e.error);
    expect(errors.sort()).toEqual(["Request for unknown model: 'nope' is not found", 'model failed on purpose']);
  });

  pyIt('stream with triton_grpc_error ends on the first error with its status', () => {
    expect(r.stream_grpc_error).toEqual([{ id: 'ok' }, { status: 'StatusCode.INTERNAL', message: 'model failed on purpose' }]);
  });

  pyIt('a client deadline aborts the request signal', () => {
    expect(r.cancellation.status).toBe('StatusCode.DEADLINE_EXCEEDED');
    expect(core.aborted).toContain('slow');
  });

  pyIt('large tensors pass the 4 MiB grpc default', () => {
    expect(r.large).toBe(true);
  });

  pyIt('every response buffer was released', () => {
    expect(core.released).toBe(core.responses);
  });
});

describe('gRPC frontend lifecycle (grpc-js client)', () => {
  type Unary = (path: string, req: Uint8Array) => Promise<Buffer>;
  const unary =
    (client: grpc.Client): Unary =>
    (method, req) =>
      new Promise((resolve, reject) => {
        client.makeUnaryRequest(
          method,
          (b: Uint8Array) => Buffer.from(b),
          (b: Buffer) => b,
          req,
          (err, res) => (err ? reject(err) : resolve(res!)),
        );
      });

  it('ServerLive answers UNAVAILABLE while exiting, and close() refuses new RPCs', async () => {
    const core = new FakeCore();
    const server = await startGrpcServer(core, { port: 0, address: '127.0.0.1', maxMessageSize: 0 });
    const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    const call = unary(client);
    const live = fromBinary(
      ServerLiveResponseSchema,
      await call('/inference.GRPCInferenceService/ServerLive', toBinary(ServerLiveRequestSchema, create(ServerLiveRequestSchema))),
    );
    expect(live.live).toBe(true);
    core.exiting = true;
    await expect(call('/inference.GRPCInferenceService/ServerLive', new Uint8Array())).rejects.toMatchObject({
      code: grpc.status.UNAVAILABLE,
      details: 'Server exiting',
    });
    // A stream that is open when close() starts keeps serving until the client ends it.
    const stream = client.makeBidiStreamRequest(
      '/inference.GRPCInferenceService/ModelStreamInfer',
      (b: Uint8Array) => Buffer.from(b),
      (b: Buffer) => fromBinary(ModelStreamInferResponseSchema, b),
    );
    const got: string[] = [];
    let next: (() => void) | undefined;
    stream.on('data', (m: { inferResponse?: { id: string } }) => {
      got.push(m.inferResponse?.id ?? '');
      next?.();
    });
    const status = new Promise<grpc.StatusObject>((res) => stream.on('status', res));
    const identity = (id: string) =>
      toBinary(
        ModelInferRequestSchema,
        create(ModelInferRequestSchema, {
          modelName: 'identity',
          id,
          inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1n] }],
          rawInputContents: [new Uint8Array(4)],
        }),
      );
    const roundTrip = (id: string) =>
      new Promise<void>((res) => {
        next = res;
        stream.write(identity(id));
      });
    await roundTrip('before');
    const closing = server.close();
    const refused = await call('/inference.GRPCInferenceService/ServerLive', new Uint8Array()).catch((e: grpc.ServiceError) => e);
    expect(refused).toMatchObject({
      code: grpc.status.UNAVAILABLE,
      details: 'GRPC server is shutting down and has stopped accepting new requests.',
    });
    await roundTrip('during');
    stream.end();
    expect((await status).code).toBe(grpc.status.OK);
    await closing;
    expect(got).toEqual(['before', 'during']);
    client.close();
  });

  it('a cancelled stream aborts its requests in flight', async () => {
    const core = new FakeCore();
    const server = await startGrpcServer(core, { port: 0, address: '127.0.0.1', maxMessageSize: 0 });
    const client = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    const stream = client.makeBidiStreamRequest(
      '/inference.GRPCInferenceService/ModelStreamInfer',
      (b: Uint8Array) => Buffer.from(b),
      (b: Buffer) => b,
    );
    stream.on('error', () => {});
    const req = create(ModelInferRequestSchema, {
      modelName: 'slow',
      id: 'slow-stream',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1n] }],
      rawInputContents: [new Uint8Array(4)],
    });
    stream.write(toBinary(ModelInferRequestSchema, req));
    await new Promise((r) => setTimeout(r, 100));
    stream.cancel();
    for (let i = 0; i < 50 && core.aborted.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(core.aborted).toEqual(['slow-stream']);
    expect(core.released).toBe(core.responses);
    client.close();
    await server.close();
  });
});
