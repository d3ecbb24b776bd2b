/**
 * @module frontends/grpc/server
 * The gRPC endpoint: `inference.GRPCInferenceService` and `grpc.health.v1.Health` (Check only)
 * on the project's own HTTP/2 transport over Node's nghttp2 (transport/), plaintext or TLS (`--grpc-use-ssl`).
 * The port listens from start; the services' routes (routes.ts) load with the first connection.
 *
 * Shutdown (`close()`): from the first moment new RPCs are answered UNAVAILABLE (Triton's text)
 * while connections stay open, so clients on them see why; calls and streams in flight get up
 * to `shutdownGraceMs` to finish; then every connection gets a GOAWAY and is closed once its
 * streams are done, bounded by what is left of the grace period, after which it is destroyed.
 */
import type { AddressInfo } from 'node:net';
import type { ServerCore } from '../../core/server-core.js';
import { memoryLogSettings, type LogSettingsStore } from '../../core/logger.js';
import type { GrpcContext, GrpcLogger } from './context.js';
import { toStatusError } from './status.js';
import { Errors } from '../../core/errors.js';
import type { KeepaliveOptions } from './transport/keepalive.js';
import { ConnectionLimit, defaultMaxConnections, type ConnectionLimitCounts } from '../connection-limit.js';
import type { CompressionLevel } from './transport/response-compression.js';
import type { StatusError } from './transport/status.js';
import { missingHeader, type ApiGroup, type Restriction } from '../restricted-api.js';
import { BodyBudget, defaultBodyMemory } from '../body-budget.js';
import type { SharedFrontendMemory } from '../shared-limits.js';
import type { DescriptorWatch } from '../descriptor-watch.js';
import { createTransport, type TlsOptions, type Transport } from './transport/http2-server.js';

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
  /** `--grpc-keepalive-*`, `--grpc-http2-*`, `--grpc-max-connection-age*` (tritonserver's defaults when absent). */
  keepalive?: KeepaliveOptions;
  /** Client connections kept open (`--grpc-max-connections`); default from the descriptor limit, 0 = no limit. */
  maxConnections?: number;
  /** Calls open at once on one connection (`--grpc-max-concurrent-streams`). */
  maxConcurrentStreams?: number;
  /** `--grpc-read-timeout-secs` in ms: a request message that stops arriving ends its call (0 = none). */
  readTimeoutMs?: number;
  /** `--grpc-max-body-memory` in bytes; 0 or absent = the default (defaultBodyMemory()). */
  maxBodyMemory?: number;
  /** `--grpc-header-forward-pattern`. */
  headerForward?: RegExp;
  /** `--grpc-infer-response-compression-level`. */
  responseCompression?: CompressionLevel;
  /** `--grpc-restricted-protocol`: the header each restricted API group needs. */
  restricted?: ReadonlyMap<ApiGroup, Restriction>;
  /** `--grpc-use-ssl` / `--grpc-use-ssl-mutual` with their certificate files, read. */
  tls?: TlsOptions;
  /** Takes accept errors that are descriptor shortages (logged once per burst there). */
  descriptors?: Pick<DescriptorWatch, 'report'>;
  /** A listening socket to adopt instead of binding `address:port` (frontends/threads/); `port` is then only reported. */
  fd?: number;
  /** Memory shared by the frontend threads of one server: one body budget and one connection limit. */
  shared?: SharedFrontendMemory;
  /** At the connection limit, a frontend thread asks the others to close an idle session (frontends/threads/). */
  evictElsewhere?: (olderThan: number) => Promise<boolean>;
}

export interface GrpcServerHandle {
  /** The bound port (useful with port 0). */
  port: number;
  /** Connections refused or evicted at the connection limit (metrics). */
  readonly connectionCounts: ConnectionLimitCounts;
  /** Graceful stop; resolves once the server is down. */
  close(): Promise<void>;
  /** Closes the oldest idle session if it was opened before `olderThan` (epoch ms): another thread is at the limit. */
  evictIdle?(olderThan: number): boolean;
}

export const DEFAULT_GRPC_MAX_MESSAGE_SIZE = 2 ** 31 - 1;

