/**
 * @module frontends/grpc/server
 * The gRPC endpoint: `inference.GRPCInferenceService` and `grpc.health.v1.Health` (Check only)
 * on @grpc/grpc-js, plaintext.
 *
 * Shutdown (`close()`): from the first moment new RPCs are answered UNAVAILABLE (Triton's text)
 * while connections stay open, so clients on them see why; calls and streams in flight get up
 * to `shutdownGraceMs` to finish; then grpc-js `tryShutdown` closes the connections (GOAWAY),
 * bounded by what is left of the grace period, and `forceShutdown` ends whatever remains.
 */
import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { ServerCore } from '../../core/server-core.js';
import { GRPCInferenceService } from '../../generated/grpc_service_pb.js';
import { Health } from '../../generated/health_pb.js';
import { memoryLogSettings, type LogSettingsStore } from '../../core/logger.js';
import type { GrpcContext, GrpcLogger } from './context.js';
import { healthCheck } from './handlers/health.js';
import { inferenceHandlers } from './handlers/index.js';
import type { ServiceState } from './service.js';
import { buildService } from './service.js';

export interface GrpcServerOptions {
  port: number;
  address: string;
  /** `--grpc-max-message-size`, both directions; Triton and its clients use INT32_MAX. */
  maxMessageSize: number;
  logger?: GrpcLogger;
  /** Backs the LogSettings RPC; pass the HTTP frontend's store to share one set of settings. */
  logSettings?: LogSettingsStore;
  /** How long `close()` lets calls in flight finish before forcing them down (default 30 s). */
  shutdownGraceMs?: number;
}

export interface GrpcServerHandle {
  /** The bound port (useful with port 0). */
  port: number;
  /** Graceful stop; resolves once the server is down. */
  close(): Promise<void>;
}

export const DEFAULT_GRPC_MAX_MESSAGE_SIZE = 2 ** 31 - 1;

export async function startGrpcServer(core: ServerCore, opts: GrpcServerOptions): Promise<GrpcServerHandle> {
  const ctx: GrpcContext = {
    core,
    logSettings: opts.logSettings ?? memoryLogSettings(),
    ...(opts.logger ? { logger: opts.logger } : {}),
  };
  const state: ServiceState = { closing: false, active: 0 };
  const maxMessage = opts.maxMessageSize > 0 ? Math.min(opts.maxMessageSize, DEFAULT_GRPC_MAX_MESSAGE_SIZE) : DEFAULT_GRPC_MAX_MESSAGE_SIZE;
  const server = new Server({
    'grpc.max_receive_message_length': maxMessage,
    'grpc.max_send_message_length': maxMessage,
  });
  const inference = buildService(GRPCInferenceService, inferenceHandlers, ctx, state);
  server.addService(inference.definition, inference.implementation);
  const health = buildService(Health, { check: healthCheck }, ctx, state);
  server.addService(health.definition, health.implementation);

  const target = `${opts.address.includes(':') ? `[${opts.address}]` : opts.address}:${opts.port}`;
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(target, ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      state.closing = true;
      const deadline = Date.now() + (opts.shutdownGraceMs ?? 30_000);
      await waitIdle(state, deadline);
      const remaining = Math.max(0, deadline - Date.now());
      const shutDown = await new Promise<boolean>((done) => {
        const timer = setTimeout(() => done(false), remaining);
        server.tryShutdown(() => {
          clearTimeout(timer);
          done(true);
        });
      });
      if (!shutDown) {
        opts.logger?.warn(`gRPC: ${state.active} call(s) still open at the end of the shutdown grace period; closing them`);
        server.forceShutdown();
      }
    })();
    return closed;
  };
  return { port, close };
}

/** Resolves once no call is active, or at `deadline`. */
function waitIdle(state: ServiceState, deadline: number): Promise<void> {
  if (state.active === 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(finish, Math.max(0, deadline - Date.now()));
    function finish(): void {
      clearTimeout(timer);
      state.onIdle = undefined;
      resolve();
    }
    state.onIdle = finish;
  });
}
