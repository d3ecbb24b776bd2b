/**
 * @module backends/python/stub-session
 * The requests of one running stub (one incarnation of an instance): turns scheduled batches
 * into `exec` messages with their inputs in the channel's arenas, keeps each request open until
 * its final response, and delivers what comes back — responses returned by `execute` (in
 * `exec_done`) and those sent through a response sender (`send`) — freeing every block once it
 * is finished with. When the stub dies, `fail` ends everything at once.
 *
 * A session lives and dies with its stub: a restarted instance gets a new session with a new
 * channel, so nothing of a dead region is ever read.
 */
import type { CancelSignal } from '../../core/cancellation.js';
import { Errors, type TritonError } from '../../core/errors.js';
import { hasNoParameters, NO_PARAMETERS, readParameters, type SchedulingParameters } from '../../core/request/parameters.js';
import type { ExecutionListener, PendingRequest } from '../../core/scheduling/types.js';
import type { Tensor } from '../../core/tensor.js';
import type { RequestTrace } from '../../core/trace/request-trace.js';
import { freeRequestInputs, outputBlocks, readOutput, requestInputBlocks, writeRequestInputs, type Block, type TensorDescriptor } from './tensor-codec.js';
import type { StubChannel } from './ipc/channel.js';
import type { ExecDoneMsg, ExecRequestWire, OutputDescriptor, RespWire, SendMsg } from './ipc/messages.js';
import { traceLine, traceTags, traced } from '../../core/trace-tags.js';
import { SlotTable } from '../../core/slot-table.js';

/**
 * Batches handed to a stub before the one it runs is answered (see ExecutionInstance
 * .pipelineDepth), so that under load the stub finds its next request in ring A the moment it
 * answers and neither side sleeps in between. The pool goes beyond two only while executions
 * are short (InstancePool, SHORT_EXECUTION_NS): with two, a stub whose executions take
 * microseconds still found its ring empty and slept at most requests under load, as Node, busy
 * with its connections, handed the next batch over too late (docs/design.md, "Pipelining").
 */
export const PIPELINE_DEPTH = 4;

/** An open request of the session, from `exec` until its final response (or the stub's end). */
class LiveRequest {
  /** Non-decoupled: a response sent through the sender without FINAL, waiting for FINAL. */
  held: RespWire | undefined = undefined;
  /** The request's signal while this listens to it (handleEvent), until release. */
  signal: CancelSignal | undefined = undefined;

  constructor(
    readonly rid: number,
    readonly pr: PendingRequest,
    /**
     * The request's block: its cancel flag's [segment, offset] (the wire's `cflag`), followed by
     * its inputs but large ones, freed when the request is finished with.
     */
    readonly cflag: Block,
    /** Its input descriptors: a large input's block (tensor-codec's freeRequestInputs) is its own. */
    readonly inputs: readonly TensorDescriptor[],
    private readonly session: StubSession,
  ) {}

  /**
   * The request was cancelled: the stub sees its flag set (`is_cancelled()`). The record itself
   * listens to the signal rather than a closure made per request (UnaryCall.canceller in the
   * gRPC transport tells what such closures cost).
   */
  handleEvent(): void {
    this.session.cancelFlagged(this);
  }
}

interface Batch {
  id: number;
  rids: number[];
  requests: PendingRequest[];
  startNs: bigint;
  inputEndNs: bigint;
  /** Sent while another batch ran: it starts when that one is answered. */
  queued: boolean;
  done: ExecutionListener;
}

export interface StubSessionOptions {
  instanceName: string;
  decoupled: boolean;
}

export class StubSession {
  /** The open requests by rid (see SlotTable: not a Map, for the scavenger's sake). */
  private readonly live = new SlotTable<LiveRequest>();
  /** Sent to the stub and not answered yet, in the order the stub runs them. */
  private readonly inFlight: Batch[] = [];
  private nextRid = 1;
  private nextBatch = 1;
  /** The stub is gone: its region's blocks died with it. */
  private closed = false;

