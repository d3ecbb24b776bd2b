/**
 * @module backends/python/bls
 * Calls a Python model makes to the server (docs/ipc.md, "Calls from the model"): BLS requests
 * (`pb_utils.InferenceRequest(...).exec()`), `is_model_ready`, `load_model` / `unload_model`.
 *
 * A BLS request becomes an `InferRequest` on the core's path (`InternalClient`: validation,
 * scheduling, batching, statistics, cancellation), like a client's. Its input tensors are views
 * of the blocks the caller's stub wrote (no copy here; a Python target copies them into its own
 * region as it would a client's); each response's outputs are copied once into the caller's
 * region and the target's blocks released at once. The caller frees its input blocks when the
 * final answer arrives, and hands the output blocks back with `bls_free` once the model dropped
 * them.
 */
import { CancelToken, type CancelSignal } from '../../core/cancellation.js';
import type { CustomMetrics } from '../../core/custom-metrics.js';
import type { Datatype } from '../../core/datatype.js';
import { asTritonError, ErrorCode, Errors, type TritonError } from '../../core/errors.js';
import type { InferResponse, Parameters } from '../../core/inference.js';
import type { InternalClient } from '../../core/internal-client.js';
import type { ModelHandle } from '../../core/model-handle.js';
import type { Tensor } from '../../core/tensor.js';
import type { RequestTrace } from '../../core/trace/request-trace.js';
import type { StubChannel } from './ipc/channel.js';
import type { BlsMsg, ModelCtlMsg, RespWire, StubToNode, TensorDescriptor } from './ipc/messages.js';

/**
 * Explicit model control, as the server offers it to `pb_utils.load_model` / `unload_model`.
 * Absent when the server does not run in explicit mode: the calls then fail with Triton's text.
 */
export interface ModelControl {
  load(name: string, o: { config: string; files: Record<string, Buffer> }): Promise<void>;
  unload(name: string, o: { unloadDependents: boolean }): Promise<void>;
}

/** What a Python instance gives its stub's calls. */
export interface ModelCalls {
  client: InternalClient;
  modelControl?: ModelControl;
  /** Where pb_utils.MetricFamily metrics go (metric-calls.ts); without it they are not answered. */
  customMetrics?: CustomMetrics;
}

interface OpenCall {
  token: CancelToken;
  channel: StubChannel;
  /** The caller stub is gone: answers are dropped. */
  abandoned: boolean;
  detach?: () => void;
  /** Resolves at the final response (the target no longer reads the inputs). */
  settled: Promise<void>;
  settle: () => void;
}

/** The calling instance's open requests, by rid. */
export interface CallerRequests {
  signalOf(rid: number): CancelSignal | undefined;
  traceOf(rid: number): RequestTrace | undefined;
}

export class BlsBroker {
  private readonly open = new Map<number, OpenCall>();

  /**
   * @param callers what the calling instance knows of its open request `rid`: its cancel signal
   *   (a call made from a batch is cancelled when every request of that batch is) and its trace
   *   (a call made with `trace=request.trace()` is traced as its child).
   */
  constructor(
    private readonly calls: ModelCalls,
    private readonly instanceName: string,
    private readonly callers: CallerRequests,
  ) {}

  /** Handles a message of the calls protocol; false for any other message. */
  onMessage(channel: StubChannel, m: StubToNode): boolean {
    switch (m.t) {
      case 'bls':
        this.start(channel, m);
        return true;
      case 'bls_free':
        for (const [seg, off] of m.blocks) {
          try {
            channel.freeInput(seg, off);
          } catch {
            /* a stub bug must not take the server down */
          }
        }
        return true;
      case 'bls_cancel':
        this.open.get(m.bid)?.token.abort();
        return true;
      case 'model_ctl':
        void this.modelControl(channel, m);
        return true;
      default:
        return false;
    }
  }

