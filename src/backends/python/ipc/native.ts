/**
 * @module backends/python/ipc/native
 * Typed loader for the `tritium_native` addon (native/, built by `npm run build:native`).
 * The addon maps memory, passes segment descriptors, wakes futexes, watches the wake eventfd,
 * and runs Node's side of the protocol core the stub's extension compiles too: the header layout
 * (`layout`, native/src/layout.h), the rings (`createRingLink`, ring_core.h) and the arenas
 * (`createArena`, arena_core.h). Messages, and what to send when, are TypeScript.
 */
import { createRequire } from 'node:module';

/**
 * An eventfd watched by the event loop (a libuv poll handle): the stub writes it after
 * publishing on ring B when Node asked to be woken (docs/ipc.md, "Waking Node").
 */
export interface WakeListener {
  /** The eventfd, close-on-exec; hand it to the stub as an inherited fd. -1 once closed. */
  readonly fd: number;
  /** Stops watching and closes the fd. Idempotent. */
  close(): void;
  /** Keep the event loop alive while this listener is open (the default). */
  ref(): void;
  /** Let the process exit even though this listener is open. */
  unref(): void;
}

/**
 * Node's end of the two rings of segment n0 (docs/ipc.md, "Rings"): produces ring A, consumes
 * ring B, starting at the positions the header holds when it is created.
 */
export interface RingLink {
  /**
   * Writes `bytes` from `offset` (below `bytes.byteLength`, or 0) into ring A as far as it has
   * room, in fragments when larger than a record may be; returns the offset reached,
   * `bytes.byteLength` once all of it is in. The stub sees nothing before `publish`.
   */
  write(bytes: Uint8Array, offset: number): number;
  /**
   * Makes what `write` put in ring A visible: stores tail, bumps the doorbell, and FUTEX_WAKEs
   * the stub only when it said it sleeps. Does nothing when nothing was written since.
   */
  publish(): void;
  /** Ring B holds records not yet received (perhaps only the start of a message). */
  hasData(): boolean;
  /**
   * Copies the next complete ring-B message (fragments reassembled) into `scratch` and returns
   * its length; -1 when there is none. A length above `scratch.byteLength` means it did not
   * fit and stays pending: grow `scratch` and call again. Throws on a corrupt ring.
   */
  receive(scratch: Uint8Array): number;
}

/**
 * One of Node's input arenas: first-fit blocks with coalescing over `[base, base + size)` of a
 * segment (docs/ipc.md, "Arenas"; metadata in this process only).
 */
export interface Arena {
  /** Offset of a block of at least `nbytes` (0 is allowed and gets a minimal block), or -1. */
  alloc(nbytes: number): number;
  /** Returns a block; throws on an offset this arena did not hand out (double free included). */
  release(offset: number): void;
  owns(offset: number): boolean;
  blocksInUse(): number;
  bytesFree(): number;
}

/** native/src/layout.h's constants: `MAGIC` and the numbers of its kConstants table. */
export type Layout = { readonly MAGIC: string } & { readonly [name: string]: number };

