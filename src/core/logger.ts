/**
 * @module core/logger
 * Server log in Triton's line format (`I1121 05:39:57.123456 1234 file:line] message`), because
 * scripts and test harnesses written for tritonserver grep these lines (for example
 * "Started HTTPService at"). Lines go to stderr through one buffered write per line.
 */

export type LogLevel = 'I' | 'W' | 'E' | 'V';

export interface LogSettings {
  info: boolean;
  warning: boolean;
  error: boolean;
  verbose: number;
}

export interface Logger {
  info(message: string, source?: string): void;
  warn(message: string, source?: string): void;
  error(message: string, source?: string): void;
  /** Logged only when `--log-verbose` is at least `level`. */
  verbose(level: number, message: string, source?: string): void;
  readonly settings: LogSettings;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

function stamp(level: LogLevel): string {
  const nowMs = performance.timeOrigin + performance.now();
  const d = new Date(nowMs);
  const micros = Math.floor((nowMs * 1000) % 1_000_000);
  return (
    `${level}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(micros, 6)} ${process.pid}`
  );
}

export function createLogger(settings: LogSettings, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const emit = (level: LogLevel, message: string, source = 'tritium') => {
    write(`${stamp(level)} ${source}] ${message}\n`);
  };
  return {
    settings,
    info: (m, s) => settings.info && emit('I', m, s),
    warn: (m, s) => settings.warning && emit('W', m, s),
    error: (m, s) => settings.error && emit('E', m, s),
    verbose: (level, m, s) => settings.verbose >= level && emit('I', m, s),
  };
}

/** A logger that drops everything (tests, tools). */
export const silentLogger: Logger = createLogger({ info: false, warning: false, error: false, verbose: 0 });

/** The `logging` extension's view of the server log (HTTP `/v2/logging`, gRPC LogSettings). */
export interface LogSettingsView {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  log_format: 'default' | 'ISO8601';
}

export interface LogSettingsStore {
  get(): LogSettingsView;
  /** Applies a validated partial update to the live logger. */
  update(patch: Partial<LogSettingsView>): void;
  /** Called after every update (e.g. to pass a new verbose level on to stub processes). */
  onChange?(listener: (settings: LogSettingsView) => void): void;
}

/** A store that only remembers values (a frontend started without a server log, e.g. in tests). */
export function memoryLogSettings(initial?: Partial<LogSettingsView>): LogSettingsStore {
  const settings: LogSettingsView = {
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

/** A settings store bound to a logger: changes over the network take effect at once. */
export function logSettingsStore(logger: Logger): LogSettingsStore {
  const s = logger.settings;
  let format: 'default' | 'ISO8601' = 'default';
  const listeners: Array<(settings: LogSettingsView) => void> = [];
  const store: LogSettingsStore = {
    onChange: (listener) => listeners.push(listener),
    get: () => ({
      log_file: '',
      log_info: s.info,
      log_warning: s.warning,
      log_error: s.error,
      log_verbose_level: s.verbose,
      log_format: format,
    }),
    update: (p) => {
      if (p.log_info !== undefined) s.info = p.log_info;
      if (p.log_warning !== undefined) s.warning = p.log_warning;
      if (p.log_error !== undefined) s.error = p.log_error;
      if (p.log_verbose_level !== undefined) s.verbose = p.log_verbose_level;
      if (p.log_format !== undefined) format = p.log_format;
      const now = store.get();
      for (const l of listeners) l(now);
    },
  };
  return store;
}
