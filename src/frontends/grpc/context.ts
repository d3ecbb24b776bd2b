/**
 * @module frontends/grpc/context
 * What every gRPC handler gets besides the call: the core, the log-settings store and a logger.
 */
import type { LogSettingsStore } from '../../core/logger.js';
import type { ServerCore } from '../../core/server-core.js';

export interface GrpcLogger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export interface GrpcContext {
  readonly core: ServerCore;
  readonly logSettings: LogSettingsStore;
  readonly logger?: GrpcLogger;
  /** `--grpc-header-forward-pattern`: metadata forwarded as request parameters. */
  readonly headerForward?: RegExp;
}
