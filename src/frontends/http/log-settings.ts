/**
 * @module frontends/http/log-settings
 * The `logging` extension's settings object. The HTTP layer only reads and patches it; whoever
 * owns the server log can pass its own store to apply changes (see `startHttpServer`).
 */

export interface LogSettings {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  log_format: 'default' | 'ISO8601';
}

export interface LogSettingsStore {
  get(): LogSettings;
  /** Applies a validated partial update. */
  update(patch: Partial<LogSettings>): void;
}

/** A store that only remembers values: the defaults of `tritonserver` with no log flags. */
export function memoryLogSettings(initial?: Partial<LogSettings>): LogSettingsStore {
  const settings: LogSettings = {
    log_file: '',
    log_info: true,
    log_warning: true,
    log_error: true,
    log_verbose_level: 0,
    log_format: 'default',
    ...initial,
  };
  return {
    get: () => ({ ...settings }),
    update: (patch) => Object.assign(settings, patch),
  };
}