  constructor(
    private readonly channel: StubChannel,
    private readonly o: StubSessionOptions,
  ) {}

  /** Sends one batch; tells `done` when the stub answered it (see ExecutionInstance.run). */
  run(batch: PendingRequest[], done: ExecutionListener): void {
    const startNs = process.hrtime.bigint();
    const channel = this.channel;
    const n = batch.length;
    const reqs: ExecRequestWire[] = new Array(n);
    const rids: number[] = new Array(n);
    let sent = 0;
    try {
      for (let k = 0; k < n; k++) {
        const pr = batch[k]!;
        const request = pr.request;
        const rid = this.nextRid++;
        // The flag and the inputs (but large ones) share one block, freed with the request (release).
        const cflag = ['', 0] as Block;
        const inputs = writeRequestInputs(channel, request.inputs, pr.cancelled ? FLAG_SET : FLAG_CLEAR, cflag);
        const live = new LiveRequest(rid, pr, cflag, inputs, this);
        this.live.set(rid, live);
        rids[k] = rid;
        sent = k + 1;
        const signal = request.signal;
        if (signal && !signal.aborted) {
          // The block is freed only after this listener is removed (release), so the flag
          // written is always this request's.
          signal.addEventListener('abort', live, ONCE);
          live.signal = signal;
        }
        // One shape for every request's wire, the parameters' fields set in place: a spread
        // of them went through V8's runtime (DefineKeyedOwnPropertyInLiteral, a map
        // migration) for every request that carried any parameter.
        const wire: ExecRequestWire = {
          rid,
          id: request.id,
          corr: 0,
          flags: 0,
          params: '{}',
          timeout: pr.timeoutUs,
          outs: requestedOutputs(pr),
          inputs,
          cflag,
        };
        // Read when the model version accepted the request; again here only for requests the
        // core made itself (warmup samples, sequence fillers).
        const params = pr.parameters ?? readParameters(request.parameters);
        if (pr.sequence !== undefined || params !== NO_PARAMETERS) setRequestFields(wire, pr, params);
        if (request.trace !== undefined) wire.tr = 1;
        reqs[k] = wire;
      }
    } catch (err) {
      // Shared memory exhausted: only this batch fails, with the reason.
      const e = Errors.batchSendFailed((err as Error).message);
      if (traceTags.ipc) traceLine('ipc', `${this.o.instanceName}: batch not sent: ${e.message}`);
      for (let k = 0; k < sent; k++) this.finish(rids[k]!, undefined, e);
      // The request whose block could not be had, and those after it, never became live.
      for (let k = sent; k < n; k++) {
        const pr = batch[k]!;
        if (!pr.done) pr.fail(e);
      }
      const t = process.hrtime.bigint();
      queueMicrotask(() => done.executed({ startNs, inputEndNs: t, inferEndNs: t, endNs: t }));
      return;
    }
    const id = this.nextBatch++;
    if (traceTags.ipc) {
      const which = batch.map((pr, k) => `rid ${rids[k]} = ${traced(pr.request)}${pr.cancelled ? ' (cancelled)' : ''}`).join(', ');
      traceLine(
        'ipc',
        `${this.o.instanceName}: sent batch ${id} to the stub${this.inFlight.length > 0 ? ` behind ${this.inFlight.length} batch(es)` : ''}: ${which}`,
      );
    }
    const inputEndNs = process.hrtime.bigint();
    this.inFlight.push({ id, rids, requests: batch, startNs, inputEndNs, queued: this.inFlight.length > 0, done });
    channel.send({ t: 'exec', id, reqs });
  }

