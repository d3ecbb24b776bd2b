/**
 * @module backends/python/metric-calls
 * The `metric` messages of one stub (docs/ipc.md, "Custom metrics"): pb_utils.MetricFamily and
 * Metric calls applied to the server's custom families (core/custom-metrics.ts). The stub is
 * the owner of the MetricFamily objects it created; `release()` when it is gone drops them.
 */
import type { CustomMetrics } from '../../core/custom-metrics.js';
import type { StubChannel } from './ipc/channel.js';
import type { MetricMsg } from './ipc/messages.js';

export class MetricCalls {
  constructor(private readonly metrics: CustomMetrics) {}

  onMessage(channel: StubChannel, m: MetricMsg): void {
    switch (m.op) {
      case 'family_new': {
        const err = this.metrics.familyNew(this, m.name, m.description, m.kind);
        channel.send(err === undefined ? { t: 'metric_r', cid: m.cid } : { t: 'metric_r', cid: m.cid, err });
        break;
      }
      case 'family_del':
        this.metrics.familyDelete(this, m.name);
        break;
      case 'new':
        this.metrics.metricNew(m.name, m.labels, m.buckets);
        break;
      case 'value':
        channel.send({ t: 'metric_r', cid: m.cid, value: this.metrics.value(m.name, m.labels) });
        break;
      default:
        this.metrics.apply(m.name, m.labels, m.op, m.v);
    }
  }

  /** The stub exited or stopped: its MetricFamily objects are gone. */
  release(): void {
    this.metrics.releaseOwner(this);
  }
}
