/**
 * @module frontends/metrics/observer
 * Adapts the core's `InferenceObserver` hooks to `Metrics`. Each model version's `ModelStats`
 * (in the core) reports its increments to the listener handed out here — the version's metric
 * series — so the `_duration_us` counters are exactly the statistics extension's numbers in µs
 * and each request is accounted once.
 */
import type { InferenceObserver } from '../../core/model/observer.js';
import type { Metrics } from './metrics.js';

export function metricsObserver(metrics: Metrics): InferenceObserver {
  return {
    statsListener: (model, version) => metrics.statsListener(model, version),
    modelLoaded(model, version, pending, loadSeconds, config) {
      metrics.registerModel(model, version, pending, config);
      metrics.setLoadDuration(model, version, loadSeconds);
    },
    modelUnloaded(model, version) {
      metrics.unregisterModel(model, version);
    },
    stubRestart(model, instance) {
      metrics.onStubRestart(model, instance);
    },
  };
}
