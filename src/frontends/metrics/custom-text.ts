/**
 * @module frontends/metrics/custom-text
 * The Prometheus text of the metric families models define (core/custom-metrics.ts), laid out
 * as tritonserver 2.51 prints them (docs/protocol-notes.md, "Custom metrics"): `# HELP`,
 * `# TYPE`, one line per label set with the labels sorted by name; a histogram prints `_count`
 * and `_sum`, then its cumulative `_bucket` lines ending with `le="+Inf"`.
 */
import type { FamilySnapshot } from '../../core/custom-metrics.js';

const escapeHelp = (s: string): string => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const escapeLabel = (s: string): string => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

function num(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function labelText(labels: Record<string, string>, extra?: [string, string]): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${escapeLabel(labels[k]!)}"`);
  if (extra) parts.push(`${extra[0]}="${extra[1]}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

export function renderCustomFamilies(families: readonly FamilySnapshot[]): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${escapeHelp(f.description)}`, `# TYPE ${f.name} ${f.kind}`);
    for (const s of f.series) {
      if (f.kind !== 'histogram') {
        lines.push(`${f.name}${labelText(s.labels)} ${num(s.value)}`);
        continue;
      }
      lines.push(`${f.name}_count${labelText(s.labels)} ${s.count}`, `${f.name}_sum${labelText(s.labels)} ${num(s.sum)}`);
      let cumulative = 0;
      s.buckets!.forEach((bound, i) => {
        cumulative += s.bucketCounts![i]!;
        lines.push(`${f.name}_bucket${labelText(s.labels, ['le', num(bound)])} ${cumulative}`);
      });
      lines.push(`${f.name}_bucket${labelText(s.labels, ['le', '+Inf'])} ${s.count}`);
    }
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}
