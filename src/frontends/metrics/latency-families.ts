/**
 * @module frontends/metrics/latency-families
 * The optional per-model latency families of `--metrics-config` (docs/protocol-notes.md, "Metrics"):
 *
 *  - `summary_latencies=true`: five summaries in µs (request, queue, compute input/infer/output),
 *    observed with the same per-request values as the `_duration_us` counters, so `_sum` equals
 *    the counter and `_count` the requests; quantiles over a sliding window (latency-window.ts).
 *  - `histogram_latencies=true`: `nv_inference_first_response_histogram_ms`, the time from a
 *    request's arrival to its first response in whole ms, for decoupled models only (as Triton:
 *    a non-decoupled model's first response is its request duration); buckets from the model
 *    config's `model_metrics` or Triton's defaults.
 *
 * The request path only bumps numbers in the model's series; these families are prom-client
 * collector objects that print the series when `/metrics` is rendered. Layout as tritonserver
 * prints it: `_count`, `_sum`, then the quantile (or `le`) lines, with `quantile` / `le` after
 * `model` and `version`.
 */
import type { Registry } from 'prom-client';
import { plain, registerScrapedFamily, type ScrapedSample } from './scraped-family.js';
import type { ModelMetrics } from '../../core/config/schema.js';
import { LatencyWindow } from './latency-window.js';

/** `--metrics-config summary_quantiles` entries: quantile and its allowed rank error. */
export interface SummaryQuantile {
  quantile: number;
  error: number;
}

/** Triton's quantiles when `summary_quantiles` is not given (what tritonserver 2.51 prints). */
export const DEFAULT_SUMMARY_QUANTILES: readonly SummaryQuantile[] = [
  { quantile: 0.5, error: 0.05 },
  { quantile: 0.9, error: 0.01 },
  { quantile: 0.95, error: 0.001 },
  { quantile: 0.99, error: 0.001 },
  { quantile: 0.999, error: 0.0001 },
];

/** Buckets (ms) of the first-response histogram when the model config does not set them. */
export const DEFAULT_FIRST_RESPONSE_BUCKETS: readonly number[] = [100, 500, 2000, 5000];

export const FIRST_RESPONSE_FAMILY = 'nv_inference_first_response_histogram_ms';

export type LatencyKind = 'request' | 'queue' | 'input' | 'infer' | 'output';

/** The five windows of one model version. */
export class LatencySummaries {
  readonly request = new LatencyWindow();
  readonly queue = new LatencyWindow();
  readonly input = new LatencyWindow();
  readonly infer = new LatencyWindow();
  readonly output = new LatencyWindow();

  rotate(): void {
    this.request.rotate();
    this.queue.rotate();
    this.input.rotate();
    this.infer.rotate();
    this.output.rotate();
  }
}

/** A cumulative histogram of one model version; `bounds` ascending, +Inf implied. */
export class FirstResponseHistogram {
  count = 0;
  sum = 0;
  readonly counts: Float64Array;

  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(v: number): void {
    this.count++;
    this.sum += v;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (v <= b[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }
}

/** What the families read of a model version's series. */
export interface LatencySeries {
  readonly model: string;
  readonly version: string;
  readonly summaries?: LatencySummaries | undefined;
  readonly firstResponse?: FirstResponseHistogram | undefined;
}

// tritonserver 2.51's HELP texts (the compute ones say "Cumulative" there too).
const SUMMARIES: ReadonlyArray<[string, LatencyKind, string]> = [
  ['nv_inference_request_summary_us', 'request', 'Summary of inference request duration in microseconds (includes cached requests)'],
  ['nv_inference_queue_summary_us', 'queue', 'Summary of inference queuing duration in microseconds (includes cached requests)'],
  ['nv_inference_compute_input_summary_us', 'input', 'Cumulative compute input duration in microseconds (does not include cached requests)'],
  ['nv_inference_compute_infer_summary_us', 'infer', 'Cumulative compute inference duration in microseconds (does not include cached requests)'],
  ['nv_inference_compute_output_summary_us', 'output', 'Cumulative inference compute output duration in microseconds (does not include cached requests)'],
];

export function registerSummaryFamilies(registry: Registry, series: () => Iterable<LatencySeries>, quantiles: readonly SummaryQuantile[]): void {
  const qs = quantiles.map((q) => q.quantile);
  for (const [name, kind, help] of SUMMARIES) {
    registerScrapedFamily(registry, name, help, 'summary', () => {
      const out: ScrapedSample[] = [];
      for (const s of series()) {
        const w = s.summaries?.[kind];
        if (w === undefined) continue;
        const labels = { model: s.model, version: s.version };
        out.push({ metricName: `${name}_count`, labels, value: w.count });
        out.push({ metricName: `${name}_sum`, labels, value: plain(w.sum, 3) });
        const values = w.quantiles(qs);
        qs.forEach((q, i) => out.push({ metricName: name, labels: { ...labels, quantile: String(q) }, value: values[i]! }));
      }
      return out;
    });
  }
}

export function registerFirstResponseFamily(registry: Registry, series: () => Iterable<LatencySeries>): void {
  registerScrapedFamily(registry, FIRST_RESPONSE_FAMILY, 'Duration from request to first response in milliseconds', 'histogram', () => {
    const out: ScrapedSample[] = [];
    for (const s of series()) {
      const h = s.firstResponse;
      if (h === undefined) continue;
      const labels = { model: s.model, version: s.version };
      out.push({ metricName: `${FIRST_RESPONSE_FAMILY}_count`, labels, value: h.count });
      out.push({ metricName: `${FIRST_RESPONSE_FAMILY}_sum`, labels, value: plain(h.sum, 3) });
      let cumulative = 0;
      h.bounds.forEach((le, i) => {
        cumulative += h.counts[i]!;
        out.push({ metricName: `${FIRST_RESPONSE_FAMILY}_bucket`, labels: { ...labels, le: String(le) }, value: cumulative });
      });
      out.push({ metricName: `${FIRST_RESPONSE_FAMILY}_bucket`, labels: { ...labels, le: '+Inf' }, value: h.count });
    }
    return out;
  });
}

/**
 * The first-response buckets a model config asks for (`model_metrics { metric_control [ { metric_identifier
 * { family: "nv_inference_first_response_histogram_ms" } histogram_options { buckets: [...] } } ] }`),
 * ascending without duplicates; the defaults when it names none.
 */
export function firstResponseBuckets(modelMetrics: ModelMetrics | undefined): readonly number[] {
  for (const c of modelMetrics?.metricControl ?? []) {
    if (c.metricIdentifier?.family !== FIRST_RESPONSE_FAMILY || c.metricOptions.case !== 'histogramOptions') continue;
    const buckets = c.metricOptions.value.buckets.filter((b) => Number.isFinite(b));
    return [...new Set(buckets)].sort((a, b) => a - b);
  }
  return DEFAULT_FIRST_RESPONSE_BUCKETS;
}
