/**
 * @module frontends/http/server
 * The HTTP/REST endpoint (KServe v2 + Triton extensions) on the project's own HTTP/1.1
 * connection layer (`wire/`) over `node:net`. node:http builds a stream-based request and
 * response object pair per request; for a model server whose requests are small and many, that
 * machinery was a large share of the CPU each request costs (docs/design.md, "HTTP").
 */
import type { ApiGroup, Restriction } from '../restricted-api.js';
import net from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import type { ServerCore } from '../../core/server-core.js';
import type { HttpContext, HttpLogger } from './context.js';
import { BodyBudget, defaultBodyMemory } from '../body-budget.js';
import { dispatch } from './dispatch.js';
import { DEFAULT_MAX_JSON_OUTPUT_SIZE } from './infer-response.js';
import type { LogSettingsStore } from '../../core/logger.js';
import { memoryLogSettings } from '../../core/logger.js';
import { ConnectionLimit, defaultMaxConnections, type ConnectionLimitCounts, type LimitedConnection } from '../connection-limit.js';
import { Connection } from './wire/connection.js';
import type { DescriptorWatch } from '../descriptor-watch.js';
import type { SharedFrontendMemory } from '../shared-limits.js';
import type { OpenAiSettings } from '../openai/settings.js';

export interface HttpServerOptions {
  port: number;
  address: string;
  /** `--http-max-input-size` in bytes (Triton's default is 64 MiB). */
  maxInputSize: number;
  /** `--http-max-body-memory` in bytes; 0 = the default (defaultBodyMemory()). */
  maxBodyMemory?: number;
  /** `--http-max-json-output-size` in bytes; 0 = the default (256 MiB). */
  maxJsonOutputSize?: number;
  logger?: HttpLogger;
  /** Backs `/v2/logging`; defaults to an in-memory store. */
  logSettings?: LogSettingsStore;
  /** Client connections kept open (`--http-max-connections`); default from the descriptor limit, 0 = no limit. */
  maxConnections?: number;
  /** `--http-idle-timeout-secs` in ms: idle keep-alive, slow head and slow body bound. */
  idleTimeoutMs?: number;
  /** `--http-header-forward-pattern`. */
  headerForward?: RegExp;
  /** `--http-restricted-api`. */
  restricted?: ReadonlyMap<ApiGroup, Restriction>;
  /** Takes accept errors that are descriptor shortages (logged once per burst there). */
  descriptors?: Pick<DescriptorWatch, 'report'>;
  /**
   * A listening socket to adopt instead of binding `address:port` (a frontend thread's
   * SO_REUSEPORT socket, frontends/threads/); `port` is then only reported.
   */
  fd?: number;
  /** Memory shared by the frontend threads of one server: one body budget and one connection limit. */
  shared?: SharedFrontendMemory;
  /**
   * At the connection limit with no idle connection of its own, a frontend thread asks the
   * others to close one of theirs; resolves whether one did (frontends/threads/).
   */
  evictElsewhere?: (olderThan: number) => Promise<boolean>;
  /** The OpenAI endpoints' settings; `ownPort` makes this the `--openai-port` listener. */
  openai?: OpenAiSettings;
}

export interface HttpServerHandle {
  /** The bound port (useful with port 0). */
  port: number;
  /** Connections refused or evicted at the connection limit (metrics). */
  readonly connectionCounts: ConnectionLimitCounts;
  /** Closes this server's oldest idle connection if it was opened before `olderThan` (epoch ms): another thread is at the limit. */
  evictIdle?(olderThan: number): boolean;
  /** Stops accepting, lets in-flight requests finish, closes idle keep-alive sockets. */
  close(): Promise<void>;
}

export const DEFAULT_HTTP_MAX_INPUT_SIZE = 64 * 1024 * 1024;

/**
 * Clients keep pooled connections open between bursts (perf_analyzer, geventhttpclient);
 * closing them early makes a client race a reused socket against the FIN. The same bound
 * applies to a client that sends a head or body too slowly.
 */