  /**
   * The caller stub died or stopped: its open calls are cancelled. Resolves once every target
   * answered, so the caller's region (which the targets may still read) is closed after that;
   * undefined when no call is open.
   */
  abandon(): Promise<void> | undefined {
    if (this.open.size === 0) return undefined;
    const pending: Promise<void>[] = [];
    for (const call of this.open.values()) {
      call.abandoned = true;
      call.token.abort();
      pending.push(call.settled);
    }
    return Promise.all(pending).then(() => undefined);
  }

  private start(channel: StubChannel, m: BlsMsg): void {
    const client = this.calls.client;
    const name = m.model;
    const version = Number(m.ver) < 0 ? '' : String(m.ver);
    const answer = (resp: RespWire | null, final: boolean) => {
      if (!call.abandoned) channel.send({ t: 'bls_r', bid: m.bid, resp, final });
    };
    let settle!: () => void;
    const settled = new Promise<void>((r) => {
      settle = r;
    });
    const call: OpenCall = { token: new CancelToken(), channel, abandoned: false, settled, settle };
    // Checked before the request is built, in this order, as Triton's BLS does
    // (docs/protocol-notes.md, "BLS calls from a model").
    let target: ModelHandle | undefined;
    try {
      target = client.resolveModel(name, version);
    } catch {
      /* unknown model or version: not ready */
    }
    let refusal: TritonError | undefined;
    if (!target?.isReady()) refusal = Errors.blsModelNotReady(name);
    else if (target.decoupled && !m.dec) refusal = Errors.blsDecoupledTarget(name);
    let inputs: Tensor[] = [];
    try {
      inputs = m.inputs.map((d) => inputView(channel, d));
    } catch (err) {
      refusal ??= Errors.blsInferenceFailed(name, (err as Error).message); // a descriptor outside the region
    }
    if (refusal) {
      answer(errorWire(refusal), true);
      return;
    }
    this.open.set(m.bid, call);
    call.detach = this.followCallers(m.rids, call.token);
    client.infer(
      {
        modelName: name,
        modelVersion: version,
        id: m.id,
        parameters: requestParameters(m),
        inputs,
        outputs: m.outs.length ? m.outs.map((n) => ({ name: n, parameters: {} })) : undefined,
        signal: call.token,
        // Triton traces a BLS call only when the model passes a traced request's trace().
        trace: m.tr === undefined ? undefined : this.callers.traceOf(m.tr)?.child(),
      },
      (r) => this.onResponse(m.bid, name, call, r, answer),
    );
  }

  private onResponse(bid: number, name: string, call: OpenCall, r: InferResponse, answer: (resp: RespWire | null, final: boolean) => void): void {
    if (r.final) {
      this.open.delete(bid);
      call.detach?.();
      call.settle();
    }
    if (call.abandoned) {
      r.release?.();
      return;
    }
    let resp: RespWire | null;
    if (r.error) resp = errorWire(callError(name, r.error));
    else if (r.flagsOnly) resp = null;
    else resp = copyOutputs(call.channel, r);
    r.release?.();
    answer(resp, r.final);
  }

  /** Cancels `token` once every caller request (the batch the call was made from) is cancelled. */
  private followCallers(rids: number[], token: CancelToken): (() => void) | undefined {
    const signals = rids.map((rid) => this.callers.signalOf(rid));
    if (signals.length === 0 || signals.some((s) => s === undefined)) return undefined;
    const live = signals as CancelSignal[];
    const check = () => {
      if (live.every((s) => s.aborted)) token.abort();
    };
    for (const s of live) s.addEventListener('abort', check, { once: true });
    check();
    return () => {
      for (const s of live) s.removeEventListener('abort', check);
    };
  }

