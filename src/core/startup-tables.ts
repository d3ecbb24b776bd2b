/**
 * @module core/startup-tables
 * The tables tritonserver prints at start-up (model status, server options), in its ASCII
 * layout: tuning guides and scripts read them to confirm what a server runs with.
 */
import type { RepositoryIndexEntry } from './server-core.js';

/** An ASCII table: a rule, the header row, a rule, the rows, a rule. */
export function renderTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const rule = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`;
  const line = (cells: readonly string[]) => `|${widths.map((w, i) => ` ${(cells[i] ?? '').padEnd(w)} `).join('|')}|`;
  return [rule, line(header), rule, ...rows.map(line), rule].join('\n');
}

/** Each backend with where it lives and its settings (`{"cmdline": {...}}`), as tritonserver lists them. */
export function backendTable(rows: ReadonlyArray<{ name: string; path: string; settings: Readonly<Record<string, string>> }>): string {
  return renderTable(
    ['Backend', 'Path', 'Config'],
    rows.map((r) => [r.name, r.path, JSON.stringify({ cmdline: r.settings })]),
  );
}

/** Every model version with its state: `READY`, or `UNAVAILABLE: <reason>`. */
export function modelTable(index: readonly RepositoryIndexEntry[]): string {
  const rows = index.map((e) => [e.name, e.version ?? '', e.state === 'READY' ? 'READY' : `${e.state ?? 'UNAVAILABLE'}${e.reason ? `: ${e.reason}` : ''}`]);
  return renderTable(['Model', 'Version', 'Status'], rows);
}

export interface ServerOptionsSummary {
  serverId: string;
  version: string;
  extensions: readonly string[];
  repositories: readonly string[];
  modelControlMode: string;
  strictModelConfig: boolean;
  strictReadiness: boolean;
  exitTimeoutSecs: number;
  cacheEnabled: boolean;
  rateLimit: 'off' | 'execution_count';
  rateLimitResources: ReadonlyArray<{ name: string; count: number; device: number }>;
}

/** The option/value table, with tritonserver's option names. */
export function optionsTable(o: ServerOptionsSummary): string {
  const rows: string[][] = [
    ['server_id', o.serverId],
    ['server_version', o.version],
    ['server_extensions', o.extensions.join(' ')],
    ...o.repositories.map((r, i) => [`model_repository_path[${i}]`, r]),
    ['model_control_mode', `MODE_${o.modelControlMode.toUpperCase()}`],
    ['strict_model_config', o.strictModelConfig ? '1' : '0'],
    ['rate_limit', o.rateLimit === 'execution_count' ? 'EXEC_COUNT' : 'OFF'],
    // tritonserver's rendering, its missing comma included.
    ...o.rateLimitResources.map((r, i) => [`rate_limit_resource[${i}]`, `{"name":"${r.name}", "count":${r.count} "device":${r.device}}`]),
    ['strict_readiness', o.strictReadiness ? '1' : '0'],
    ['exit_timeout', String(o.exitTimeoutSecs)],
    ['cache_enabled', o.cacheEnabled ? '1' : '0'],
  ];
  return renderTable(['Option', 'Value'], rows);
}
