/**
 * @module frontends/threads/core-host
 * The main thread's side of one frontend thread: it answers the thread's calls on the
 * `ServerCore` surface (remote-core.ts is the other side) and runs the requests the thread
 * parsed through the real core, so the schedulers and dynamic batchers see every connection of
 * every thread, as with one loop.
 *
 * Synchronous calls (model lookups, statistics, settings) are answered on a port the thread
 * reads with `receiveMessageOnPort` while it waits on a shared word: the thread blocks for the
 * length of one main-thread turn, as a Triton frontend thread blocks on the server's lock.
 */
import type { MessagePort, Worker } from 'node:worker_threads';
import { CancelToken } from '../../core/cancellation.js';
import { SlotTable } from '../../core/slot-table.js';
import { asTritonError } from '../../core/errors.js';
import type { InferRequest, InferResponse, ResponseListener } from '../../core/inference.js';
import type { LogSettingsStore, LogSettingsView } from '../../core/logger.js';
import type { ModelHandle } from '../../core/model-handle.js';
import type { LoadModelOptions, ServerCore, UnloadModelOptions } from '../../core/server-core.js';
import type { RequestTrace } from '../../core/trace/request-trace.js';
import {
  packTensors,
  shareableOutputs,
  unpackTensors,
  wireError,
  type CallReply,
  type InferMessage,
  type MainMessage,
  type ResponseMessage,
  type ThreadMessage,
} from './wire.js';
import { Inbox } from './inbox.js';
import { Outbox } from './outbox.js';
import { RingReader, RingWriter } from './record-ring.js';
import type { FrontendStatus } from './status.js';
import { writeResponseRecord } from './wire-records.js';
import type { LifecycleMessage, ThreadLink } from './thread-data.js';

/** What a frontend thread's lookup returns: the handle's data; its methods call back. */
export interface HandleSnapshot {
  name: string;
  version: string;
  maxBatchSize: number;
  decoupled: boolean;
  inputs: ModelHandle['inputs'];
  outputs: ModelHandle['outputs'];
  directory: string;
}

export interface HostLogger {
  info(line: string): void;
  warn(line: string): void;
  error(line: string): void;
  verbose(level: number, line: string): void;
}

export interface CoreHostOptions {
  core: ServerCore;
  logSettings: LogSettingsStore;
  logger: HostLogger;
  status: FrontendStatus;
  /** A frontend thread saw descriptors run out (EMFILE/ENFILE on accept). */
  descriptorShortage?: (code: string) => void;
}

/** Serves one frontend thread until it exits. */
export class CoreHost {
  /**
   * Requests of the thread the core has not finished: their cancel tokens, by the thread's
   * increasing request number (a SlotTable: a Map took a rehash every few requests).
   */
  private readonly pending = new SlotTable<CancelToken>();
  private readonly traces = new Map<number, RequestTrace>();
  private nextTrace = 1;
  /** Stub blocks the thread has not given back: copies on their way, lent outputs not yet written (ResponseMessage.hold, .lent). */
  private readonly held = new SlotTable<() => void>();
  private nextHold = 1;
  private gone = false;
  /** The thread said it posted every request it read before it heard of the exit ('quiesced'). */
  private quiesced = false;
  private readonly calls: Record<string, (...args: never[]) => unknown>;
  private readonly outbox: Outbox<MainMessage>;
  private readonly inbox: Inbox<ThreadMessage>;

