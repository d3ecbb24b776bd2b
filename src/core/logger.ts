/**
 * @module core/logger
 * Server log in Triton's line format, because scripts and test harnesses written for
 * tritonserver grep these lines (for example "Started HTTPService at"):
 *
 *   default   I1121 05:39:57.123456 1234 source] "message"
 *   ISO8601   2026-11-21T05:39:57Z I 1234 source] "message"
 *
 * As in Triton 2.51 the message is quoted and escaped onto one line (a traceback stays one
 * record). Lines go to stderr, or to `--log-file`, through an asynchronous writer
 * (core/log-writer): a slow reader of stderr holds a writer thread, never the event loop; past
 * 16 MiB of unwritten log, lines are dropped and the count is logged when writing catches up.
 * Whatever is queued is written synchronously when the process exits, unless the log cannot be
 * written at all (its reader is gone): then the server exits without it.
 */
import fs from 'node:fs';
import { LogWriter } from './log-writer.js';

export type LogLevel = 'I' | 'W' | 'E' | 'V';
export type LogFormat = 'default' | 'ISO8601';

export interface LogSettings {
  info: boolean;
  warning: boolean;
  error: boolean;
  verbose: number;
  /** Line prefix style (`--log-format`); 'default' when absent. */
  format?: LogFormat;
  /** `--log-file`: where lines go instead of stderr ('' or absent: stderr). */
  file?: string;
}

export interface Logger {
  info(message: string, source?: string): void;
  warn(message: string, source?: string): void;
  error(message: string, source?: string): void;
  /** Logged only when `--log-verbose` is at least `level`. */
  verbose(level: number, message: string, source?: string): void;
  /**
   * Lines written as they are, without prefix or quoting (Triton's start-up tables). Shown
   * with INFO.
   */
  raw(text: string): void;
  readonly settings: LogSettings;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

function prefix(level: LogLevel, format: LogFormat | undefined): string {
  const nowMs = performance.timeOrigin + performance.now();
  const d = new Date(nowMs);
  if (format === 'ISO8601') {
    return (
      `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T` +
      `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}Z ${level} ${process.pid}`
    );
  }
  const micros = Math.floor((nowMs * 1000) % 1_000_000);
  return (
    `${level}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(micros, 6)} ${process.pid}`
  );
}

/** The message quoted and escaped onto one line, as Triton writes it. */
export function escapeMessage(message: string): string {
  return JSON.stringify(message);
}

/** Unwritten log past which lines are dropped rather than held. */
const MAX_UNWRITTEN = 16 * 1024 * 1024;

/**
 * The default writer: stderr, or the `--log-file` (appended to; an error opening it is thrown
 * now, so that the CLI can name the flag).
 */
export function logWriter(file?: string): (line: string) => void {
  const key = file ?? '';
  let w = writers.get(key);
  if (w === undefined) {
    w = openWriter(file);
    writers.set(key, w);
  }
  return w;
}

/** One writer per destination, so that loggers sharing it keep the order of their lines. */
const writers = new Map<string, (line: string) => void>();

function openWriter(file: string | undefined): (line: string) => void {
  // Opened here, synchronously, so that a bad path fails start-up with the reason.
  const fd = file ? fs.openSync(file, 'a') : 2;
  const writer = new LogWriter(fd, { maxPending: MAX_UNWRITTEN });
  let dropped = 0;
  // At exit: what is queued is written now, and later lines (other exit handlers) directly.
  let exiting = false;
  process.once('exit', () => {
    exiting = true;
    writer.flushSync();
  });
  return (line) => {
    if (exiting) {
      if (writer.broken) return;
      try {
        fs.writeSync(fd, line);
      } catch {
        // Nothing more can be done about a log that cannot be written.
      }
      return;
    }
    if (
      dropped > 0 &&
      writer.write(`${prefix('W', undefined)} logger] ${escapeMessage(`${dropped} log lines were dropped: the log was not read fast enough`)}\n`)
    )
      dropped = 0;
    if (!writer.write(line) && !writer.broken) dropped++;
  };
}

export function createLogger(settings: LogSettings, write: (line: string) => void = logWriter(settings.file)): Logger {
  const emit = (level: LogLevel, message: string, source = 'tritium') => {
    write(`${prefix(level, settings.format)} ${source}] ${escapeMessage(message)}\n`);
  };
  return {
    settings,
    info: (m, s) => settings.info && emit('I', m, s),
    warn: (m, s) => settings.warning && emit('W', m, s),
    error: (m, s) => settings.error && emit('E', m, s),
    verbose: (level, m, s) => settings.verbose >= level && emit('I', m, s),
    raw: (text) => settings.info && write(text.endsWith('\n') ? text : `${text}\n`),
  };
}

/** A logger that drops everything (tests, tools). */
export const silentLogger: Logger = createLogger({ info: false, warning: false, error: false, verbose: 0 }, () => {});

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
  const listeners: Array<(settings: LogSettingsView) => void> = [];
  const store: LogSettingsStore = {
    onChange: (listener) => listeners.push(listener),
    get: () => ({
      log_file: s.file ?? '',
      log_info: s.info,
      log_warning: s.warning,
      log_error: s.error,
      log_verbose_level: s.verbose,
      log_format: s.format ?? 'default',
    }),
    update: (p) => {
      if (p.log_info !== undefined) s.info = p.log_info;
      if (p.log_warning !== undefined) s.warning = p.log_warning;
      if (p.log_error !== undefined) s.error = p.log_error;
      if (p.log_verbose_level !== undefined) s.verbose = p.log_verbose_level;
      if (p.log_format !== undefined) s.format = p.log_format;
      const now = store.get();
      for (const l of listeners) l(now);
    },
  };
  return store;
}
