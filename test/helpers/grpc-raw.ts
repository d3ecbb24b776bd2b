/**
 * @module test/helpers/grpc-raw
 * Raw gRPC calls over node:http2, for tests that need to control what goes on the wire (half a
 * message, a stalled sender, a damaged payload) where a gRPC client library would not let them.
 * Messages are framed with the transport's own `frameMessage`.
 */
import type http2 from 'node:http2';

export { frameMessage } from '../../src/frontends/grpc/transport/message-reader.js';

/** Opens a call of GRPCInferenceService/`method` on `session`; the caller writes framed messages and ends. */
export function grpcCall(session: http2.ClientHttp2Session, method: string): http2.ClientHttp2Stream {
  const stream = session.request({
    ':method': 'POST',
    ':path': `/inference.GRPCInferenceService/${method}`,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => {});
  return stream;
}

export interface CallWatch {
  /** grpc-status, from the trailers or the headers of a trailers-only answer. */
  status?: string;
  /** grpc-message, decoded. */
  message?: string;
  /** DATA chunks received, in order. */
  chunks: Buffer[];
  closed: boolean;
  /** performance.now() at close. */
  closedAt?: number;
  /** Resolves with this record once the stream closed. */
  done: Promise<CallWatch>;
}

/** Records what the server answers on `stream`. */
export function watchCall(stream: http2.ClientHttp2Stream): CallWatch {
  const w = { chunks: [] as Buffer[], closed: false } as CallWatch;
  const status = (h: http2.IncomingHttpHeaders): void => {
    if (h['grpc-status'] === undefined) return;
    w.status = String(h['grpc-status']);
    w.message = decodeURIComponent(String(h['grpc-message'] ?? ''));
  };
  stream.on('response', status);
  stream.on('trailers', status);
  stream.on('data', (d: Buffer) => w.chunks.push(d));
  w.done = new Promise((resolve) =>
    stream.on('close', () => {
      w.closed = true;
      w.closedAt = performance.now();
      resolve(w);
    }),
  );
  return w;
}
