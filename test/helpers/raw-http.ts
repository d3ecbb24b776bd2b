/**
 * Test helper: HTTP/1.1 on a raw loopback `node:net` socket, for what an HTTP client library
 * will not send (pipelined requests, a half-close, malformed heads, a head whose body never
 * follows), and a splitter for the responses that come back.
 */
import net from 'node:net';

export interface RawReply {
  /** Everything the server sent, as bytes. */
  bytes: Buffer;
  /** The server closed the connection (FIN or reset) before `timeoutMs`. */
  closed: boolean;
}

export interface RawOptions {
  /** Shut down our sending side (FIN) once `parts` are written; otherwise it stays open. */
  halfClose?: boolean;
  /** How long to wait for the server to close; what it sent by then is returned. */
  timeoutMs?: number;
}

/** Writes `parts` on a fresh connection and collects what the server sends until it closes. */
export function rawExchange(port: number, parts: Array<string | Buffer>, o: RawOptions = {}): Promise<RawReply> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const done = (closed: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ bytes: Buffer.concat(chunks), closed });
    };
    const timer = setTimeout(() => done(false), o.timeoutMs ?? 30_000);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('close', () => done(true));
    // A reset after the answer is still the server closing; what it sent is kept.
    socket.on('error', () => done(true));
    socket.on('connect', () => {
      for (const p of parts) socket.write(p);
      if (o.halfClose) socket.end();
    });
  });
}

export interface ParsedResponse {
  status: number;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Splits a byte stream into HTTP responses (Content-Length or chunked framing; 1xx responses
 * have no body); the responses whose index is in `headOnly` answered HEAD and carry no body
 * whatever their headers say.
 */
export function parseResponses(all: Buffer, headOnly: ReadonlySet<number> = new Set()): ParsedResponse[] {
  const out: ParsedResponse[] = [];
  let i = 0;
  while (i < all.length) {
    const end = all.indexOf('\r\n\r\n', i);
    if (end < 0) break;
    const lines = all.toString('latin1', i, end).split('\r\n');
    const status = Number(lines[0]!.split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const c = l.indexOf(':');
      headers[l.slice(0, c).toLowerCase()] = l.slice(c + 1).trim();
    }
    i = end + 4;
    if (status >= 100 && status < 200) {
      out.push({ status, headers, body: Buffer.alloc(0) });
      continue;
    }
    if (headOnly.has(out.length)) {
      out.push({ status, headers, body: Buffer.alloc(0) });
    } else if (headers['transfer-encoding'] === 'chunked') {
      const parts: Buffer[] = [];
      for (;;) {
        const le = all.indexOf('\r\n', i);
        const n = parseInt(all.toString('latin1', i, le), 16);
        i = le + 2;
        if (n === 0) {
          i += 2;
          break;
        }
        parts.push(all.subarray(i, i + n));
        i += n + 2;
      }
      out.push({ status, headers, body: Buffer.concat(parts) });
    } else {
      const n = Number(headers['content-length'] ?? 0);
      out.push({ status, headers, body: all.subarray(i, i + n) });
      i += n;
    }
  }
  return out;
}

/**
 * Sends one `POST path` with a JSON body on a fresh connection and returns a function that
 * resets it (RST): how a client that goes away looks to the server. A FIN after a whole
 * request is a half-close, which the server still answers (test/e2e/http-half-close.test.ts).
 */
export function postThenReset(port: number, path: string, body: string): () => void {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  return () => socket.resetAndDestroy();
}
