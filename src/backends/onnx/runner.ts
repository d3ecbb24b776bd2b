/**
 * @module backends/onnx/runner
 * Where a session runs. onnxruntime-node's `run` executes synchronously on the calling thread,
 * so a session on the main thread stalls every frontend (and every Python model's IPC) for the
 * length of each inference, and several instances of a model could never run at once. By
 * default each instance therefore owns its session in a worker thread: inputs are copied once
 * into buffers that move to the worker, outputs move back without a copy. The main-thread
 * runner (`runIn: 'main'`) saves the ~30 µs message round trip for tiny models and tools.
 */
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { InferenceSession } from 'onnxruntime-node';
import { ortEntry } from './ort-location.js';
import { transferables, type WireTensor } from './tensor-convert.js';
import { WORKER_SOURCE } from './worker-source.js';

export type RunIn = 'worker' | 'main';

/** One graph input or output as the session reports it; dynamic dimensions are -1. */
export interface TensorMeta {
  name: string;
  isTensor: boolean;
  /** ORT element type string (`float32`, `string`, ...); undefined for non-tensor values. */
  type: string | undefined;
  shape: number[];
}

export interface SessionInfo {
  inputs: TensorMeta[];
  outputs: TensorMeta[];
}

export interface SessionSpec {
  modelPath: string;
  options: InferenceSession.SessionOptions;
}

export interface SessionRunner {
  readonly info: SessionInfo;
  /** Runs the session once; rejects with onnxruntime's message. */
  run(feeds: Record<string, WireTensor>, fetches: string[]): Promise<Record<string, WireTensor>>;
  /** Releases the session (and ends the worker). */
  close(): Promise<void>;
  /** Called at most once when the runner dies by itself (a worker that exited or threw). */
  onDeath: ((err: Error) => void) | undefined;
}

type OrtModule = typeof import('onnxruntime-node');
let ortModule: Promise<OrtModule> | undefined;

/** onnxruntime-node, loaded on first use so servers without ONNX models never load it. */
export function loadOrt(): Promise<OrtModule> {
  ortModule ??= import(pathToFileURL(ortEntry()).href).then((m) => ((m as { default?: OrtModule }).default ?? m) as OrtModule);
  return ortModule;
}

export async function openSession(spec: SessionSpec, runIn: RunIn): Promise<SessionRunner> {
  return runIn === 'main' ? MainThreadRunner.open(spec) : WorkerRunner.open(spec);
}

function toMeta(list: readonly InferenceSession.ValueMetadata[]): TensorMeta[] {
  return list.map((m) =>
    m.isTensor
      ? { name: m.name, isTensor: true, type: m.type, shape: m.shape.map((d) => (typeof d === 'number' ? d : -1)) }
      : { name: m.name, isTensor: false, type: undefined, shape: [] },
  );
}

class MainThreadRunner implements SessionRunner {
  onDeath: ((err: Error) => void) | undefined;

  private constructor(
    private readonly ort: OrtModule,
    private readonly session: InferenceSession,
    readonly info: SessionInfo,
  ) {}

  static async open(spec: SessionSpec): Promise<MainThreadRunner> {
    const ort = await loadOrt();
    const session = await ort.InferenceSession.create(spec.modelPath, spec.options);
    return new MainThreadRunner(ort, session, { inputs: toMeta(session.inputMetadata), outputs: toMeta(session.outputMetadata) });
  }

  async run(feeds: Record<string, WireTensor>, fetches: string[]): Promise<Record<string, WireTensor>> {
    const ortFeeds: Record<string, InstanceType<OrtModule['Tensor']>> = {};
    for (const [name, w] of Object.entries(feeds)) {
      ortFeeds[name] = new this.ort.Tensor(w.type, w.data as never, w.dims);
    }
    const res = await this.session.run(ortFeeds, fetches);
    const outs: Record<string, WireTensor> = {};
    for (const [name, t] of Object.entries(res)) {
      outs[name] = { type: t.type as WireTensor['type'], dims: [...t.dims], data: t.data as WireTensor['data'] };
    }
    return outs;
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

interface WorkerReply {
  t: 'ready' | 'load_err' | 'done' | 'err';
  id?: number;
  msg?: string;
  info?: SessionInfo;
  outs?: Record<string, WireTensor>;
}

interface Pending {
  resolve: (outs: Record<string, WireTensor>) => void;
  reject: (err: Error) => void;
}

class WorkerRunner implements SessionRunner {
  onDeath: ((err: Error) => void) | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closing = false;
  private dead: Error | undefined;

  private constructor(
    private readonly worker: Worker,
    readonly info: SessionInfo,
  ) {
    worker.on('message', (m: WorkerReply) => this.onMessage(m));
    worker.on('error', (err) => this.die(err));
    worker.on('exit', (code) => this.die(new Error(`the onnxruntime worker thread exited with code ${code}`)));
  }

  static open(spec: SessionSpec): Promise<WorkerRunner> {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { ortPath: ortEntry(), modelPath: spec.modelPath, options: spec.options },
    });
    return new Promise<WorkerRunner>((resolve, reject) => {
      const fail = (err: Error) => {
        cleanup();
        void worker.terminate();
        reject(err);
      };
      const onMessage = (m: WorkerReply) => {
        if (m.t === 'ready' && m.info) {
          cleanup();
          resolve(new WorkerRunner(worker, m.info));
        } else if (m.t === 'load_err') {
          fail(new Error(m.msg ?? 'failed to create the onnxruntime session'));
        }
      };
      const onError = (err: Error) => fail(err);
      const onExit = (code: number) => fail(new Error(`the onnxruntime worker thread exited with code ${code} while loading`));
      const cleanup = () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
    });
  }

  run(feeds: Record<string, WireTensor>, fetches: string[]): Promise<Record<string, WireTensor>> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      try {
        this.worker.postMessage({ t: 'run', id, feeds, fetches }, transferables(Object.values(feeds)));
      } catch (err) {
        this.pending.delete(id);
        reject(err as Error);
      }
    });
  }

  private onMessage(m: WorkerReply): void {
    if (m.id === undefined) return;
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.t === 'done' && m.outs) p.resolve(m.outs);
    else p.reject(new Error(m.msg ?? 'onnxruntime run failed'));
  }

  private die(err: Error): void {
    if (this.dead) return;
    this.dead = err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    if (!this.closing) this.onDeath?.(err);
  }

  async close(): Promise<void> {
    if (this.dead) return;
    this.closing = true;
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.postMessage({ t: 'close' });
    // A session stuck in a long run cannot be interrupted; do not wait for it forever.
    const timer = setTimeout(() => void this.worker.terminate(), 5000);
    await exited;
    clearTimeout(timer);
  }
}
