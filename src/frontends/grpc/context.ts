/**
 * @module frontends/grpc/context
 * What every gRPC handler gets besides the call: the core, the log-settings store and a logger.
 */
import type { ServerCore } from '../../core/server-core.js';

export interface GrpcLogger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/** The `logging` extension's settings, in the shape of `GET /v2/logging`. */
export interface GrpcLogSettings {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  log_format: 'default' | 'ISO8601';
}

/**
 * Structurally the same as the HTTP frontend's `LogSettingsStore`, so the server can hand one
 * store to both frontends and a change made over either protocol is seen by the other.
 */
export interface GrpcLogSettingsStore {
  get(): GrpcLogSettings;
  update(patch: Partial<GrpcLogSettings>): void;
}

export interface GrpcContext {
  readonly core: ServerCore;
  readonly logSettings: GrpcLogSettingsStore;
  readonly logger?: GrpcLogger;
}

/** Remembers values only; `tritonserver`'s defaults with no log flags. */
export function memoryLogSettingsStore(): GrpcLogSettingsStore {
  const s: GrpcLogSettings = {
    log_file: '',
    log_info: true,
    log_warning: true,
    log_error: true,
    log_verbose_level: 0,
    log_format: 'default',
  };
  return { get: () => ({ ...s }), update: (patch) => Object.assign(s, patch) };
}
