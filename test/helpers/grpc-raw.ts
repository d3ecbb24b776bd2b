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

/**
 * One HTTP/2 frame as bytes (RFC 9113, 4.1), for tests that write a connection by hand;
 * `declared` is the length the header announces (the payload's unless a test makes it lie).
 */
export function h2Frame(type: number, flags: number, stream: number, payload: Buffer, declared = payload.length): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(declared & 0xffffff, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream >>> 0, 5);
  return Buffer.concat([head, payload]);
}

/** An HPACK block of literal fields without indexing, names as literals (RFC 7541, 6.2.2); names and values under 128 bytes. */
export function hpackLiterals(fields: readonly (readonly [string, string])[]): Buffer {
  const literal = (s: string): Buffer => {
    const b = Buffer.from(s);
    if (b.length > 127) throw new Error(`hpackLiterals: '${s}' needs a longer length prefix than this helper writes`);
    return Buffer.concat([Buffer.from([b.length]), b]);
  };
  return Buffer.concat(fields.map(([n, v]) => Buffer.concat([Buffer.from([0]), literal(n), literal(v)])));
}
