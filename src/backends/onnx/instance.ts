/**
 * @module backends/onnx/instance
 * One instance of an ONNX model: one onnxruntime session (in its own worker thread by default),
 * one run at a time. A scheduled batch becomes as few runs as possible: requests whose inputs
 * agree on everything but the batch dimension are concatenated along dimension 0 into one run
 * (Triton's ORT batching; Python models instead see the requests one by one), and every output
 * is cut back into per-request slices. Each request gets the outputs it asked for, in its order.
 *
 * Execution phases (statistics): compute_input = building the ORT input tensors, compute_infer
 * = session.run, compute_output = splitting the outputs and responding.
 */
import type { BackendInstance, InstanceHooks } from '../../core/backend.js';
import type { Datatype } from '../../core/datatype.js';
import { Errors, type TritonError, asTritonError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { datatypeOf } from '../../core/model/config-view.js';
import type { ExecutionTimes, PendingRequest } from '../../core/scheduling/types.js';
import type { Tensor } from '../../core/tensor.js';
import type { ModelConfig } from '../../generated/model_config_pb.js';
import { checkConfigAgainstGraph } from './auto-complete.js';
import { ortTypeOf, type OrtType } from './ort-types.js';
import { openSession, type RunIn, type SessionInfo, type SessionRunner, type SessionSpec } from './runner.js';
import { groupBy, mapShape, rowsOf } from './shapes.js';
import { concatInputs, outputTensor, splitOutput, type WireTensor } from './tensor-convert.js';

export interface OnnxInstanceOptions {
  config: ModelConfig;
  name: string;
  kind: 'CPU' | 'GPU' | 'MODEL';
  deviceId: number;
  /** Sessions to try in order (CUDA first, then the CPU fallback); the first that opens wins. */
  sessions: SessionSpec[];
  runIn: RunIn;
  logger: Logger;
  hooks: InstanceHooks;
  /** A session spec failed to open and the next one is tried: log why (once per model). */
  onFallback?: (failed: SessionSpec, err: Error) => void;
  /** Delay before re-creating a worker that died (ms). */
  restartDelayMs?: number;
}

interface InputPlan {
  name: string;
  ortType: OrtType;
  dims: number[];
  reshape: number[] | undefined;
  ragged: boolean;
  /** The graph takes a scalar (config dims [1]). */
  graphScalar: boolean;
}

interface OutputPlan {
  name: string;
  datatype: Datatype;
  dims: number[];
  reshape: number[] | undefined;
}

/** One session run: the requests it serves and what it feeds and fetches. */
interface Run {
  requests: PendingRequest[];
  /** Rows each request contributes (batching models). */
  rows: number[];
  feeds: Record<string, WireTensor>;
  fetches: string[];
  outs?: Record<string, WireTensor>;
  error?: TritonError;
}

type State = 'starting' | 'ready' | 'restarting' | 'stopped';

export class OnnxInstance implements BackendInstance {
  readonly name: string;
  readonly kind: 'CPU' | 'GPU' | 'MODEL';
  readonly deviceId: number;
  /** The provider the session actually runs on, once started. */
  provider: 'cpu' | 'cuda' | undefined;
  private state: State = 'starting';
  private runner: SessionRunner | undefined;
  private readonly batching: boolean;
  private readonly inputs = new Map<string, InputPlan>();
  private readonly outputs = new Map<string, OutputPlan>();
  private readonly allOutputs: string[];
  private restartTimer: NodeJS.Timeout | undefined;
  private runs = 0;

  constructor(private readonly o: OnnxInstanceOptions) {
    this.name = o.name;
    this.kind = o.kind;
    this.deviceId = o.deviceId;
    const cfg = o.config;
    this.batching = cfg.maxBatchSize > 0;
    for (const i of cfg.input) {
      const ortType = ortTypeOf(datatypeOf(i.dataType));
      if (!ortType) throw Errors.onnxNoTensorType(i.name, cfg.name, datatypeOf(i.dataType));
      this.inputs.set(i.name, {
        name: i.name,
        ortType,
        dims: i.dims.map(Number),
        reshape: i.reshape?.shape.map(Number),
        ragged: i.allowRaggedBatch,
        graphScalar: false,
      });
    }
    for (const out of cfg.output) {
      this.outputs.set(out.name, { name: out.name, datatype: datatypeOf(out.dataType), dims: out.dims.map(Number), reshape: out.reshape?.shape.map(Number) });
    }
    this.allOutputs = cfg.output.map((x) => x.name);
  }

  isReady(): boolean {
    return this.state === 'ready';
  }

  /** Session executions so far (tests and diagnostics). */
  get runCount(): number {
    return this.runs;
  }

  /** Opens the session and checks the config against the graph; rejects with the load error. */
  async start(): Promise<SessionInfo> {
    const runner = await this.open();
    try {
      checkConfigAgainstGraph(this.o.config, runner.info);
    } catch (err) {
      await runner.close().catch(() => {});
      throw err;
    }
    this.adopt(runner);
    return runner.info;
  }

  private async open(): Promise<SessionRunner> {
    let lastError: Error | undefined;
    for (const [k, spec] of this.o.sessions.entries()) {
      try {
        const runner = await openSession(spec, this.o.runIn);
        this.provider = spec.options.executionProviders?.some((p) => (typeof p === 'string' ? p : p.name) === 'cuda') ? 'cuda' : 'cpu';
        return runner;
      } catch (err) {
        lastError = err as Error;
        if (k < this.o.sessions.length - 1) this.o.onFallback?.(spec, lastError);
      }
    }
    throw Errors.onnxSession(this.name, this.o.config.name, lastError?.message ?? 'no session options');
  }

  private adopt(runner: SessionRunner): void {
    for (const g of runner.info.inputs) {
      const plan = this.inputs.get(g.name);
      if (plan) plan.graphScalar = g.shape.length === 0;
    }
    this.runner = runner;
    runner.onDeath = (err) => this.onDeath(runner, err);
    this.state = 'ready';
  }

  /** A worker died under us: fail nothing more, go not-ready, start a fresh session. */
  private onDeath(runner: SessionRunner, err: Error): void {
    if (runner !== this.runner || this.state === 'stopped') return;
    this.runner = undefined;
    this.state = 'restarting';
    this.o.logger.error(`onnxruntime session of instance '${this.name}' (model '${this.o.config.name}') died: ${err.message}; restarting it`, 'onnxruntime');
    this.o.hooks.onReadinessChange(this, false);
    const retry = () => {
      this.restartTimer = undefined;
      if (this.state === 'stopped') return;
      this.open().then(
        (fresh) => {
          if (this.state === 'stopped') {
            void fresh.close();
            return;
          }
          this.adopt(fresh);
          this.o.hooks.onRestart(this);
          this.o.hooks.onReadinessChange(this, true);
        },
        (e: Error) => {
          this.o.logger.error(`restarting instance '${this.name}' failed: ${e.message}`, 'onnxruntime');
          this.restartTimer = setTimeout(retry, 5 * (this.o.restartDelayMs ?? 1000));
          this.restartTimer.unref();
        },
      );
    };
    this.restartTimer = setTimeout(retry, this.o.restartDelayMs ?? 1000);
    this.restartTimer.unref();
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const runner = this.runner;
    this.runner = undefined;
    await runner?.close();
  }

  async execute(batch: PendingRequest[]): Promise<ExecutionTimes> {
    const startNs = process.hrtime.bigint();
    const runner = this.runner;
    const live: PendingRequest[] = [];
    for (const pr of batch) {
      if (pr.done) continue;
      if (pr.cancelled) pr.fail(Errors.cancelled());
      else live.push(pr);
    }
    if (!runner || this.state !== 'ready') {
      const err = Errors.onnxInstanceNotReady(this.name, this.o.config.name);
      for (const pr of live) pr.fail(err);
      const t = process.hrtime.bigint();
      return { startNs, inputEndNs: t, inferEndNs: t, endNs: t };
    }

    const runs = this.plan(live);
    const inputEndNs = process.hrtime.bigint();
    for (const run of runs) {
      if (run.error) continue;
      try {
        run.outs = await runner.run(run.feeds, run.fetches);
        this.runs++;
      } catch (err) {
        run.error = Errors.onnxRunFailed((err as Error).message);
      }
    }
    const inferEndNs = process.hrtime.bigint();
    for (const run of runs) this.respond(run);
    return { startNs, inputEndNs, inferEndNs, endNs: process.hrtime.bigint() };
  }

  /** Groups the requests into runs and builds each run's input tensors. */
  private plan(requests: PendingRequest[]): Run[] {
    const groups = this.batching ? groupBy(requests, (pr) => this.signature(pr)) : requests.map((pr) => [pr]);
    return groups.map((group) => {
      const run: Run = { requests: group, rows: [], feeds: {}, fetches: [] };
      try {
        run.rows = group.map((pr) => rowsOf(pr.request.inputs[0]?.shape ?? []));
        for (const t of group[0]!.request.inputs) {
          const parts = group.map((pr) => pr.request.inputs.find((x) => x.name === t.name)!);
          run.feeds[t.name] = this.feed(t, parts, run.rows);
        }
        const wanted = new Set<string>();
        for (const pr of group) for (const name of this.requestedOutputs(pr)) wanted.add(name);
        run.fetches = [...wanted];
      } catch (err) {
        run.error = asTritonError(err);
      }
      return run;
    });
  }

  /** Requests with equal signatures can share a run: same inputs, same non-batch dims. */
  private signature(pr: PendingRequest): string {
    return pr.request.inputs
      .map((t) => `${t.name}:${this.inputs.get(t.name)?.ragged ? '*' : t.shape.slice(1).join('x')}`)
      .sort()
      .join('|');
  }

  private feed(first: Tensor, parts: Tensor[], rows: number[]): WireTensor {
    const plan = this.inputs.get(first.name);
    if (!plan) throw Errors.unexpectedInput(this.o.config.name, first.name);
    let dims: number[];
    if (!this.batching) {
      const shape = plan.reshape ? mapShape(first.shape, plan.dims, plan.reshape) : first.shape;
      dims = plan.graphScalar ? [] : shape;
    } else if (plan.ragged) {
      // Ragged inputs are fed flat: the graph takes [-1] and gets every request's elements.
      dims = [parts.reduce((n, p) => n + p.shape.reduce((a, b) => a * b, 1), 0)];
    } else {
      const inner = first.shape.slice(1);
      dims = [rows.reduce((a, b) => a + b, 0), ...(plan.reshape ? mapShape(inner, plan.dims, plan.reshape) : inner)];
    }
    return concatInputs(first.name, parts, plan.ortType, dims, this.o.runIn === 'main');
  }

  private requestedOutputs(pr: PendingRequest): string[] {
    return pr.request.outputs?.length ? pr.request.outputs.map((o) => o.name) : this.allOutputs;
  }

  /** Cuts the run's outputs per request and answers each request once. */
  private respond(run: Run): void {
    if (run.error || !run.outs) {
      const err = run.error ?? Errors.onnxNoOutputs();
      for (const pr of run.requests) pr.fail(err);
      return;
    }
    const perRequest = new Map<string, Tensor[]>();
    try {
      for (const name of run.fetches) {
        const plan = this.outputs.get(name);
        const out = run.outs[name];
        if (!plan || !out) throw Errors.onnxMissingOutput(name);
        const pieces = this.batching
          ? splitOutput(name, plan.datatype, out, run.rows).map((t) => ({ ...t, shape: [t.shape[0]!, ...this.responseDims(t.shape.slice(1), plan)] }))
          : [outputTensor(name, plan.datatype, out, this.responseDims(out.dims, plan))];
        perRequest.set(name, pieces);
      }
    } catch (err) {
      const e = asTritonError(err);
      for (const pr of run.requests) pr.fail(e);
      return;
    }
    run.requests.forEach((pr, i) => {
      const outputs = this.requestedOutputs(pr).map((name) => perRequest.get(name)![i]!);
      pr.respond({ modelName: pr.request.modelName, modelVersion: '', id: pr.request.id, outputs, final: true });
    });
  }

  /** The graph's (non-batch) output shape as the config's dims (reshape, scalars as [1]). */
  private responseDims(graphDims: number[], plan: OutputPlan): number[] {
    if (plan.reshape) return mapShape(graphDims, plan.reshape, plan.dims);
    if (graphDims.length === 0 && plan.dims.length > 0) return mapShape(graphDims, [], plan.dims);
    return graphDims;
  }
}