export const DEFAULT_HTTP_IDLE_TIMEOUT_MS = 120_000;

export function startHttpServer(core: ServerCore, opts: HttpServerOptions): Promise<HttpServerHandle> {
  const maxInputSize = opts.maxInputSize > 0 ? opts.maxInputSize : DEFAULT_HTTP_MAX_INPUT_SIZE;
  const ctx: HttpContext = {
    core,
    maxInputSize,
    maxJsonOutputSize: opts.maxJsonOutputSize ? opts.maxJsonOutputSize : DEFAULT_MAX_JSON_OUTPUT_SIZE,
    bodyBudget: new BodyBudget(opts.maxBodyMemory ? opts.maxBodyMemory : defaultBodyMemory(maxInputSize), opts.shared?.bodyBudget),
    logSettings: opts.logSettings ?? memoryLogSettings(),
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...(opts.headerForward ? { headerForward: opts.headerForward } : {}),
    ...(opts.restricted ? { restricted: opts.restricted } : {}),
    ...(opts.openai ? { openai: opts.openai } : {}),
  };
  let closing = false;
  const connections = new Set<Connection>();
  const connectionOptions = {
    handler: (req: Parameters<typeof dispatch>[1], res: Parameters<typeof dispatch>[2]) => dispatch(ctx, req, res),
    idleTimeoutMs: opts.idleTimeoutMs ?? DEFAULT_HTTP_IDLE_TIMEOUT_MS,
    closing: () => closing,
  };
  const limit = new ConnectionLimit(opts.maxConnections ?? defaultMaxConnections(), 'HTTP', (line) => opts.logger?.warn?.(line), opts.shared?.connections);
  // Insertion order is age: the oldest idle connection is the one evicted at the limit.
  function* limited(): Generator<LimitedConnection> {
    for (const c of connections) yield { idle: c.evictable, openedAt: c.openedAt, evict: () => c.socket.destroy() };
  }
  // Half-open: a client that shuts down its sending side after a whole request still gets its
  // answer (wire/connection.ts, onEnd).
  const accept = (socket: Socket): void => {
    const c = new Connection(socket, connectionOptions);
    connections.add(c);
    socket.once('close', () => {
      connections.delete(c);
      limit.closed();
    });
  };
  const server = net.createServer({ allowHalfOpen: true }, (socket: Socket) => {
    if (closing) {
      socket.destroy();
      return;
    }
    // While a frontend thread asks the others, a reset must not go unheard ('error' with no listener).
    const ignore = (): void => {};
    socket.on('error', ignore);
    limit.decide(limited, connections.size, opts.evictElsewhere, (admitted) => {
      socket.off('error', ignore);
      if (admitted && !closing && !socket.destroyed) {
        accept(socket);
        return;
      }
      if (admitted) limit.closed();
      socket.destroy();
    });
  });

  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    const listened = (): void => {
      server.off('error', onError);
      server.on('error', (err) => {
        if (!opts.descriptors?.report(err)) opts.logger?.error(`HTTP server error: ${err.message}`);
      });
      const port = opts.fd !== undefined ? opts.port : (server.address() as AddressInfo).port;
      let closed: Promise<void> | undefined;
      resolve({
        port,
        connectionCounts: limit.counts,
        evictIdle: (olderThan: number) => limit.evictIdle(limited(), olderThan),
        close: () => {
          closed ??= new Promise<void>((done) => {
            closing = true;
            // Busy sockets close after their response; idle keep-alive sockets right away.
            server.close(() => done());
            for (const c of connections) c.shutdown();
          });
          return closed;
        },
      });
    };
    if (opts.fd !== undefined) server.listen({ fd: opts.fd }, listened);
    else server.listen(opts.port, opts.address, listened);
  });
}

export type { HttpLogger } from './context.js';