export interface NativeAddon {
  /** The header offsets and ring/arena constants (docs/ipc.md, "Control header"). */
  layout: Layout;
  /** A new arena over `[base, base + size)`, blocks aligned to `align` (a power of two). */
  createArena(base: number, size: number, align: number): Arena;
  /** O_CREAT|O_EXCL + ftruncate + posix_fallocate + mmap; throws an Error with `code` (ENOSPC, EEXIST...). */
  createShm(name: string, size: number): SharedArrayBuffer;
  /** Maps an existing segment; its size comes from fstat. */
  openShm(name: string): SharedArrayBuffer;
  /** shm_unlink; false when the name did not exist. */
  unlinkShm(name: string): boolean;
  /** Returns the shared pages now (the range becomes private zero memory until GC unmaps it). */
  releaseShm(buffer: SharedArrayBuffer): void;
  /** Punches the whole segment out of tmpfs (MADV_REMOVE); mappings stay valid and read zeros. */
  hollowShm(buffer: SharedArrayBuffer): void;
  /** posix_fallocate of [offset, offset + length) of the named segment; throws with `code` ENOSPC when /dev/shm is full. */
  reserveShm(name: string, offset: number, length: number): void;
  /** '' when memfd_create works here, else why not (ENOSYS, or a seccomp filter's EPERM). */
  probeMemfd(): string;
  /** memfd_create (close-on-exec) + ftruncate + posix_fallocate + mmap; the caller owns `fd`. Throws with `code` (ENOMEM, ENOSPC...). */
  createMemfd(name: string, size: number): { fd: number; buffer: SharedArrayBuffer };
  /** Maps a segment held by a descriptor (size from fstat); the caller still owns `fd`. */
  mapFd(fd: number): SharedArrayBuffer;
  /** posix_fallocate of [offset, offset + length) of the segment held by `fd`. */
  reserveFd(fd: number, offset: number, length: number): void;
  /** An AF_UNIX SOCK_SEQPACKET pair, close-on-exec: [this process's end, the stub's end]. */
  socketPair(): [number, number];
  /** A pipe, both ends close-on-exec: [read end, write end] (a forked stub's stdio, fork-server.ts). */
  pipe(): [number, number];
  /** A close-on-exec duplicate of `fd`, owned by the caller. */
  dupFd(fd: number): number;
  /**
   * Sends `fds` (at most 253) with `names` (comma-separated segment names, or a fork request's
   * JSON: at most 64 KiB) as one datagram (SCM_RIGHTS), without blocking; throws with `code` EAGAIN while the peer has not read what is queued, EPIPE when it is gone.
   */
  sendFds(socket: number, fds: number[], names: string): void;
  /** The next datagram queued on `socket` (descriptors close-on-exec, owned by the caller), or null when none is. */
  recvFds(socket: number): { names: string; fds: number[] } | null;
  /**
   * One non-blocking send(2) of `bytes` on socket `fd`: the bytes the kernel took, or -errno
   * (-EAGAIN when it took none). For frontends/socket-write.ts only.
   */
  writeSocket(fd: number, bytes: Uint8Array): number;
  /** FUTEX_WAKE (non-private) on the u32 at byteOffset; returns the number of woken waiters. */
  futexWake(buffer: SharedArrayBuffer, byteOffset: number): number;
  /** Checks n0's control header (throws an Error saying what is wrong) and attaches to its rings. */
  createRingLink(n0: SharedArrayBuffer): RingLink;
  /** dlopen(file, RTLD_NOW | RTLD_GLOBAL) for the life of the process; throws the loader's message (onnx/cuda/preload.ts). */
  loadSharedLibrary(file: string): void;
  /** execve(2): runs `file` in this process with `argv` and its environment; returns only by throwing (cli/node-flags.ts). */
  execve(file: string, argv: string[]): never;
  /**
   * Creates the eventfd and calls `onWake` on the loop when it becomes readable, and before the
   * loop would block when ring B of `n0` holds messages the stub published without writing it
   * (the listener owns ring B's `sleeping` word: it asks only when the loop is about to sleep).
   * After each wake-up the loop keeps polling without blocking for as long as the spin policy
   * allows.
   */
  WakeListener: new (
    onWake: () => void,
    n0: SharedArrayBuffer,
    opts?: { spinUs?: number; spinMode?: 'adaptive' | 'always' | 'never' },
  ) => WakeListener;
  /** The server side of one HTTP/2 connection over Node's nghttp2 (native/src/h2_session.cc; frontends/grpc/transport/h2-session.ts). */
  H2Session: new (opts: {
    maxConcurrentStreams: number;
    initialWindowSize: number;
  }) => NativeH2Session;
  /** A header block converted once, for blocks sent on many calls ([name, value, ...]). */
  H2HeaderBlock: new (
    fields: readonly string[],
  ) => H2HeaderBlock;
}

/** Opaque: native/src/h2_session.cc's H2HeaderBlock. */
export interface H2HeaderBlock {
  readonly __h2HeaderBlock?: never;
}

/** A header argument of NativeH2Session: a block made once, or [name, value, ...]. */
export type H2Fields = H2HeaderBlock | readonly string[];

/** native/src/h2_session.cc; the event records are listed there. */
export interface NativeH2Session {
  /** Where receive(), flush() and more() put events: ev[0] fields from ev[2], ev[1] = 1 when more() has more; objects by index. */
  bind(ev: Float64Array, objects: unknown[]): void;
  /** 0 with the events the bytes caused in the bound array, or a negative nghttp2 error (the connection is broken). */
  receive(chunk: Uint8Array): number;
  /** The next events into the bound array. */
  more(): void;
  /**
   * What nghttp2 has to send: its length when it fit in `out` (copied there; 0: nothing), else
   * the bytes in a buffer of their own. Streams closed meanwhile are events in the bound array.
   */
  flush(out: Uint8Array): number | Buffer;
  /** A unary answer: headers, the message framed, trailers. False when the stream is gone or already answering. */
  answer(stream: number, headers: H2Fields, message: Uint8Array, trailers: H2Fields): boolean;
  respond(stream: number, headers: H2Fields, body: boolean): number;
  write(stream: number, bytes: Uint8Array): boolean;
  end(stream: number, trailers?: H2Fields): boolean;
  reset(stream: number, code: number): void;
  consume(stream: number, bytes: number): void;
  queued(stream: number): number;
  ping(): boolean;
  goaway(code: number, debug?: Uint8Array, lastStreamId?: number): void;
  setLocalWindowSize(bytes: number): void;
  /** 1: nghttp2 expects to read, 2: it has something to write; 0: the connection is done. */
  wantIo(): number;
  destroy(): void;
}

// Same relative path from src/backends/python/ipc and dist/backends/python/ipc.
const ADDON_PATH = '../../../../native/build/Release/tritium_native.node';

let cached: NativeAddon | undefined;

/** Loads the addon once; throws an actionable error when it has not been built. */
export function loadNative(): NativeAddon {
  if (cached) return cached;
  const require = createRequire(import.meta.url);
  try {
    cached = require(ADDON_PATH) as NativeAddon;
  } catch (e) {
    const err = new Error(`cannot load the tritium native addon (${ADDON_PATH}): ${(e as Error).message}. ` + 'Build it with `npm run build:native`.');
    (err as Error & { cause?: unknown }).cause = e;
    throw err;
  }
  return cached;
}
