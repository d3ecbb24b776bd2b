/**
 * @module core/extensions/trace-settings
 * The trace extension's settings, shared by HTTP and gRPC (docs/protocol-notes.md, "Trace"):
 * global ones, from `--trace-config` and updates, and per-model ones that override them
 * setting by setting (an update with a null / empty value drops a model's override). The
 * rules are Triton 2.51's: `trace_file` cannot be updated over the network; tracing cannot be
 * turned on without a trace file; numbers must parse (`trace_count` ≥ -1); a level Triton does
 * not know is ignored. The tracer (core/trace/tracer.ts) reads the effective settings per
 * request.
 */
import { Errors } from '../errors.js';

export type TraceSettings = Record<'trace_level' | 'trace_rate' | 'trace_count' | 'log_frequency' | 'trace_file' | 'trace_mode', string[]>;
type Key = keyof TraceSettings;

const LEVELS = new Set(['OFF', 'TIMESTAMPS', 'TENSORS']);

export function defaultTraceSettings(): TraceSettings {
  return { trace_level: ['OFF'], trace_rate: ['1000'], trace_count: ['-1'], log_frequency: ['0'], trace_file: [''], trace_mode: ['triton'] };
}

/** Per-model trace settings need the model to exist; Triton refuses others with its own text. */
export function checkTraceModel(core: { resolveModel(name: string, version: string): unknown }, model: string): void {
  if (model === '') return;
  try {
    core.resolveModel(model, '');
  } catch {
    throw Errors.traceUnknownModel(model);
  }
}

export class TraceSettingsStore {
  private readonly models = new Map<string, Partial<TraceSettings>>();

  /** Some level is on somewhere: the tracer's fast way out for every request otherwise. */
  enabled: boolean;
  /** Bumped by every update (the tracer restarts its sampling count). */
  generation = 0;
  /** Called after every update (frontend threads learn `enabled` this way). */
  onUpdate: (() => void) | undefined;

  constructor(private readonly global: TraceSettings = defaultTraceSettings()) {
    this.enabled = this.computeEnabled();
  }

  private computeEnabled(): boolean {
    const on = (levels: readonly string[] | undefined) => levels?.some((l) => l !== 'OFF') === true;
    return on(this.global.trace_level) || [...this.models.values()].some((m) => on(m.trace_level));
  }

  effective(model: string): TraceSettings {
    const own = this.models.get(model);
    return own === undefined ? { ...this.global } : { ...this.global, ...own };
  }

  /**
   * Applies an update (`null` = drop the model's override of that setting; ignored globally).
   * All-or-nothing: a refused setting changes none.
   */
  update(model: string, entries: ReadonlyArray<[string, readonly string[] | null]>): void {
    const next: Partial<TraceSettings> = { ...(model === '' ? {} : this.models.get(model)) };
    const cleared: Key[] = [];
    for (const [key, values] of entries) {
      if (key === 'trace_file') throw Errors.traceFileUpdate();
      if (!(key in this.global)) continue;
      const k = key as Key;
      if (values === null || values.length === 0) {
        cleared.push(k);
        continue;
      }
      if (k === 'trace_level') {
        const known = values.filter((v) => LEVELS.has(v));
        if (known.length > 0) next.trace_level = known;
      } else if (k === 'trace_rate' || k === 'log_frequency' || k === 'trace_count') {
        const v = values[0]!;
        if (!/^-?\d+$/.test(v)) throw Errors.traceParse(k, v);
        if (k === 'trace_count' && Number(v) < -1) throw Errors.traceCountRange(v);
        if (k !== 'trace_count' && Number(v) < 0) throw Errors.traceParse(k, v);
        next[k] = [v];
      } else {
        next[k] = [values[0]!];
      }
    }
    const merged = { ...this.global, ...(model === '' ? {} : this.models.get(model)), ...next };
    for (const k of cleared) if (model !== '') delete merged[k];
    if (merged.trace_level?.some((l) => l !== 'OFF') && (merged.trace_file ?? this.global.trace_file)[0] === '') throw Errors.traceNoFile();
    if (model === '') Object.assign(this.global, next);
    else {
      for (const k of cleared) delete next[k];
      this.models.set(model, next);
    }
    this.enabled = this.computeEnabled();
    this.generation++;
    this.onUpdate?.();
  }

  /** Takes one trace from the count that applies to `model`; false when none is left. */
  takeCount(model: string): boolean {
    const own = this.models.get(model);
    const scope = own?.trace_count !== undefined ? own : this.global;
    const n = Number(scope.trace_count![0]);
    if (n === -1) return true;
    if (n <= 0) return false;
    scope.trace_count = [String(n - 1)];
    return true;
  }
}

/** `--trace-config` entries (`[mode, setting, value]`, mode '' for global) as initial settings. */
export function traceSettingsFromFlags(entries: ReadonlyArray<[string, string, string]>): TraceSettings {
  const s = defaultTraceSettings();
  const levels: string[] = [];
  for (const [mode, key, value] of entries) {
    if (mode === '' && key === 'level') levels.push(value.toUpperCase());
    else if (mode === '' && key === 'rate') s.trace_rate = [value];
    else if (mode === '' && key === 'count') s.trace_count = [value];
    else if (mode === '' && key === 'mode') s.trace_mode = [value];
    else if (mode === 'triton' && key === 'file') s.trace_file = [value];
    else if (mode === 'triton' && key === 'log-frequency') s.log_frequency = [value];
  }
  if (levels.length > 0) s.trace_level = levels;
  return s;
}
