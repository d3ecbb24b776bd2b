/**
 * @module frontends/http/server
 * The HTTP/REST endpoint (KServe v2 + Triton extensions) on plain `node:http`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ServerCore } from '../../core/server-core.js';
import type { HttpContext, HttpLogger } from './context.js';
import { dispatch } from './dispatch.js';
import type { LogSettingsStore } from '../../core/logger.js';
import { memoryLogSettings } from '../../core/logger.js';

export interface HttpServerOptions {
  port: number;
  address: string;
  /** `--http-max-input-size` in bytes (Triton's default is 64 MiB). */
  maxInputSize: number;
  logger?: HttpLogger;
  /** Backs `/v2/logging`; defaults to an in-memory store. */
  logSettings?: LogSettingsStore;
}

export interface HttpServerHandle {
  /** The bound port (useful with port 0). */
  port: number;
  /** Stops accepting, lets in-flight requests finish, closes idle keep-alive sockets. */
  close(): Promise<void>;
}

export const DEFAULT_HTTP_MAX_INPUT_SIZE = 64 * 1024 * 1024;

export function startHttpServer(core: ServerCore, opts: HttpServerOptions): Promise<HttpServerHandle> {
  const ctx: HttpContext = {
    core,
    maxInputSize: opts.maxInputSize > 0 ? opts.maxInputSize : DEFAULT_HTTP_MAX_INPUT_SIZE,
    logSettings: opts.logSettings ?? memoryLogSettings(),
    ...(opts.logger ? { logger: opts.logger } : {}),
  };
  let closing = false;
  // Responses not yet closed, so close() can end their connections once they are answered.
  const inFlight = new Set<ServerResponse>();
  const onResponseClose = (res: ServerResponse): void => {
    inFlight.delete(res);
    if (closing) setImmediate(() => server.closeIdleConnections());
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    // A request arriving during close() (on an open keep-alive socket): answer, then close it.
    if (closing) res.shouldKeepAlive = false;
    inFlight.add(res);
    res.once('close', () => onResponseClose(res));
    dispatch(ctx, req, res);
  };
  const server = createServer({ noDelay: true, keepAlive: true }, onRequest);
  // Node answers any `Expect` other than 100-continue with 417 by itself; Triton ignores it.
  server.on('checkExpectation', onRequest);
  // Clients keep pooled connections open between bursts (perf_analyzer, geventhttpclient);
  // closing them on Node's 5 s default makes a client race a reused socket against the FIN.
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 125_000;

  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });

  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen(opts.port, opts.address, () => {
      server.off('error', onError);
      server.on('error', (err) => opts.logger?.error(`HTTP server error: ${err.message}`));
      const port = (server.address() as AddressInfo).port;
      let closed: Promise<void> | undefined;
      resolve({
        port,
        close: () => {
          closed ??= new Promise<void>((done) => {
            closing = true;
            // Busy sockets close after their response; idle keep-alive sockets right away.
            for (const res of inFlight) if (!res.headersSent) res.shouldKeepAlive = false;
            server.close(() => done());
            server.closeIdleConnections();
          });
          return closed;
        },
      });
    });
  });
}

export type { HttpLogger } from './context.js';
