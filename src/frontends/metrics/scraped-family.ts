/**
 * @module frontends/metrics/scraped-family
 * What the hand-built families share: registering a family whose samples are computed at each
 * scrape (prom-client registers any object with `name` and `get`), and printing numbers the way
 * perf_analyzer's `\d+\.?\d*` parser reads them.
 */
import type { Registry } from 'prom-client';

export interface ScrapedSample {
  /** Set for the lines of a summary or histogram (`_count`, `_sum`, `_bucket`). */
  metricName?: string;
  labels: Record<string, string>;
  value: number;
}

/** Registers a family printed from `values()` at each scrape. */
export function registerScrapedFamily(
  registry: Registry,
  name: string,
  help: string,
  type: 'gauge' | 'counter' | 'summary' | 'histogram',
  values: () => ScrapedSample[],
): void {
  const metric = { name, help, type, get: async () => ({ name, help, type, values: values(), aggregator: 'sum' }) };
  registry.registerMetric(metric as unknown as Parameters<Registry['registerMetric']>[0]);
}

/** `v` rounded to `decimals` (0 for negatives and non-numbers), never printed with an exponent. */
export function plain(v: number, decimals = 0): number {
  if (!Number.isFinite(v) || v <= 0) return 0;
  const f = 10 ** decimals;
  const r = Math.round(v * f) / f;
  // Above 1e21 JS prints an exponent; counters never get there, clamp defensively.
  return r < 1e21 ? r : 1e21 - 1;
}
