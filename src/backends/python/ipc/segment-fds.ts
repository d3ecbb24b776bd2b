/**
 * @module backends/python/ipc/segment-fds
 * Node's end of the socket pair that carries memfd segments between Node and one stub
 * (docs/ipc.md, "Segments").
 *
 * Node → stub: a new n<k> is queued (`send`) and goes out, with every other queued one, in one
 * datagram just before the next ring-A message (`flush`), so a batch that grows several
 * segments costs one datagram. A SEQPACKET socket queues only a few datagrams (net.unix.
 * max_dgram_qlen, 10 by default); when the stub has not read them yet, `flush` says so and the
 * channel tries again shortly: the stub waits for a segment a message names until it arrives.
 *
 * Stub → Node: the stub passes each s<k> before any message names it, so when a message names a
 * segment Node has not mapped, its descriptor is already queued here (`take`); none means the
 * stub made a /dev/shm file instead. Node also reads what is queued on every `seg` message
 * (`drain`), so the stub's sends never wait long for room.
 */
import fs from 'node:fs';
import type { NativeAddon } from './native.js';

/** The kernel's SCM_MAX_FD: descriptors one datagram may carry. */
const MAX_FDS_PER_DATAGRAM = 253;

export class SegmentFdLink {
  private sock: number;
  /** The stub's end, inherited at spawn; closed here once the stub has its copy. */
  private stubEnd: number;
  /** Node's segments not passed yet (the descriptors stay owned by their segments). */
  private pending: Array<{ name: string; fd: number }> = [];
  /** The stub's segments received before a message named them. */
  private readonly arrived = new Map<string, number>();

  constructor(private readonly native: NativeAddon) {
    [this.sock, this.stubEnd] = native.socketPair();
  }

  /** The descriptor to hand the stub at spawn (-1 once `stubSpawned`). */
  get stubFd(): number {
    return this.stubEnd;
  }

  /** The stub holds its end now: Node's copy would only keep the socket open after the stub died. */
  stubSpawned(): void {
    closeQuiet(this.stubEnd);
    this.stubEnd = -1;
  }

  /** Queues segment `name` for the stub; `fd` must stay open until `flush` returned true. */
  send(name: string, fd: number): void {
    this.pending.push({ name, fd });
  }

  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /** Passes the queued segments; false when the stub's queue is full (try again later). */
  flush(): boolean {
    while (this.pending.length > 0) {
      const batch = this.pending.slice(0, MAX_FDS_PER_DATAGRAM);
      try {
        this.native.sendFds(
          this.sock,
          batch.map((p) => p.fd),
          batch.map((p) => p.name).join(','),
        );
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EAGAIN') return false;
        // The stub is gone (EPIPE, ECONNRESET): its exit is reported elsewhere.
        if (code === 'EPIPE' || code === 'ECONNRESET') {
          this.pending = [];
          return true;
        }
        throw e;
      }
      this.pending.splice(0, batch.length);
    }
    return true;
  }

  /** The descriptor of the stub's segment `name`, owned by the caller, or undefined when the stub passed none. */
  take(name: string): number | undefined {
    if (!this.arrived.has(name)) this.drain();
    const fd = this.arrived.get(name);
    this.arrived.delete(name);
    return fd;
  }

  /** Moves every datagram queued into `arrived`. */
  drain(): void {
    for (;;) {
      const got = this.native.recvFds(this.sock);
      if (got === null) return;
      const names = got.names.split(',');
      got.fds.forEach((fd, i) => {
        const name = names[i];
        if (name === undefined) return closeQuiet(fd);
        closeQuiet(this.arrived.get(name) ?? -1); // names are not reused; keep the newest
        this.arrived.set(name, fd);
      });
    }
  }

  close(): void {
    for (const fd of this.arrived.values()) closeQuiet(fd);
    this.arrived.clear();
    this.pending = [];
    closeQuiet(this.sock);
    closeQuiet(this.stubEnd);
    this.sock = -1;
    this.stubEnd = -1;
  }
}

export function closeQuiet(fd: number): void {
  if (fd < 0) return;
  try {
    fs.closeSync(fd);
  } catch {
    // already closed
  }
}
