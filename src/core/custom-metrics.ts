/**
 * @module core/custom-metrics
 * Metric families a model defines (`pb_utils.MetricFamily` / `Metric`, docs/protocol-notes.md,
 * "Custom metrics"), held server-wide as tritonserver holds them: one family per name whatever
 * model or instance created it, one value per label set shared by every `Metric` with those
 * labels (two instances incrementing the same counter add to one number), exported on
 * `/metrics` while at least one `MetricFamily` object for the name lives.
 *
 * The stubs check what they can alone (kinds, label types, bucket order) with Triton's texts;
 * what needs every stub's view (a name taken by another kind, the value itself) is answered
 * here. Each stub is an `owner`: when it exits, what it held is released.
 */

export type MetricKind = 'counter' | 'gauge' | 'histogram';

interface Series {
  labels: Record<string, string>;
  value: number;
  /** Histogram only: upper bounds, per-bucket (not cumulative) counts, count and sum. */
  buckets?: number[];
  bucketCounts?: number[];
  count: number;
  sum: number;
}

interface Family {
  name: string;
  description: string;
  kind: MetricKind;
  series: Map<string, Series>;
  /** Live MetricFamily objects per owner. */
  owners: Map<object, number>;
}

/** A family as `/metrics` prints it. */
export interface FamilySnapshot {
  name: string;
  description: string;
  kind: MetricKind;
  series: ReadonlyArray<Readonly<Series>>;
}

// Prometheus' metric name alphabet (prometheus-cpp refuses others as Triton reports).
const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** Canonical key of a label set: sorted by name, as /metrics prints them. */
export function labelKey(labels: Record<string, string>): string {
  return JSON.stringify(
    Object.keys(labels)
      .sort()
      .map((k) => [k, labels[k]]),
  );
}

export class CustomMetrics {
  private readonly families = new Map<string, Family>();

  /** A MetricFamily object was created; returns Triton's core error text when refused. */
  familyNew(owner: object, name: string, description: string, kind: MetricKind): string | undefined {
    if (!NAME.test(name)) return 'Invalid metric name';
    let f = this.families.get(name);
    if (f !== undefined && f.kind !== kind) return 'Family name already exists with different type';
    if (f === undefined) {
      f = { name, description, kind, series: new Map(), owners: new Map() };
      this.families.set(name, f);
    }
    f.owners.set(owner, (f.owners.get(owner) ?? 0) + 1);
    return undefined;
  }

  /** A MetricFamily object was deleted; the family goes with its last one. */
  familyDelete(owner: object, name: string): void {
    const f = this.families.get(name);
    const n = f?.owners.get(owner);
    if (f === undefined || n === undefined) return;
    if (n > 1) f.owners.set(owner, n - 1);
    else f.owners.delete(owner);
    if (f.owners.size === 0) this.families.delete(name);
  }

  /** A Metric was created: its series exists (at zero) from now on. */
  metricNew(name: string, labels: Record<string, string>, buckets: number[] | undefined): void {
    const f = this.families.get(name);
    if (f === undefined) return;
    const key = labelKey(labels);
    if (f.series.has(key)) return;
    const s: Series = { labels: { ...labels }, value: 0, count: 0, sum: 0 };
    if (f.kind === 'histogram') {
      s.buckets = [...(buckets ?? [])];
      s.bucketCounts = s.buckets.map(() => 0);
    }
    f.series.set(key, s);
  }

  /** increment / set / observe, already checked against the kind by the stub. */
  apply(name: string, labels: Record<string, string>, op: 'inc' | 'set' | 'observe', v: number): void {
    const s = this.families.get(name)?.series.get(labelKey(labels));
    if (s === undefined) return;
    if (op === 'inc') s.value += v;
    else if (op === 'set') s.value = v;
    else {
      s.count++;
      s.sum += v;
      const i = s.buckets!.findIndex((b) => v <= b);
      if (i >= 0) s.bucketCounts![i]!++;
    }
  }

  /** The shared value of a counter or gauge series (0 when it is gone). */
  value(name: string, labels: Record<string, string>): number {
    return this.families.get(name)?.series.get(labelKey(labels))?.value ?? 0;
  }

  /** A stub exited: every MetricFamily object it held is gone. */
  releaseOwner(owner: object): void {
    for (const [name, f] of this.families) {
      f.owners.delete(owner);
      if (f.owners.size === 0) this.families.delete(name);
    }
  }

  snapshot(): FamilySnapshot[] {
    return [...this.families.values()].map((f) => ({ name: f.name, description: f.description, kind: f.kind, series: [...f.series.values()] }));
  }
}
