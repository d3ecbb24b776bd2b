/**
 * @module core/model/observer
 * Hooks the core calls as requests and executions complete; the metrics frontend implements
 * them. Keeping this interface in the core keeps the core free of frontend imports.
 */
import type { TritonError } from '../errors.js';
import type { ExecutionTimes, Nanos, PendingRequest } from '../scheduling/types.js';

export interface InferenceObserver {
  modelLoaded(model: string, version: string, pending: () => number, loadSeconds: number): void;
  modelUnloaded(model: string, version: string): void;
  requestDone(model: string, version: string, request: PendingRequest, endNs: Nanos, error: TritonError | undefined): void;
  execution(model: string, version: string, batch: PendingRequest[], times: ExecutionTimes, batchSize: number): void;
  stubRestart(model: string, instance: string): void;
}

export const nullObserver: InferenceObserver = {
  modelLoaded() {},
  modelUnloaded() {},
  requestDone() {},
  execution() {},
  stubRestart() {},
};
