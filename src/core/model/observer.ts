/**
 * @module core/model/observer
 * Hooks the core calls about model versions; the metrics frontend implements them. Per-request
 * accounting is not here: each version's `ModelStats` feeds the `StatsListener` the observer
 * hands out, so statistics and metrics come from one accounting pass. Keeping this interface
 * in the core keeps the core free of frontend imports.
 */
import type { ModelConfig } from '../config/schema.js';
import type { PendingRequest } from '../scheduling/types.js';
import type { StatsListener } from '../stats/model-stats.js';

export interface InferenceObserver {
  /** The listener that receives a version's statistics increments (e.g. metric series). */
  statsListener(model: string, version: string): StatsListener | undefined;
  /** `config`: what the version's metric series depend on (decoupled, `model_metrics`). */
  modelLoaded(model: string, version: string, pending: () => number, loadSeconds: number, config?: ModelConfig): void;
  modelUnloaded(model: string, version: string): void;
  stubRestart(model: string, instance: string): void;
  /** A batch of `requests` goes to `instance` (Triton's verbose `executing N requests` line). */
  executing?(model: string, version: string, instance: string, requests: readonly PendingRequest[]): void;
}

export const nullObserver: InferenceObserver = {
  statsListener: () => undefined,
  modelLoaded() {},
  modelUnloaded() {},
  stubRestart() {},
};