  constructor(
    worker: Worker,
    private readonly link: ThreadLink,
    /** Where synchronous replies go (the thread reads them with receiveMessageOnPort). */
    private readonly callPort: MessagePort,
    /** The word the thread waits on for a synchronous reply. */
    private readonly callFlag: Int32Array,
    private readonly o: CoreHostOptions,
  ) {
    const core = o.core;
    this.outbox = new Outbox(new RingWriter(link.toThread), link.objects);
    this.inbox = new Inbox(new RingReader(link.toMain), link.objects, {
      infer: (m) => this.infer(m),
      cancel: (no) => this.pending.get(no)?.abort(),
      release: (hold) => {
        const release = this.held.get(hold);
        this.held.delete(hold);
        release?.();
      },
      object: (m) => this.onMessage(m),
    });
    this.inbox.start();
    this.calls = {
      isLive: () => core.isLive(),
      isReady: () => core.isReady(),
      isExiting: () => core.isExiting(),
      serverMetadata: () => core.serverMetadata(),
      resolveModel: (name: string, version: string) => snapshot(core.resolveModel(name, version)),
      modelReady: (name: string, version: string) => core.resolveModel(name, version).isReady(),
      modelMetadata: (name: string, version: string) => core.resolveModel(name, version).metadata(),
      modelConfig: (name: string, version: string) => core.resolveModel(name, version).configJson(),
      statistics: (name?: string, version?: string) => core.statistics(name, version),
      repositoryIndex: (readyOnly: boolean) => core.repositoryIndex(readyOnly),
      shmRegister: (name: string, key: string, offset: number, byteSize: number) => core.systemSharedMemory.register(name, key, offset, byteSize),
      shmUnregister: (name: string) => core.systemSharedMemory.unregister(name),
      shmStatus: (name: string) => core.systemSharedMemory.status(name),
      traceSample: (model: string) => this.sample(model),
      traceEffective: (model: string) => core.tracer.settings.effective(model),
      traceUpdate: (model: string, entries: Array<[string, string[] | null]>) => core.tracer.settings.update(model, entries),
      logGet: () => o.logSettings.get(),
      logUpdate: (patch: Partial<LogSettingsView>) => o.logSettings.update(patch),
    };
    worker.on('message', (m: LifecycleMessage) => {
      if (m.t === 'quiesced') {
        // The thread put everything it read in the ring before it said so: read it first, so
        // those requests count as read before the exit.
        while (this.inbox.drain());
        this.quiesced = true;
      } else if (m.t === 'log') {
        // Verbose lines from a thread are TRITIUM_TRACE lines (level 0: printed whatever --log-verbose is).
        if (m.level === 'verbose') this.o.logger.verbose(0, m.line);
        else this.o.logger[m.level](m.line);
      } else if (m.t === 'descriptors') {
        this.o.descriptorShortage?.(m.code);
      }
    });
  }

  /** The thread exited: its clients are gone, so are their requests. */
  threadGone(): void {
    this.gone = true;
    this.inbox.close();
    this.outbox.close();
    this.link.objects.close();
    for (const cancel of this.pending.drain()) cancel.abort();
    for (const t of this.traces.values()) t.done();
    this.traces.clear();
    for (const release of this.held.drain()) release();
  }

  private onMessage(m: ThreadMessage): void {
    switch (m.t) {
      case 'infer':
        return this.infer(m);
      case 'call':
        return this.call(m.id, m.method, m.args);
      case 'acall':
        this.asyncCall(m.method, m.args).then(
          (value) => this.post({ t: 'adone', id: m.id, value }),
          (err: unknown) => this.post({ t: 'adone', id: m.id, error: wireError(asTritonError(err)) }),
        );
        return;
      case 'trace':
        this.traces.get(m.trace)?.add(m.name, m.ns);
        return;
      case 'trace-done': {
        const t = this.traces.get(m.trace);
        this.traces.delete(m.trace);
        t?.done();
        return;
      }
    }
  }

  private infer(m: InferMessage): void {
    const no = m.no;
    const handed = new HandedRequest(this, no);
    this.pending.set(no, handed);
    const request: InferRequest = {
      modelName: m.modelName,
      modelVersion: m.modelVersion,
      id: m.id,
      parameters: m.parameters,
      inputs: unpackTensors(m.inputs, m.bytes),
      signal: handed,
      // Read before the thread heard of an exit: admitted while the server exits (inference.ts).
      readBeforeExit: !this.quiesced,
    };
    // Set when present rather than spread into the literal (a runtime call per request).
    if (m.outputs !== undefined) request.outputs = m.outputs;
    if (m.traceNo !== undefined) request.traceNo = m.traceNo;
    if (m.trace !== undefined) {
      const trace = this.traces.get(m.trace);
      if (trace !== undefined) request.trace = trace;
    }
    this.o.core.infer(request, handed);
    handed.inCall = false;
  }

