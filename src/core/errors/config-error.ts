/**
 * @module core/errors/config-error
 * A model configuration that cannot be loaded: a syntax error in config.pbtxt, an unknown field,
 * a bad value or a failed validation rule. It is a catalogue error (INVALID_ARG) that also
 * carries where the problem is, so the load error can point the user at the line to fix.
 * Built only by the config entries in ./config.ts.
 */
import { ErrorCode, TritonError } from './triton-error.js';

const kConfigError = Symbol.for('tritium.ConfigError');

/** Where in which file a configuration problem is; any part may be unknown. */
export interface ConfigLocation {
  file?: string;
  line?: number;
  field?: string;
}

export class ConfigError extends TritonError {
  readonly file?: string;
  readonly line?: number;
  readonly field?: string;

  constructor(message: string, entry: string, at: ConfigLocation) {
    super(ErrorCode.INVALID_ARG, message, 'OTHER', entry);
    this.name = 'ConfigError';
    this.file = at.file;
    this.line = at.line;
    this.field = at.field;
  }

  get [kConfigError](): true {
    return true;
  }

  // TritonError's brand check is inherited; a ConfigError needs its own, narrower one.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[kConfigError] === true;
  }
}