  /** `exec_done`: the batch at the head of the pipeline was answered. */
  execDone(m: ExecDoneMsg): void {
    const batch = this.inFlight[0];
    if (traceTags.ipc) {
      const returned = m.resps?.filter((r) => r !== null).length ?? 0;
      const known = batch?.id === m.id ? '' : ` (not the batch in front, ${batch?.id ?? 'none'}: ignored)`;
      traceLine(
        'ipc',
        `${this.o.instanceName}: exec_done of batch ${m.id}: ${returned} response(s) returned${m.err !== undefined ? `, execute raised: ${m.err}` : ''}${m.ns !== undefined ? ` (${Math.round(m.ns / 1000)} µs in the stub)` : ''}${known}`,
      );
    }
    if (!batch || batch.id !== m.id) return;
    this.inFlight.shift();
    const inferEndNs = process.hrtime.bigint();
    const next = this.inFlight[0];
    if (next?.queued) {
      // It waited in ring A behind this one: that wait is queue time, and its execution
      // starts now (its inputs were copied when it was sent).
      next.startNs = next.inputEndNs = inferEndNs;
      for (const pr of next.requests) pr.queueEndNs = inferEndNs;
    }
    const batchError = m.err !== undefined ? Errors.executeFailed(m.err) : undefined;
    const rescheduled = m.resched !== undefined && m.resched.length > 0 && batchError === undefined ? new Set(m.resched) : undefined;
    // Before the instance frees: an iterative sequence's request goes back to its slot, so the
    // scheduler sees it re-queued when it hears the execution is over.
    if (rescheduled !== undefined) for (const i of rescheduled) batch.requests[i]?.reschedule?.();
    // The instance is free as soon as the stub answered: tell the scheduler first, so it sends
    // the next batch to the stub, and write this batch's responses to the clients afterwards,
    // while the stub already works. Both now, in this message's dispatch: a promise and a
    // microtask per batch used to sit between them (about 1 % of the server's samples).
    try {
      batch.done.executed({ startNs: batch.startNs, inputEndNs: batch.inputEndNs, inferEndNs, endNs: process.hrtime.bigint(), ownNs: m.ns });
    } finally {
      // Whatever the scheduler's side did, the clients get their answers.
      this.settle(batch.rids, m.resps, batchError, rescheduled);
    }
  }

  /**
   * Answers the requests of a finished batch from its `exec_done`. A request without a
   * returned response stays open: its response sender may still answer after execute
   * returned, from another thread (as in Triton). It ends with a sender FINAL, the stub's
   * notice that the model dropped it (`send` with FINAL, see RequestSlot.__del__), or the
   * instance stopping (fail) — never by waiting here.
   */
  private settle(rids: number[], resps: Array<RespWire | null> | undefined, batchError: TritonError | undefined, rescheduled: Set<number> | undefined): void {
    if (this.closed) return;
    for (let i = 0; i < rids.length; i++) {
      const rid = rids[i]!;
      const live = this.live.get(rid);
      if (!live) continue;
      if (batchError) {
        // A non-decoupled response already sent through the sender stays the answer (Triton
        // hands it to the client before the batch fails); the model saw the error raised.
        if (!this.o.decoupled && live.held !== undefined) this.finish(rid, live.held);
        else this.finish(rid, undefined, batchError);
        continue;
      }
      const resp = resps?.[i] ?? null;
      if (rescheduled?.has(i) === true) {
        // Re-queued by its iterative sequence (execDone): this execution's rid is over, the
        // request is not. Without iterative sequence batching the request fails and says why
        // (Triton's Python backend logs it and the client waits for ever).
        if (live.pr.reschedule !== undefined) this.release(rid);
        else this.finish(rid, undefined, Errors.rescheduleUnsupported());
      } else if (resp) {
        this.finish(rid, resp);
      } else if (!this.o.decoupled && live.pr.done) {
        this.release(rid);
      }
    }
  }