  /** @internal A response to request `no` of the thread (HandedRequest.onResponse). */
  answer(no: number, r: InferResponse, inCall: boolean): void {
    if (r.final) this.pending.delete(no);
    if (this.gone) {
      r.release?.();
      return;
    }
    // Large outputs are lent: the thread reads them where the stub wrote them and the blocks
    // go back after its socket write. Others are copied once, here: a final response's blocks
    // go back at once (one per request: the requests in flight bound them); a decoupled
    // model's earlier responses keep theirs until the copy reached the thread, so the stub's
    // arena holds back a model that answers faster than the thread takes its answers
    // (wire.ts, `hold` and `lent`).
    const lend = r.release !== undefined ? shareableOutputs(r.outputs) : undefined;
    let hold: number | undefined;
    if (r.release !== undefined && (lend !== undefined || !r.final)) {
      hold = this.nextHold++;
      this.held.set(hold, r.release);
    }
    if (lend === undefined && this.outbox.record(writeResponseRecord, no, r, { beforeModel: inCall, hold })) {
      if (hold === undefined) r.release?.();
      return;
    }
    const packed = lend === undefined ? packTensors(r.outputs) : undefined;
    if (hold === undefined) r.release?.();
    const msg: ResponseMessage = {
      t: 'resp',
      no,
      modelName: r.modelName,
      modelVersion: r.modelVersion,
      id: r.id,
      outputs: lend?.wire ?? packed!.wire,
      bytes: packed?.bytes,
      final: r.final,
      ...(r.parameters !== undefined ? { parameters: r.parameters } : {}),
      ...(r.error !== undefined ? { error: wireError(r.error) } : {}),
      ...(r.flagsOnly ? { flagsOnly: true } : {}),
      ...(inCall ? { beforeModel: true } : {}),
      ...(hold !== undefined ? (lend !== undefined ? { lent: hold, shared: lend.shared } : { hold }) : {}),
    };
    this.outbox.post(msg, packed?.bytes);
  }

  /** Answers synchronous call `id`: the reply on the call port, then the id in the call flag. */
  private call(id: number, method: string, args: unknown[]): void {
    let reply: CallReply;
    try {
      const fn = this.calls[method];
      if (fn === undefined) throw new Error(`no such call: ${method}`);
      reply = { id, value: (fn as (...a: unknown[]) => unknown)(...args) };
    } catch (err) {
      reply = { id, error: wireError(asTritonError(err)) };
    }
    if (this.gone) return;
    this.callPort.postMessage(reply);
    Atomics.store(this.callFlag, 0, id);
    Atomics.notify(this.callFlag, 0);
  }

  private asyncCall(method: string, args: unknown[]): Promise<unknown> {
    const core = this.o.core;
    switch (method) {
      case 'checkReady':
        return core.checkReady();
      case 'checkModelReady':
        return core.checkModelReady(args[0] as string, args[1] as string);
      case 'loadModel':
        return core.loadModel(args[0] as string, reviveLoadOptions(args[1] as LoadModelOptions | undefined));
      case 'unloadModel':
        return core.unloadModel(args[0] as string, args[1] as UnloadModelOptions | undefined);
      default:
        return Promise.reject(new Error(`no such call: ${method}`));
    }
  }

  /** Samples on the main thread (the counts are the server's); the thread gets the trace's number. */
  private sample(model: string): number | undefined {
    const trace = this.o.core.tracer.sample(model);
    if (trace === undefined) return undefined;
    const id = this.nextTrace++;
    this.traces.set(id, trace);
    return id;
  }

  private post(m: { t: 'adone'; id: number; value?: unknown; error?: ReturnType<typeof wireError> }): void {
    if (!this.gone) this.outbox.post(m);
  }
}

function snapshot(h: ModelHandle): HandleSnapshot {
  return {
    name: h.name,
    version: h.version,
    maxBatchSize: h.maxBatchSize,
    decoupled: h.decoupled,
    inputs: h.inputs,
    outputs: h.outputs,
    directory: h.directory,
  };
}

/** File contents cross threads as Uint8Array; the model loader reads Buffers. */
function reviveLoadOptions(o: LoadModelOptions | undefined): LoadModelOptions | undefined {
  if (o?.files === undefined) return o;
  const files: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries(o.files)) {
    const u = v as Uint8Array;
    files[k] = Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  }
  return { ...o, files };
}

/**
 * The main thread's side of one request a thread handed over: its cancel signal (aborted when
 * the thread says its client went) and the core's response listener, which sends each answer
 * back to the thread. One object per request where a token, a closure and its scope were made:
 * this loop is the one a many-core host waits on.
 */
class HandedRequest extends CancelToken implements ResponseListener {
  /** Still inside `core.infer`: an answer now came before any model (InferResponse.beforeModel). */
  inCall = true;

  constructor(
    private readonly host: CoreHost,
    private readonly no: number,
  ) {
    super();
  }

  onResponse(r: InferResponse): void {
    this.host.answer(this.no, r, this.inCall);
  }
}
