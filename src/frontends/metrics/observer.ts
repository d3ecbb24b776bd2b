/**
 * @module frontends/metrics/observer
 * Adapts the core's `InferenceObserver` hooks to `Metrics`. Per model version it runs a
 * `ModelStats` whose listener is the version's metric series: that reuses the statistics'
 * pairing of "request succeeded" with "its execution was recorded" (they arrive in either
 * order), so the `_duration_us` counters are exactly the statistics extension's numbers in µs.
 */
import type { InferenceObserver } from '../../core/model/observer.js';
import { ModelStats } from '../../core/stats/model-stats.js';
import type { Metrics } from './metrics.js';

export function metricsObserver(metrics: Metrics): InferenceObserver {
  const trackers = new Map<string, ModelStats>();
  const key = (model: string, version: string): string => `${model}\u0000${version}`;
  return {
    modelLoaded(model, version, pending, loadSeconds) {
      metrics.registerModel(model, version, pending);
      metrics.setLoadDuration(model, version, loadSeconds);
      const k = key(model, version);
      if (!trackers.has(k)) trackers.set(k, new ModelStats(metrics.statsListener(model, version)));
    },
    modelUnloaded(model, version) {
      metrics.unregisterModel(model, version);
      trackers.delete(key(model, version));
    },
    requestDone(model, version, request, endNs, error) {
      const t = trackers.get(key(model, version));
      if (t === undefined) return;
      if (error) t.recordFailure(request, endNs, error.reason);
      else t.recordSuccess(request, endNs);
    },
    execution(model, version, batch, times, batchSize) {
      trackers.get(key(model, version))?.recordExecution(batch, times, batchSize);
    },
    stubRestart(model, instance) {
      metrics.onStubRestart(model, instance);
    },
  };
}
