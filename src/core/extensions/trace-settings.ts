/**
 * @module core/extensions/trace-settings
 * The trace extension, shared by HTTP and gRPC. tritium writes no traces, so tracing is off and
 * stays off: reads return these settings, an update that would turn tracing on (a
 * `trace_level` other than OFF) is refused UNSUPPORTED rather than accepted and ignored, and an
 * update that names `trace_file` is refused as Triton 2.51 refuses it on both protocols. The
 * server does not list `trace` among its extensions.
 */
import { Errors } from '../errors.js';

/** The settings every trace request answers with (each a list, as gRPC carries them). */
export const TRACE_SETTINGS: Readonly<Record<string, readonly string[]>> = {
  trace_level: ['OFF'],
  trace_rate: ['1000'],
  trace_count: ['-1'],
  log_frequency: ['0'],
  trace_file: [''],
  trace_mode: ['triton'],
};

/** Per-model trace settings need the model to exist; Triton refuses others with its own text. */
export function checkTraceModel(core: { resolveModel(name: string, version: string): unknown }, model: string): void {
  if (model === '') return;
  try {
    core.resolveModel(model, '');
  } catch {
    throw Errors.traceUnknownModel(model);
  }
}

/** Checks an update given as the settings it names and their values; nothing can change. */
export function checkTraceUpdate(settings: Iterable<[string, readonly string[]]>): void {
  for (const [key, values] of settings) {
    if (key === 'trace_file') throw Errors.traceFileUpdate();
    if (key === 'trace_level' && values.some((v) => v !== 'OFF')) throw Errors.traceUnsupported(values.join(', '));
  }
}