/** The API group of each method, as tritonserver 2.51 groups them for --grpc-restricted-protocol. */
const GROUP_OF_METHOD: Record<string, ApiGroup> = {
  ServerLive: 'health',
  ServerReady: 'health',
  ModelReady: 'health',
  Check: 'health',
  ServerMetadata: 'metadata',
  ModelMetadata: 'metadata',
  ModelInfer: 'inference',
  ModelStreamInfer: 'inference',
  ModelConfig: 'model-config',
  ModelStatistics: 'statistics',
  RepositoryIndex: 'model-repository',
  RepositoryModelLoad: 'model-repository',
  RepositoryModelUnload: 'model-repository',
  SystemSharedMemoryStatus: 'shared-memory',
  SystemSharedMemoryRegister: 'shared-memory',
  SystemSharedMemoryUnregister: 'shared-memory',
  CudaSharedMemoryStatus: 'shared-memory',
  CudaSharedMemoryRegister: 'shared-memory',
  CudaSharedMemoryUnregister: 'shared-memory',
  TraceSetting: 'trace',
  LogSettings: 'logging',
};

function restrictBy(restricted: ReadonlyMap<ApiGroup, Restriction>) {
  return (path: string, headers: Record<string, string | string[] | undefined>): StatusError | undefined => {
    const group = GROUP_OF_METHOD[path.slice(path.lastIndexOf('/') + 1)];
    const header = group === undefined ? undefined : missingHeader(restricted.get(group), headers, 'triton-grpc-protocol-');
    return header === undefined ? undefined : toStatusError(Errors.apiRestricted('protocol', header));
  };
}

export async function startGrpcServer(core: ServerCore, opts: GrpcServerOptions): Promise<GrpcServerHandle> {
  const ctx: GrpcContext = {
    core,
    logSettings: opts.logSettings ?? memoryLogSettings(),
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...(opts.headerForward ? { headerForward: opts.headerForward } : {}),
  };
  let closing = false;
  const maxMessage = opts.maxMessageSize > 0 ? Math.min(opts.maxMessageSize, DEFAULT_GRPC_MAX_MESSAGE_SIZE) : DEFAULT_GRPC_MAX_MESSAGE_SIZE;
  // The descriptors and handlers load with the first connection (routes.ts), so a server that
  // gets no gRPC call does not hold them; the first call waits for them (tens of ms).
  const routes = () => import('./routes.js').then((m) => m.serviceRoutes(ctx));
  const refusal = toStatusError(Errors.shuttingDown());
  const connectionLimit = new ConnectionLimit(
    opts.maxConnections ?? defaultMaxConnections(),
    'GRPC',
    (line) => opts.logger?.warn(line),
    opts.shared?.connections,
  );
  const transport = createTransport(routes, {
    maxMessageBytes: maxMessage,
    connectionLimit,
    ...(opts.evictElsewhere ? { evictElsewhere: opts.evictElsewhere } : {}),
    ...(opts.maxConcurrentStreams !== undefined ? { maxConcurrentStreams: opts.maxConcurrentStreams } : {}),
    ...(opts.readTimeoutMs ? { readTimeoutMs: opts.readTimeoutMs } : {}),
    bodyBudget: new BodyBudget(opts.maxBodyMemory ? opts.maxBodyMemory : defaultBodyMemory(0), opts.shared?.bodyBudget),
    refuseWith: () => (closing ? refusal : undefined),
    ...(opts.keepalive ? { keepalive: opts.keepalive } : {}),
    ...(opts.tls ? { tls: opts.tls } : {}),
    ...(opts.responseCompression ? { responseCompression: opts.responseCompression } : {}),
    ...(opts.restricted ? { restrict: restrictBy(opts.restricted) } : {}),
  });

  const port = await new Promise<number>((resolve, reject) => {
    transport.server.once('error', reject);
    const listened = (): void => {
      transport.server.off('error', reject);
      transport.server.on('error', (err) => {
        if (!opts.descriptors?.report(err)) opts.logger?.error(`gRPC server error: ${err.message}`);
      });
      resolve(opts.fd !== undefined ? opts.port : (transport.server.address() as AddressInfo).port);
    };
    if (opts.fd !== undefined) transport.server.listen({ fd: opts.fd }, listened);
    else transport.server.listen(opts.port, opts.address, listened);
  });

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= (async () => {
      closing = true;
      const deadline = Date.now() + (opts.shutdownGraceMs ?? 30_000);
      await waitIdle(transport, deadline);
      const active = transport.active;
      const shutDown = await transport.close(Math.max(0, deadline - Date.now()));
      if (!shutDown || active > 0) {
        opts.logger?.warn(`gRPC: ${active} call(s) still open at the end of the shutdown grace period; closing them`);
      }
    })();
    return closed;
  };
  return { port, close, connectionCounts: connectionLimit.counts, evictIdle: transport.evictIdle };
}

/** Resolves once no call is active, or at `deadline`. */
function waitIdle(state: Transport, deadline: number): Promise<void> {
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
