/**
 * @module backends/python/ipc/native
 * Typed loader for the `tritium_native` addon (native/, built by `npm run build:native`).
 * The addon only maps memory, passes segment descriptors, wakes futexes and watches the wake
 * eventfd; all protocol logic stays in TypeScript.
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

export interface NativeAddon {
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
  /**
   * Sends `fds` (at most 253) with their comma-separated `names` as one datagram (SCM_RIGHTS),
   * without blocking; throws with `code` EAGAIN while the peer has not read what is queued, EPIPE when it is gone.
   */
  sendFds(socket: number, fds: number[], names: string): void;
  /** The next datagram queued on `socket` (descriptors close-on-exec, owned by the caller), or null when none is. */
  recvFds(socket: number): { names: string; fds: number[] } | null;
  /** FUTEX_WAKE (non-private) on the u32 at byteOffset; returns the number of woken waiters. */
  futexWake(buffer: SharedArrayBuffer, byteOffset: number): number;
  /**
   * Creates the eventfd and calls `onWake` on the loop each time it becomes readable; after each
   * wake-up the loop keeps polling without blocking for as long as the spin policy allows.
   */
  WakeListener: new (
    onWake: () => void,
    opts?: { spinUs?: number; spinMode?: 'adaptive' | 'always' | 'never' },
  ) => WakeListener;
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
