/**
 * @module core/server-core
 * The one surface frontends (HTTP, gRPC, metrics) talk to. They never import backends.
 */
import type { Tracer } from './trace/tracer.js';
import type { SystemSharedMemory } from './extensions/shared-memory.js';
import type { InferRequest, ResponseSink } from './inference.js';
import type { ModelHandle } from './model-handle.js';
import type { ModelStatistics } from './stats/types.js';

export interface RepositoryIndexEntry {
  name: string;
  version?: string;
  state?: 'UNKNOWN' | 'READY' | 'UNAVAILABLE' | 'LOADING' | 'UNLOADING';
  reason?: string;
}

export interface ServerMetadata {
  name: string;
  version: string;
  extensions: string[];
}

export interface ServerCore {
  /** Process initialised and not exiting. */
  isLive(): boolean;
  /** Ready per `--strict-readiness`, from state alone (no model is asked). */
  isReady(): boolean;
  /**
   * Ready per `--strict-readiness`, asking every READY model's own readiness check
   * (`is_ready()`) once: what the readiness endpoints answer.
   */
  checkReady(): Promise<boolean>;
  /**
   * Readiness of one model version (runtime check included) for the endpoints; throws the
   * lookup errors of resolveModel.
   */
  checkModelReady(name: string, version: string): Promise<boolean>;
  /** True once shutdown started: health endpoints answer 503 / UNAVAILABLE. */
  isExiting(): boolean;
  serverMetadata(): ServerMetadata;
  /**
   * Finds a model version, throwing Triton's lookup errors (unknown model, unknown version,
   * version not ready). `version` '' means the latest ready version.
   */
  resolveModel(name: string, version: string): ModelHandle;
  /**
   * Validates and schedules a request. Never throws: every error, validation included, arrives
   * through `sink` as a final response carrying `error`.
   */
  infer(request: InferRequest, sink: ResponseSink): void;
  /** Statistics of every ready model version, of one model, or of one version. */
  statistics(name?: string, version?: string): ModelStatistics[];
  repositoryIndex(readyOnly: boolean): RepositoryIndexEntry[];
  /** Registered client system shared-memory regions (the shared-memory extension). */
  readonly systemSharedMemory: SystemSharedMemory;
  /** Trace settings and sampling (the trace extension, `--trace-config`). */
  readonly tracer: Tracer;
  /**
   * Loads or reloads a model (explicit model control), optionally from a JSON config and
   * `file:<version>/<path>` contents; resolves once it serves, rejects with Triton's errors.
   */
  loadModel(name: string, options?: LoadModelOptions): Promise<void>;
  /** Starts unloading a model (and its dependents); resolves once new requests are refused. */
  unloadModel(name: string, options?: UnloadModelOptions): Promise<void>;
}

export interface LoadModelOptions {
  /** The model config as JSON (protobuf JSON names), replacing config.pbtxt. */
  config?: string;
  /** `file:<version>/<path>` → content; with `config`, the whole model directory. */
  files?: Record<string, Buffer>;
}

export interface UnloadModelOptions {
  unloadDependents?: boolean;
}
