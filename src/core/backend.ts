/**
 * @module core/backend
 * The one interface every model kind is served through (Python stubs, onnxruntime-node). The
 * core loads a model version through its backend, gets instances, and the scheduler hands each
 * instance lists of requests.
 */
import type { ModelConfig } from '../generated/model_config_pb.js';
import type { TritonError } from './errors.js';
import type { InternalClient } from './internal-client.js';
import type { Logger } from './logger.js';
import type { ModelSource } from './repository/scan.js';
import type { ExecutionInstance, ExecutionObserver, Scheduler } from './scheduling/types.js';

export interface ModelVersionContext {
  source: ModelSource;
  version: number;
  /** `<model dir>/<version>` */
  versionDir: string;
  /** Normalised, validated config. */
  config: ModelConfig;
  /** The config rendered as Triton's JSON (what `args['model_config']` carries). */
  configJson: string;
  logger: Logger;
  /** Other models of this server, for BLS and ensembles. */
  client: InternalClient;
}

export interface BackendInstance extends ExecutionInstance {
  readonly kind: 'CPU' | 'GPU' | 'MODEL';
  readonly deviceId: number;
  /** Why the instance is not ready ('' when it is). */
  readonly reason?: string;
  /** Supervision stopped restarting it: it will never serve again. */
  readonly gaveUp?: boolean;
  /**
   * The model's own readiness check (Python `is_ready()`), bounded in time; resolves with why
   * the instance is not ready, or undefined. Absent, or resolving at once, for a model without
   * one. Called by readiness endpoints only, never on the inference path.
   */
  checkReady?(): Promise<TritonError | undefined>;
}

export interface LoadedModel {
  readonly instances: readonly BackendInstance[];
  /** Finalises and stops every instance, bounded by `timeoutMs`. */
  unload(timeoutMs: number): Promise<void>;
  /**
   * A model that schedules its requests itself (an ensemble, which has no instances) instead
   * of the default scheduler or the dynamic batcher; `onExecution` accounts its executions.
   */
  createScheduler?(onExecution: ExecutionObserver): Scheduler;
  /** Readiness beyond its instances (an ensemble: every composing model ready). */
  isReady?(): boolean;
  /** Why `isReady()` is false, for the repository index. */
  notReadyReason?(): string;
}

export interface AutoCompleteContext {
  source: ModelSource;
  /** Version directory whose model file is used for auto-completion. */
  versionDir: string;
  logger: Logger;
}

export interface Backend {
  readonly name: string;
  /** Fills in a config from the model itself (Python `auto_complete_config`, ONNX graph). */
  autoComplete?(ctx: AutoCompleteContext, config: ModelConfig): Promise<ModelConfig>;
  /** Starts every instance of one version; rejects with the load error. */
  load(ctx: ModelVersionContext, hooks: InstanceHooks): Promise<LoadedModel>;
  /** Stops whatever the backend keeps across models (nothing by default). */
  close?(): Promise<void>;
}

/** What instances tell the core about themselves after load. */
export interface InstanceHooks {
  /** Readiness of an instance changed (death, restart). */
  onReadinessChange(instance: BackendInstance, ready: boolean): void;
  /** A stub was restarted (metrics). */
  onRestart(instance: BackendInstance): void;
  /** Runs the model's warmup samples on a restarted instance before it takes traffic. */
  warmup(instance: BackendInstance): Promise<void>;
}
