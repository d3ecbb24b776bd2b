/**
 * @module backends/onnx/instance
 * One instance of an ONNX model: one onnxruntime session (in its own worker thread by default),
 * one run at a time. A scheduled batch becomes as few runs as possible: requests whose inputs
 * agree on everything but the batch dimension are concatenated along dimension 0 into one run
 * (Triton's ORT batching; Python models instead see the requests one by one), and every output
 * is cut back into per-request slices. Each request gets the outputs it asked for, in its order.
 *
 * A worker that dies is restarted by the core's lifecycle (core/instance/lifecycle.ts), with its
 * back-off, warmup before traffic and give-up, as for Python stubs; each start opens a fresh
 * session and checks the config against the graph again.
 *
 * Execution phases (statistics): compute_input = building the ORT input tensors, compute_infer
 * = session.run, compute_output = splitting the outputs and responding.
 */
import type { BackendInstance, InstanceHooks } from '../../core/backend.js';
import type { Datatype } from '../../core/datatype.js';
import { Errors, type TritonError, asTritonError } from '../../core/errors.js';
import { InstanceLifecycle, lifecycleEvents, type RestartPolicy } from '../../core/instance/lifecycle.js';
import { classifyStartFailure } from '../../core/instance/resource-failure.js';
import { traceLine, traceTags, tracedAll, tracedError, tracedSince } from '../../core/trace-tags.js';
import type { Logger } from '../../core/logger.js';
import { datatypeOf, sequenceTensors } from '../../core/model/config-view.js';
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
  /** Overrides of the core's restart policy (tests). */
  restartPolicy?: Partial<RestartPolicy>;
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