  /** `send`: a response (or a bare FINAL) from a request's response sender. */
  sent(m: SendMsg): void {
    const live = this.live.get(m.rid);
    if (traceTags.ipc) {
      const who = live === undefined ? 'no longer open: dropped' : traced(live.pr.request);
      traceLine(
        'ipc',
        `${this.o.instanceName}: send from the response sender of rid ${m.rid} (${who}): ${m.resp ? 'a response' : 'no response'}, final=${(m.flags & 1) === 1}${m.resp?.err ? `, error: ${m.resp.err[1]}` : ''}`,
      );
    }
    if (!live) {
      if (m.resp?.outs) this.channel.releaseOutputs(outputBlocks(m.resp.outs));
      return;
    }
    const final = (m.flags & 1) === 1;
    if (!this.o.decoupled) {
      // Non-decoupled: one response, delivered once FINAL arrives (possibly in the same send).
      if (m.resp) live.held = m.resp;
      if (final) this.finish(m.rid, live.held ?? {}, undefined);
      return;
    }
    if (m.resp) this.deliver(live, m.resp, final);
    else if (final) this.deliver(live, {}, true, true);
    if (final) this.release(m.rid);
  }

  /** @internal `live`'s request was cancelled (LiveRequest.handleEvent): its flag is set for the stub. */
  cancelFlagged(live: LiveRequest): void {
    if (this.live.get(live.rid) !== live) return;
    this.channel.writeInputU32(live.cflag, 1);
    if (traceTags.ipc) this.trace(live, 'cancelled: cancel flag set for the stub');
  }

  /** The trace of open request `rid`, if it is traced (BLS calls made with its `trace()`). */
  traceOf(rid: number): RequestTrace | undefined {
    return this.live.get(rid)?.pr.request.trace;
  }

  /** The cancel signal of open request `rid` (BLS calls made from its batch follow it). */
  signalOf(rid: number): CancelSignal | undefined {
    return this.live.get(rid)?.pr.request.signal;
  }

  /**
   * The stub is gone: every open request fails now with `error` (not at a client timeout),
   * every batch in flight is answered, and nothing of the region is touched afterwards.
   */
  fail(error: TritonError): void {
    if (traceTags.ipc) {
      traceLine(
        'ipc',
        `${this.o.instanceName}: stub gone: failing ${this.live.keys().length} open request(s) and ${this.inFlight.length} batch(es) in flight: ${error.message}`,
      );
    }
    for (const rid of this.live.keys()) this.finish(rid, undefined, error);
    const t = process.hrtime.bigint();
    const batches = this.inFlight.splice(0);
    this.closed = true;
    // After the caller has marked the instance down (StubInstance.onExit): a scheduler told now
    // would hand its next batch to this dead session.
    if (batches.length > 0)
      queueMicrotask(() => {
        for (const b of batches) b.done.executed({ startNs: b.startNs, inputEndNs: b.inputEndNs, inferEndNs: t, endNs: t });
      });
  }

  /** Sends one response to the request; the final one frees its blocks. */
  private finish(rid: number, resp: RespWire | undefined, error?: TritonError): void {
    const live = this.live.get(rid);
    if (!live) return;
    if (error) {
      if (traceTags.ipc) this.trace(live, `failed: ${error.message}`);
      live.pr.fail(error);
    } else this.deliver(live, resp ?? {}, true);
    this.release(rid);
  }

