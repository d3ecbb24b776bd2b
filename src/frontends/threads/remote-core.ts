/**
 * @module frontends/threads/remote-core
 * The `ServerCore` a frontend thread's HTTP or gRPC server talks to: the same surface, answered
 * by the main thread (core-host.ts). Inference requests go over as messages, their tensors
 * packed in one transferred buffer (wire.ts); the main thread's core validates, schedules and
 * batches them with every other thread's. Lookups and settings are synchronous calls; a
 * model lookup is cached until the status words say a model loaded or unloaded, so the request
 * path asks nothing.
 */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { Errors, type TritonError } from '../../core/errors.js';
import type { SystemSharedMemory, SystemRegionStatus } from '../../core/extensions/shared-memory.js';
import type { TraceSettingsStore } from '../../core/extensions/trace-settings.js';
import { deliverTo, type InferRequest, type ResponseSink } from '../../core/inference.js';
import type { LogSettingsStore, LogSettingsView } from '../../core/logger.js';
import type { ModelHandle, ModelMetadata } from '../../core/model-handle.js';
import type { LoadModelOptions, RepositoryIndexEntry, ServerCore, ServerMetadata, UnloadModelOptions } from '../../core/server-core.js';
import type { ModelStatistics } from '../../core/stats/types.js';
import type { RequestTrace } from '../../core/trace/request-trace.js';
import type { Tracer } from '../../core/trace/tracer.js';
import { SlotTable } from '../../core/slot-table.js';
import type { HandleSnapshot } from './core-host.js';
import type { FrontendStatus } from './status.js';
import type { ThreadLink } from './thread-data.js';
import {
  packTensors,
  unpackTensors,
  type CallReply,
  type InferMessage,
  type MainMessage,
  type ResponseMessage,
  type ThreadMessage,
  type WireError,
} from './wire.js';
import { Inbox } from './inbox.js';
import { Outbox } from './outbox.js';
import { RingReader, RingWriter } from './record-ring.js';
import { writeInferRecord } from './wire-records.js';

/** How long a synchronous call waits for the main thread before it fails. */
export const CALL_TIMEOUT_S = 30;

export class RemoteCore implements ServerCore {
  readonly systemSharedMemory: SystemSharedMemory;
  readonly tracer: Tracer;
  readonly logSettings: LogSettingsStore;
  /**
   * The sinks of requests in flight, by request number: a SlotTable, as on the main thread
   * (core-host.ts), since a Map with a set and a delete per request kept its promoted hash
   * tables, and the sinks in them, alive through scavenges.
   */
  private readonly sinks = new SlotTable<ResponseSink>();
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly handles = new Map<string, ModelHandle>();
  private handlesGeneration = -1;
  private nextNo = 1;
  private nextCall = 1;
  /** The id of the last synchronous call (in the call flag once answered; never 0, the flag's start). */
  private lastSyncCall = 0;
  private readonly outbox: Outbox<ThreadMessage>;
  private readonly inbox: Inbox<MainMessage>;

  constructor(
    link: ThreadLink,
    private readonly callPort: MessagePort,
    private readonly callFlag: Int32Array,
    private readonly status: FrontendStatus,
  ) {
    this.outbox = new Outbox(new RingWriter(link.toMain), link.objects);
    this.inbox = new Inbox(new RingReader(link.toThread), link.objects, { resp: this.deliver, object: (m) => this.onMessage(m) });
    this.inbox.start();
    const call = this.call.bind(this);
    this.systemSharedMemory = {
      register: (name: string, key: string, offset: number, byteSize: number) => void call('shmRegister', name, key, offset, byteSize),
      unregister: (name: string) => void call('shmUnregister', name),
      status: (name: string) => call('shmStatus', name) as SystemRegionStatus[],
    } as unknown as SystemSharedMemory;
    const settings = {
      get enabled() {
        return status.tracing;
      },
      effective: (model: string) => call('traceEffective', model),
      update: (model: string, entries: ReadonlyArray<[string, readonly string[] | null]>) => void call('traceUpdate', model, entries),
    } as unknown as TraceSettingsStore;
    this.tracer = {
      settings,
      sample: (model: string): RequestTrace | undefined => {
        if (!status.tracing) return undefined;
        const id = call('traceSample', model) as number | undefined;
        return id === undefined ? undefined : (new RemoteTrace(id, this.outbox) as unknown as RequestTrace);
      },
    } as unknown as Tracer;
    this.logSettings = {
      get: () => call('logGet') as LogSettingsView,
      update: (patch: Partial<LogSettingsView>) => void call('logUpdate', patch),
    };
  }