  private async modelControl(channel: StubChannel, m: ModelCtlMsg): Promise<void> {
    const reply = (fields: { ready?: boolean; err?: string }) => channel.send({ t: 'model_ctl_r', cid: m.cid, ...fields });
    if (m.op === 'ready') {
      reply({ ready: this.calls.client.isModelReady(m.model, m.ver ?? '') });
      return;
    }
    const control = this.calls.modelControl;
    if (!control) {
      reply({ err: Errors.modelControlOff(m.op, this.instanceName).message });
      return;
    }
    try {
      if (m.op === 'load') {
        const files: Record<string, Buffer> = {};
        for (const [k, v] of Object.entries(m.files ?? {})) files[k] = Buffer.from(v, 'base64');
        await control.load(m.model, { config: m.config ?? '', files });
      } else {
        await control.unload(m.model, { unloadDependents: m.dependents === true });
      }
      reply({});
    } catch (err) {
      reply({ err: Errors.modelControlFailed(m.op, this.instanceName, asTritonError(err).message).message });
    }
  }
}

/** A view of an input block the caller wrote (valid until the call's final answer). */
function inputView(channel: StubChannel, d: TensorDescriptor): Tensor {
  const [name, datatype, shape, seg, off, nbytes] = d;
  return { name, datatype: datatype as Datatype, shape, data: nbytes > 0 ? channel.view(seg, off, nbytes) : Buffer.alloc(0) };
}

/** The request parameters a BLS call carries: the model's own, then its scheduling fields. */
function requestParameters(m: BlsMsg): Parameters {
  const params: Parameters = {};
  if (m.params !== '{}') {
    try {
      Object.assign(params, JSON.parse(m.params) as Parameters);
    } catch {
      /* the stub only sends what params_to_json produced */
    }
  }
  if (Number(m.timeout) > 0) params.timeout = Number(m.timeout);
  if (m.corr !== 0 && m.corr !== '') params.sequence_id = m.corr;
  if (m.flags & 1) params.sequence_start = true;
  if (m.flags & 2) params.sequence_end = true;
  return params;
}

/**
 * Triton's BLS prefixes errors the core raised before the model ran (validation, lookup) with
 * the model name; errors from the model itself and from its queue come back as they are. Every
 * BLS error carries INTERNAL (docs/protocol-notes.md, "BLS calls from a model").
 */
function callError(model: string, e: TritonError): TritonError {
  if (e.reason === 'BACKEND' || e.reason === 'CANCELED' || e.entry === 'timeoutExpired') return e;
  return Errors.blsInferenceFailed(model, e.message);
}

/**
 * The code a BLS error carries is INTERNAL, as tritonserver 2.51 gives every one, except
 * CANCELLED: a target that ends its stream because the caller cancelled it (the iterator's
 * `cancel()`) answers CANCELLED, and Triton's Python backend, since it has `cancel()`, hands the
 * model that code so it can tell a cancelled stream from a failed one (qa decoupled_bls_cancel;
 * docs/protocol-notes.md, "BLS calls from a model").
 */
function errorWire(e: TritonError): RespWire {
  return { outs: [], err: [e.code === ErrorCode.CANCELLED ? ErrorCode.CANCELLED : ErrorCode.INTERNAL, e.message] };
}

/** Copies a response's outputs into the caller's arena: one copy, the target's blocks are released after. */
function copyOutputs(channel: StubChannel, r: InferResponse): RespWire {
  const outs: TensorDescriptor[] = [];
  try {
    for (const t of r.outputs) {
      const n = t.data.length;
      if (n === 0) {
        outs.push([t.name, t.datatype, t.shape, '', 0, 0]);
        continue;
      }
      const { seg, off, view } = channel.allocInput(n);
      t.data.copy(view, 0, 0, n);
      outs.push([t.name, t.datatype, t.shape, seg, off, n]);
    }
  } catch (err) {
    for (const d of outs) if (d[5] > 0) channel.freeInput(d[3], d[4]);
    return errorWire(Errors.batchSendFailed((err as Error).message));
  }
  const wire: RespWire = { outs };
  if (r.parameters && Object.keys(r.parameters).length) {
    wire.params = JSON.stringify(r.parameters, (_k, v) => (typeof v === 'bigint' ? Number(v) : v));
  }
  return wire;
}
