/**
 * @module core/errors/config-error
 * A model configuration that cannot be loaded: a syntax error in config.pbtxt, an unknown field,
 * a bad value or a failed validation rule. It is a catalogue error (INVALID_ARG) that also
 * carries where the problem is, so the load error can point the user at the line to fix.
 * Built only by the config entries in ./config.ts.
 */
import { entryName, render, type EntrySpec, type Holes } from './entry.js';
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

/** A config entry: called with where the problem is (`S`), then its own arguments. */
export interface ConfigEntry<S, A extends unknown[]> {
  (site: S, ...args: A): ConfigError;
  readonly spec: Required<EntrySpec>;
}

/**
 * Builds config entries whose texts start with `prefix` (holes filled from the site by
 * `fromSite`, which also says what the error carries); used by ./config.ts (no prefix),
 * ./config-syntax.ts (`file:line:column: `) and ./config-rules.ts (`where: field: `).
 */
export function configEntries<S>(prefix: string, fromSite: (site: S) => { holes: Record<string, string | number>; at: ConfigLocation }) {
  return <const T extends string, A extends unknown[]>(
    spec: { text: T; when: string },
    fill: (...args: A) => { [K in Holes<T>]: string | number | bigint },
  ): ConfigEntry<S, A> => {
    const full: Required<EntrySpec> = { code: ErrorCode.INVALID_ARG, reason: 'OTHER', when: spec.when, text: prefix + spec.text };
    const make = (site: S, ...args: A): ConfigError => {
      const { holes, at } = fromSite(site);
      return new ConfigError(render(full.text, { ...fill(...args), ...holes }), entryName(make), at);
    };
    return Object.assign(make, { spec: full });
  };
}
