/**
 * @module frontends/socket-write
 * An answer handed to the kernel straight from its bytes when its connection has nothing
 * queued: one `send(2)` through the addon (`writeSocket`, native/src/socket_write.cc) instead of
 * Node's write path, whose stream bookkeeping, `WriteWrap` and deferred callback cost about as
 * much per small answer as building it (≈ 7 % of the HTTP server's samples at concurrency 16).
 * What the kernel does not take at once, and any error, go on through `socket.write` as before,
 * behind nothing, so the order of bytes and the way a broken connection is reported do not
 * change. Plain TCP sockets only: a TLS socket's bytes must pass through its TLS layer.
 */
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { loadNative } from '../backends/python/ipc/native.js';

const native = loadNative();

/** What this module reads of a net.Socket beyond its public surface. */
interface SocketInternals {
  /** Node's TCP handle, which exposes its descriptor (null once closed). */
  _handle?: { fd?: unknown } | null;
  /** Restarts the socket's idle timer, as each of Node's own writes does. */
  _unrefTimer?: () => void;
}

/** The socket's descriptor when bytes written now would leave first and unencrypted, else -1. */
function idleDescriptor(socket: Socket): number {
  if (socket.writableLength !== 0 || socket.writableCorked !== 0 || !socket.writable || (socket as TLSSocket).encrypted === true) return -1;
  const s = socket as unknown as SocketInternals;
  // Without either (another platform's pipe, a closed handle, a Node that renamed them) the
  // bytes take Node's path: a write must restart the idle timer (http/wire/connection.ts).
  const fd = s._handle?.fd;
  return typeof fd === 'number' && fd >= 0 && typeof s._unrefTimer === 'function' ? fd : -1;
}

/**
 * Writes `bytes` to `socket` as `socket.write(bytes, done)` does: `done` runs once they are
 * all with the kernel (or the write failed), never before this returns; the result is false
 * when the socket's buffer is over its high-water mark.
 */
export function writeToSocket(socket: Socket, bytes: Buffer, done?: () => void): boolean {
  const fd = idleDescriptor(socket);
  if (fd >= 0) {
    const n = native.writeSocket(fd, bytes);
    if (n > 0) (socket as unknown as SocketInternals)._unrefTimer!();
    if (n === bytes.length) {
      if (done !== undefined) queueMicrotask(done);
      return true;
    }
    if (n > 0) bytes = bytes.subarray(n);
  }
  return socket.write(bytes, done);
}