export class OnnxInstance implements BackendInstance {
  readonly name: string;
  readonly kind: 'CPU' | 'GPU' | 'MODEL';
  readonly deviceId: number;
  /** The provider the session actually runs on, once started. */
  provider: 'cpu' | 'cuda' | undefined;
  private readonly life: InstanceLifecycle<SessionRunner>;
  private readonly batching: boolean;
  private readonly inputs = new Map<string, InputPlan>();
  private readonly outputs = new Map<string, OutputPlan>();
  private readonly allOutputs: string[];
  private readonly stateOutputs: Array<{ output: string; input: string }>;
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
    // A sequence model's controls and state inputs are fed like configured inputs; its state
    // outputs are fetched on every run and handed to the sequence batcher, never to the client.
    const seq = sequenceTensors(cfg);
    for (const t of seq.inputs) {
      this.inputs.set(t.name, { name: t.name, ortType: ortTypeOf(t.datatype)!, dims: t.dims, reshape: undefined, ragged: false, graphScalar: false });
    }
    for (const t of seq.stateOutputs) this.outputs.set(t.name, { name: t.name, datatype: t.datatype, dims: t.dims, reshape: undefined });
    this.stateOutputs = seq.stateOutputs.map((t) => ({ output: t.name, input: t.input }));
    this.life = new InstanceLifecycle<SessionRunner>({
      name: o.name,
      label: `onnxruntime instance '${o.name}' of model '${cfg.name}'`,
      logSource: 'onnxruntime',
      logger: o.logger,
      events: lifecycleEvents(this, o.hooks),
      classifyStartFailure,
      ...(o.restartPolicy ? { policy: o.restartPolicy } : {}),
      incarnations: {
        start: () => this.open(),
        discard: (runner) => runner.close().catch(() => {}),
        stop: (runner) => runner.close(),
        kill: (runner) => void runner.close().catch(() => {}),
      },
    });
  }

  isReady(): boolean {
    return this.life.isReady();
  }

  /** Why the instance is not ready ('' when it is). */
  get reason(): string {
    return this.life.reason;
  }

  /** Supervision gave up restarting it: it stays down until the model is reloaded. */
  get gaveUp(): boolean {
    return this.life.gaveUp;
  }

  /** The session that may run now (ready, or warming up after a restart). */
  private get runner(): SessionRunner | undefined {
    return this.life.serving;
  }

  /** Session executions so far (tests and diagnostics). */
  get runCount(): number {
    return this.runs;
  }

  /** Opens the session and checks the config against the graph; rejects with the load error. */
  async start(): Promise<SessionInfo> {
    return (await this.life.start()).info;
  }

  /** One incarnation: a session that opens, agrees with the config and reports its death. */
  private async open(): Promise<SessionRunner> {
    const runner = await this.openFirstThatWorks();
    try {
      checkConfigAgainstGraph(this.o.config, runner.info);
    } catch (err) {
      await runner.close().catch(() => {});
      throw err;
    }
    for (const g of runner.info.inputs) {
      const plan = this.inputs.get(g.name);
      if (plan) plan.graphScalar = g.shape.length === 0;
    }
    runner.onDeath = (err) => this.life.died(runner, `onnxruntime session of instance '${this.name}' (model '${this.o.config.name}') died: ${err.message}.`);
    return runner;
  }

  private async openFirstThatWorks(): Promise<SessionRunner> {
    let lastError: Error | undefined;
    for (const [k, spec] of this.o.sessions.entries()) {
      try {
        const runner = await openSession(spec, this.o.runIn);
        this.provider = spec.options.executionProviders?.some((p) => (typeof p === 'string' ? p : p.name) === 'cuda') ? 'cuda' : 'cpu';
        if (traceTags.instance)
          traceLine(
            'instance',
            `${this.o.config.name}/${this.name}: onnxruntime session opened (${this.provider}, run in ${this.o.runIn === 'main' ? 'the main thread' : 'a worker thread'})`,
          );
        return runner;
      } catch (err) {
        lastError = err as Error;
        if (k < this.o.sessions.length - 1) this.o.onFallback?.(spec, lastError);
      }
    }
    throw Errors.onnxSession(this.name, this.o.config.name, lastError?.message ?? 'no session options');
  }

  /** Closes the session (and its worker); no restart after this. */
  stop(): Promise<void> {
    return this.life.stop(5000);
  }

  async execute(batch: PendingRequest[]): Promise<ExecutionTimes> {
    const startNs = process.hrtime.bigint();
    const runner = this.runner;
    const live: PendingRequest[] = [];
    for (const pr of batch) {
      if (pr.done) continue;
      if (pr.cancelled) {
        if (traceTags.onnx) traceLine('onnx', `${this.o.config.name}/${this.name}: ${tracedAll([pr])} cancelled before its run; failing it`);
        pr.fail(Errors.cancelled());
      } else live.push(pr);
    }
    if (!runner) {
      const err = Errors.onnxInstanceNotReady(this.name, this.o.config.name);
      for (const pr of live) pr.fail(err);
      const t = process.hrtime.bigint();
      return { startNs, inputEndNs: t, inferEndNs: t, endNs: t };
    }

    const runs = this.plan(live);
    const inputEndNs = process.hrtime.bigint();
    const label = traceTags.onnx ? `${this.o.config.name}/${this.name}` : '';
    if (traceTags.onnx) traceLine('onnx', `${label}: batch of ${live.length} request(s) in ${runs.length} run(s): ${tracedAll(live)}`);
    for (const run of runs) {
      if (run.error) {
        if (traceTags.onnx) traceLine('onnx', `${label}: run of ${tracedAll(run.requests)} not started: ${run.error.message}`);
        continue;
      }
      const runStartNs = traceTags.onnx ? process.hrtime.bigint() : 0n;
      try {
        run.outs = await runner.run(run.feeds, run.fetches);
        this.runs++;
      } catch (err) {
        run.error = Errors.onnxRunFailed((err as Error).message);
      }
      if (traceTags.onnx)
        traceLine(
          'onnx',
          `${label}: run of ${tracedAll(run.requests)} (${run.rows.reduce((a, b) => a + b, 0)} row(s)) ended (${tracedError(run.error)}) in ${tracedSince(runStartNs)}`,
        );
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
        for (const s of this.stateOutputs) wanted.add(s.output);
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
      const state = pr.sequence?.state;
      // Copied: the sequence keeps it past this run's buffers.
      if (state !== undefined) for (const s of this.stateOutputs) state.set(s.input, stateValue(perRequest.get(s.output)![i]!, s.input));
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

/** A state output's slice as the next request's state input. */
function stateValue(t: Tensor, input: string): Tensor {
  return { name: input, datatype: t.datatype, shape: t.shape.slice(), data: Buffer.from(t.data) };
}
