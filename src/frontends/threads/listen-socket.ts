/**
 * @module frontends/threads/listen-socket
 * Listening sockets with SO_REUSEPORT, which Node 20's `net` cannot open (Node ≥ 22.12 has
 * `reusePort`): opened by the native addon (native/src/listen_socket.cc) and adopted by a
 * server with `listen({ fd })`.
 */
import dns from 'node:dns/promises';
import net from 'node:net';
import { createRequire } from 'node:module';

interface ListenAddon {
  listenSocket(ip: string, port: number, reusePort: boolean, backlog: number): [number, number];
}

// Same relative path from src/frontends/threads and dist/frontends/threads.
const ADDON_PATH = '../../../native/build/Release/tritium_native.node';
/** libuv's default backlog for `listen()`. */
const BACKLOG = 511;

let addon: ListenAddon | undefined;

function load(): ListenAddon {
  addon ??= createRequire(import.meta.url)(ADDON_PATH) as ListenAddon;
  return addon;
}

/** The numeric address `address` names (a host name resolves as `net` would resolve it). */
export async function numericAddress(address: string): Promise<string> {
  if (net.isIP(address) !== 0) return address;
  return (await dns.lookup(address)).address;
}

/** A listening socket on ip:port that other sockets may share; port 0 picks one. */
export function listenShared(ip: string, port: number): { fd: number; port: number } {
  const [fd, bound] = load().listenSocket(ip, port, true, BACKLOG);
  return { fd, port: bound };
}