  /** An object from the main thread (responses records do not carry, async call results). */
  private onMessage(m: MainMessage): void {
    if (m.t === 'resp') {
      this.deliver(m);
    } else if (m.t === 'adone') {
      const w = this.waiting.get(m.id);
      if (w === undefined) return;
      this.waiting.delete(m.id);
      if (m.error !== undefined) w.reject(carried(m.error));
      else w.resolve(m.value);
    }
  }

  /** One response, to the sink of its request. */
  private readonly deliver = (m: ResponseMessage): void => {
    const sink = this.sinks.get(m.no);
    if (sink === undefined) return;
    if (m.final) this.sinks.delete(m.no);
    // Its copy is here: the stub's blocks behind it may go back (wire.ts, `hold`).
    if (m.hold !== undefined) this.outbox.release(m.hold);
    deliverTo(sink, {
      modelName: m.modelName,
      modelVersion: m.modelVersion,
      id: m.id,
      outputs: unpackTensors(m.outputs, m.bytes, m.shared),
      final: m.final,
      ...(m.parameters !== undefined ? { parameters: m.parameters } : {}),
      ...(m.error !== undefined ? { error: carried(m.error) } : {}),
      ...(m.flagsOnly ? { flagsOnly: true } : {}),
      ...(m.beforeModel ? { beforeModel: true } : {}),
      ...(m.lent !== undefined ? { release: this.giveBack(m.lent) } : {}),
    });
  };

