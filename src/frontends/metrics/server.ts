/**
 * @module frontends/metrics/server
 * The metrics endpoint (docs/protocol-notes.md, "Metrics"): GET `/metrics` or `/metrics/` answers the Prometheus
 * text; any other GET path answers 200 with an empty body (as Triton does); other methods 405.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DescriptorWatch } from '../descriptor-watch.js';
import type { Metrics } from './metrics.js';

export interface MetricsServerOptions {
  /** 0 picks a free port (the bound one is returned). */
  port: number;
  /** Bind address; default 0.0.0.0 like Triton's `--metrics-address`. */
  address?: string;
  /** Takes accept errors that are descriptor shortages; other errors after listening are dropped (a scrape is retried). */
  descriptors?: DescriptorWatch;
}

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

const CONTENT_TYPE = 'text/plain; charset=utf-8';

export function startMetricsServer(metrics: Metrics, options: MetricsServerOptions): Promise<MetricsServer> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'GET') {
      res.writeHead(405, { 'Content-Length': '0' });
      res.end();
      return;
    }
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/metrics' && path !== '/metrics/') {
      res.writeHead(200, { 'Content-Type': CONTENT_TYPE, 'Content-Length': '0' });
      res.end();
      return;
    }
    metrics.render().then(
      (body) => {
        res.writeHead(200, { 'Content-Type': CONTENT_TYPE, 'Content-Length': String(Buffer.byteLength(body)) });
        res.end(body);
      },
      (err: unknown) => {
        const msg = err instanceof Error ? err.message : String(err);
        res.writeHead(500, { 'Content-Type': CONTENT_TYPE, 'Content-Length': String(Buffer.byteLength(msg)) });
        res.end(msg);
      },
    );
  });

  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen(options.port, options.address ?? '0.0.0.0', () => {
      server.off('error', onError);
      // Without a listener an accept error would be an uncaught 'error' event.
      server.on('error', (err) => options.descriptors?.report(err));
      const port = (server.address() as AddressInfo).port;
      resolve({
        port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            // Scrapers keep connections alive; don't let them hold shutdown.
            server.closeAllConnections();
          }),
      });
    });
  });
}
