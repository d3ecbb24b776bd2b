/**
 * @module core/server-core-impl
 * The core behind every frontend: lifecycle state (live, ready, exiting), model lookup,
 * inference entry point, statistics and the repository index.
 */
import { TraceSettingsStore } from './extensions/trace-settings.js';
import { Tracer } from './trace/tracer.js';
import { asTritonError, Errors } from './errors.js';
import { SystemSharedMemory } from './extensions/shared-memory.js';
import type { ShmFiles } from './extensions/shm-file.js';
import { deliverError, type InferRequest, type ResponseSink } from './inference.js';
import type { ModelHandle } from './model-handle.js';
import type { ModelManager } from './model/model-manager.js';
import { bindSharedMemory, usesSharedMemory } from './request/shm-binding.js';
import type { LoadModelOptions, RepositoryIndexEntry, ServerCore, ServerMetadata, UnloadModelOptions } from './server-core.js';
import type { ModelStatistics } from './stats/types.js';
import { TRITON_API_VERSION } from './version.js';

/**
 * Extensions in Triton's order (perf_analyzer looks for "statistics"), only those that work:
 * not `sequence` (sequence batching is refused at load) or `cuda_shared_memory` (no CUDA IPC).
 * `trace` writes Triton-mode TIMESTAMPS and TENSORS traces (core/trace/).
 */
const EXTENSIONS = [
  'classification',
  'sequence',
  'model_repository',
  'model_repository(unload_dependents)',
  'schedule_policy',
  'model_configuration',
  'system_shared_memory',
  'binary_tensor_data',
  'parameters',
  'statistics',
  'trace',
  'logging',
];

export class ServerCoreImpl implements ServerCore {
  private state: 'initializing' | 'ready' | 'exiting' = 'initializing';
  readonly systemSharedMemory: SystemSharedMemory;
  readonly tracer: Tracer;

  constructor(
    readonly models: ModelManager,
    private readonly o: { serverId: string; strictReadiness: boolean; shmFiles?: ShmFiles; modelControlMode?: 'none' | 'poll' | 'explicit'; tracer?: Tracer },
  ) {
    this.systemSharedMemory = new SystemSharedMemory(o.shmFiles);
    this.tracer = o.tracer ?? new Tracer(new TraceSettingsStore());
  }

  markReady(): void {
    this.state = 'ready';
  }

  markExiting(): void {
    this.state = 'exiting';
  }

  isLive(): boolean {
    return this.state !== 'exiting';
  }

  isExiting(): boolean {
    return this.state === 'exiting';
  }

  isReady(): boolean {
    if (this.state !== 'ready') return false;
    return this.o.strictReadiness ? this.models.allReady() : true;
  }

  /**
   * Readiness for the endpoints (HTTP /v2/health/ready, gRPC ServerReady): isReady() plus, with
   * strict readiness, every model's own check (`is_ready()`), evaluated once for this call.
   */
  async checkReady(): Promise<boolean> {
    if (this.state !== 'ready') return false;
    return this.o.strictReadiness ? this.models.allReadyChecked() : true;
  }

  /** Readiness of one model version for the endpoints; throws Triton's lookup errors. */
  async checkModelReady(name: string, version: string): Promise<boolean> {
    return this.models.checkVersionReady(this.models.resolve(name, version));
  }

  serverMetadata(): ServerMetadata {
    return { name: this.o.serverId, version: TRITON_API_VERSION, extensions: EXTENSIONS };
  }

  resolveModel(name: string, version: string): ModelHandle {
    return this.models.resolve(name, version);
  }

  infer(request: InferRequest, sink: ResponseSink): void {
    try {
      if (this.state !== 'ready' && !(this.state === 'exiting' && request.readBeforeExit === true)) {
        throw this.state === 'exiting' ? Errors.schedulerStopped() : Errors.serverNotReady();
      }
      const mv = this.models.resolve(request.modelName, request.modelVersion);
      mv.infer(request, usesSharedMemory(request) ? bindSharedMemory(this.systemSharedMemory, request, sink) : sink);
    } catch (err) {
      deliverError(sink, request, asTritonError(err));
    }
  }

  statistics(name?: string, version?: string): ModelStatistics[] {
    if (name === undefined || name === '') return this.models.readyVersions().map((m) => m.statistics());
    let mv;
    try {
      mv = this.models.resolve(name, version ?? '');
    } catch {
      throw Errors.modelNotAvailable(name);
    }
    return [mv.statistics()];
  }

  repositoryIndex(readyOnly: boolean): RepositoryIndexEntry[] {
    return this.models.index(readyOnly);
  }

  /** Explicit model control only: in none and poll modes Triton refuses (Model Analyzer reads the text). */
  private checkExplicit(): void {
    if (this.o.modelControlMode !== 'explicit') throw Errors.explicitLoadUnload();
  }

  async loadModel(name: string, options: LoadModelOptions = {}): Promise<void> {
    this.checkExplicit();
    await this.models.control.load(name, options);
  }

  async unloadModel(name: string, options: UnloadModelOptions = {}): Promise<void> {
    this.checkExplicit();
    this.models.control.unload(name, options);
  }
}