  /** A lent response's release(): tells the main thread once, after the frontend's write. */
  private giveBack(hold: number): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.outbox.release(hold);
    };
  }

  isLive(): boolean {
    return this.call('isLive') as boolean;
  }

  isReady(): boolean {
    return this.call('isReady') as boolean;
  }

  checkReady(): Promise<boolean> {
    return this.asyncCall('checkReady') as Promise<boolean>;
  }

  checkModelReady(name: string, version: string): Promise<boolean> {
    return this.asyncCall('checkModelReady', name, version) as Promise<boolean>;
  }

  isExiting(): boolean {
    return this.call('isExiting') as boolean;
  }

  serverMetadata(): ServerMetadata {
    return this.call('serverMetadata') as ServerMetadata;
  }

  resolveModel(name: string, version: string): ModelHandle {
    const generation = this.status.modelsGeneration;
    if (generation !== this.handlesGeneration) {
      this.handles.clear();
      this.handlesGeneration = generation;
    }
    const key = `${name}\0${version}`;
    let h = this.handles.get(key);
    if (h === undefined) {
      // A lookup that fails (unknown, not ready) is not cached: its error comes from the core each time.
      h = new RemoteHandle(this.call('resolveModel', name, version) as HandleSnapshot, this.call.bind(this));
      this.handles.set(key, h);
    }
    return h;
  }

  infer(request: InferRequest, sink: ResponseSink): void {
    const no = this.nextNo++;
    this.sinks.set(no, sink);
    const trace = request.trace !== undefined ? (request.trace as unknown as RemoteTrace).id : undefined;
    if (!this.outbox.record(writeInferRecord, no, request, trace)) {
      const { wire, bytes } = packTensors(request.inputs);
      const msg: InferMessage = {
        t: 'infer',
        no,
        modelName: request.modelName,
        modelVersion: request.modelVersion,
        id: request.id,
        parameters: request.parameters,
        inputs: wire,
        bytes,
        ...(request.outputs !== undefined ? { outputs: request.outputs } : {}),
        ...(trace !== undefined ? { trace } : {}),
        ...(request.traceNo !== undefined ? { traceNo: request.traceNo } : {}),
      };
      this.outbox.post(msg, bytes);
    }
    const signal = request.signal;
    if (signal !== undefined) {
      const cancel = (): void => {
        if (this.sinks.get(no) !== undefined) this.outbox.cancel(no);
      };
      if (signal.aborted) cancel();
      else signal.addEventListener('abort', cancel, { once: true });
    }
  }

  statistics(name?: string, version?: string): ModelStatistics[] {
    return this.call('statistics', name, version) as ModelStatistics[];
  }

  repositoryIndex(readyOnly: boolean): RepositoryIndexEntry[] {
    return this.call('repositoryIndex', readyOnly) as RepositoryIndexEntry[];
  }

  async loadModel(name: string, options?: LoadModelOptions): Promise<void> {
    await this.asyncCall('loadModel', name, options);
  }

  async unloadModel(name: string, options?: UnloadModelOptions): Promise<void> {
    await this.asyncCall('unloadModel', name, options);
  }

  /**
   * Puts what this turn queued for the main thread in the ring now (before a message that must
   * follow it); blocks while the ring is full. False when the main thread made no room in time.
   */
  flush(): boolean {
    return this.outbox.flushBlocking(CALL_TIMEOUT_S * 1000);
  }

  private post(m: ThreadMessage): void {
    this.outbox.post(m);
  }

  /**
   * Asks the main thread and waits for its answer (it answers between two of its own turns).
   * The main thread puts the id of the call it answered in the call flag; replies of earlier
   * calls that timed out here are still queued before this one's, and are skipped.
   */
  private call(method: string, ...args: unknown[]): unknown {
    const id = (this.lastSyncCall = (this.lastSyncCall % 0x7fffffff) + 1);
    // Whatever this turn queued goes first, so the main thread sees events in order.
    this.outbox.post({ t: 'call', id, method, args });
    if (!this.outbox.flushBlocking(CALL_TIMEOUT_S * 1000)) throw Errors.mainThreadUnresponsive(method, CALL_TIMEOUT_S);
    const deadline = performance.now() + CALL_TIMEOUT_S * 1000;
    for (;;) {
      const answered = Atomics.load(this.callFlag, 0);
      if (answered === id) break;
      const left = deadline - performance.now();
      if (left <= 0 || Atomics.wait(this.callFlag, 0, answered, left) === 'timed-out') throw Errors.mainThreadUnresponsive(method, CALL_TIMEOUT_S);
    }
    let reply: CallReply | undefined;
    do reply = receiveMessageOnPort(this.callPort)?.message as CallReply | undefined;
    while (reply !== undefined && reply.id !== id);
    if (reply === undefined) throw Errors.mainThreadUnresponsive(method, CALL_TIMEOUT_S);
    if (reply.error !== undefined) throw carried(reply.error);
    return reply.value;
  }

  private asyncCall(method: string, ...args: unknown[]): Promise<unknown> {
    const id = this.nextCall++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.post({ t: 'acall', id, method, args });
    });
  }
}

/** A model version as the main thread described it; what may change is asked again. */
class RemoteHandle implements ModelHandle {
  readonly name: string;
  readonly version: string;
  readonly maxBatchSize: number;
  readonly decoupled: boolean;
  readonly inputs: ModelHandle['inputs'];
  readonly outputs: ModelHandle['outputs'];
  readonly directory: string;

  constructor(
    s: HandleSnapshot,
    private readonly call: (method: string, ...args: unknown[]) => unknown,
  ) {
    this.name = s.name;
    this.version = s.version;
    this.maxBatchSize = s.maxBatchSize;
    this.decoupled = s.decoupled;
    this.inputs = s.inputs;
    this.outputs = s.outputs;
    this.directory = s.directory;
  }

  metadata(): ModelMetadata {
    return this.call('modelMetadata', this.name, this.version) as ModelMetadata;
  }

  configJson(): Record<string, unknown> {
    return this.call('modelConfig', this.name, this.version) as Record<string, unknown>;
  }

  isReady(): boolean {
    try {
      return this.call('modelReady', this.name, this.version) as boolean;
    } catch {
      return false;
    }
  }
}

/** A trace sampled on the main thread; the frontend's events are sent there. */
class RemoteTrace {
  constructor(
    readonly id: number,
    private readonly outbox: Outbox<ThreadMessage>,
  ) {}

  add(name: string, ns: bigint = process.hrtime.bigint()): void {
    this.outbox.post({ t: 'trace', trace: this.id, name, ns });
  }

  done(): void {
    this.outbox.post({ t: 'trace-done', trace: this.id });
  }
}

function carried(e: WireError): TritonError {
  return Errors.fromMainThread(e);
}
