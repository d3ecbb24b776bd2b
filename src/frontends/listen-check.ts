/**
 * @module frontends/listen-check
 * Finds, before any model loads, that a frontend could not listen where its flags say: a port
 * another process holds, an address this host lacks, a port below 1024 without the right. The
 * real tritonserver finds a taken port only after loading every model (docs/protocol-notes.md,
 * "Command line"); a script restarting a server whose models take minutes to load should not
 * wait that long to learn it. Each address and port is bound for a moment and let go; the
 * frontends bind again when they start, and a port taken in between is reported the same way
 * (`listenFailure`).
 */
import net from 'node:net';
import { listenShared, numericAddress } from './threads/listen-socket.js';

export interface Listener {
  /** tritonserver's name for the service in its message: "HTTP", "GRPC", "Metrics". */
  service: string;
  address: string;
  port: number;
  /** The flags that choose it, named in the message. */
  portFlag: string;
  addressFlag: string;
  /** Bound with SO_REUSEPORT (frontend threads, --reuse-*-port): a port other such sockets hold is free to it. */
  shared?: boolean;
}

/** The message for a listen error, in tritonserver's words where it has some, naming the flags. */
export function listenFailure(l: Listener, err: NodeJS.ErrnoException): string {
  const socket = `'${l.address}:${l.port}'`;
  switch (err.code) {
    case 'EADDRINUSE':
      return `failed to start ${l.service} service: Unavailable - Socket ${socket} already in use; stop what holds it or choose another port with ${l.portFlag}`;
    case 'EACCES':
      return `failed to start ${l.service} service: Socket ${socket}: permission denied (ports below 1024 need privileges); choose another port with ${l.portFlag}`;
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return `failed to start ${l.service} service: Socket ${socket}: no such address on this host; change ${l.addressFlag}`;
    default:
      return `failed to start ${l.service} service: Socket ${socket}: ${err.message}; check ${l.addressFlag} and ${l.portFlag}`;
  }
}

/** Resolves with the failure message of the first listener that cannot bind, or undefined. */
export async function checkListeners(listeners: readonly Listener[]): Promise<string | undefined> {
  for (const l of listeners) {
    if (l.port === 0) continue; // an ephemeral port is always free
    const failure = await new Promise<string | undefined>((resolve) => {
      const server = net.createServer();
      server.once('error', (err: NodeJS.ErrnoException) => resolve(listenFailure(l, err)));
      const closed = (): void => void server.close(() => resolve(undefined));
      if (!l.shared) {
        server.listen({ port: l.port, host: l.address, exclusive: true }, closed);
        return;
      }
      numericAddress(l.address)
        .then((ip) => server.listen({ fd: listenShared(ip, l.port).fd }, closed))
        .catch((err: NodeJS.ErrnoException) => resolve(listenFailure(l, err)));
    });
    if (failure !== undefined) return failure;
  }
  return undefined;
}