  private deliver(live: LiveRequest, resp: RespWire, final: boolean, flagsOnly = false): void {
    const pr = live.pr;
    const channel = this.channel;
    if (traceTags.ipc) {
      const what = flagsOnly ? 'final flag alone' : `${resp.outs?.length ?? 0} output(s)`;
      this.trace(live, `answered: ${what}, final=${final}${resp.err ? `, error: ${resp.err[1]}` : ''}`);
    }
    if (resp.err) {
      const [code, msg] = resp.err;
      if (resp.outs?.length) channel.releaseOutputs(outputBlocks(resp.outs));
      pr.respond({
        modelName: pr.request.modelName,
        modelVersion: '',
        id: pr.request.id,
        outputs: [],
        error: Errors.modelRaised(code, msg),
        final,
      });
      return;
    }
    const outs = resp.outs ?? NO_OUTPUTS;
    const blocks: Block[] = [];
    const outputs: Tensor[] = new Array(outs.length);
    for (let i = 0; i < outs.length; i++) outputs[i] = readOutput(channel, outs[i]!, blocks);
    pr.respond({
      modelName: pr.request.modelName,
      modelVersion: (pr as { version?: string }).version ?? '',
      id: pr.request.id,
      parameters: resp.params ? parseParams(resp.params) : undefined,
      outputs,
      final,
      flagsOnly: flagsOnly || undefined,
      // Outputs inside the answer (the usual small ones) hold no block: nothing to release, and
      // no closure made for it.
      release: blocks.length === 0 ? NOTHING_TO_RELEASE : this.releaser(blocks),
    });
  }

  /** Gives `blocks` back to the stub once, when the response's consumer is done with them. */
  private releaser(blocks: Block[]): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // After a restart the old region is gone; its blocks died with it.
      if (!this.closed) this.channel.releaseOutputs(blocks);
    };
  }

  /** One `ipc` debug trace line about open request `live`. */
  private trace(live: LiveRequest, what: string): void {
    traceLine('ipc', `${this.o.instanceName}: rid ${live.rid} (${traced(live.pr.request)}) ${what}`);
  }

  private release(rid: number): void {
    const live = this.live.get(rid);
    if (!live) return;
    if (traceTags.ipc) {
      const freed = this.closed ? 'its region is gone' : `${requestInputBlocks(live.inputs)} input block(s) freed`;
      this.trace(live, `released: ${freed}`);
    }
    this.live.delete(rid);
    if (live.signal !== undefined) live.signal.removeEventListener('abort', live);
    if (!this.closed) freeRequestInputs(this.channel, live.cflag, live.inputs);
  }
}

/** Sets the fields of `wire` derived from request parameters (sequence, custom). */
function setRequestFields(wire: ExecRequestWire, pr: PendingRequest, p: Readonly<SchedulingParameters>): void {
  if (!hasNoParameters(p.custom)) wire.params = JSON.stringify(p.custom, (_k, v) => (typeof v === 'bigint' ? Number(v) : v));
  // The sequence batcher's view wins: a rescheduled iteration has no flags, a filler no id.
  const seq = pr.sequence;
  const id = seq !== undefined ? seq.id : p.sequenceId;
  wire.corr = typeof id === 'bigint' ? (id <= MAX_SAFE_BIGINT ? Number(id) : id) : id;
  wire.flags = seq !== undefined ? seq.flags : (p.sequenceStart ? 1 : 0) | (p.sequenceEnd ? 2 : 0);
}

const NO_OUTPUTS: readonly OutputDescriptor[] = [];
const MAX_SAFE_BIGINT = BigInt(Number.MAX_SAFE_INTEGER);
/** The cancel flag's initial words (u32 little-endian). */
const FLAG_CLEAR = Buffer.from([0, 0, 0, 0]);
const FLAG_SET = Buffer.from([1, 0, 0, 0]);
/** addEventListener's options, one object for every request. */
const ONCE = { once: true } as const;

const NOTHING_TO_RELEASE = (): void => {};

function requestedOutputs(pr: PendingRequest): string[] | null {
  const outputs = pr.request.outputs;
  if (!outputs) return null;
  // A loop, not map(): map's callback, a new closure per request, went through V8's lazy
  // compilation stub on every first call.
  const names = new Array<string>(outputs.length);
  for (let i = 0; i < outputs.length; i++) names[i] = outputs[i]!.name;
  return names;
}

function parseParams(json: string): Record<string, string | number | boolean> | undefined {
  try {
    const v = JSON.parse(json) as Record<string, string | number | boolean>;
    return Object.keys(v).length ? v : undefined;
  } catch {
    return undefined;
  }
}
