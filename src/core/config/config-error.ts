/**
 * A model configuration that cannot be loaded: a syntax error in
 * config.pbtxt, an unknown field, a bad value or a failed validation rule.
 * Carries the location so the load error can point the user at the line to
 * fix. (The lead will fold this into the project's coded errors.)
 */
export class ConfigError extends Error {
  readonly code = 'TRITIUM_CONFIG' as const;

  constructor(
    message: string,
    readonly file?: string,
    readonly line?: number,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}
