/**
 * @module core/extensions/trace-settings
 * The trace extension, shared by HTTP and gRPC, as a static stub: tracing is off and stays off.
 * Every read and update returns these settings; an update that names `trace_file` is refused as
 * Triton 2.51 refuses it on both protocols.
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

/** Checks an update given as the names of the settings it sets; nothing else can change. */
export function checkTraceUpdate(keys: Iterable<string>): void {
  for (const key of keys) if (key === 'trace_file') throw Errors.traceFileUpdate();
}
