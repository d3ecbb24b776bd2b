/**
 * @module backends/python/ipc/native
 * Typed loader for the `tritium_native` addon (native/, built by `npm run build:native`).
 * The addon only maps memory and waits on futexes; all protocol logic stays in TypeScript.
 */
import { createRequire } from 'node:module';

export interface DoorbellWaiterOptions {
  /** Busy-wait this long (µs) after the last change before sleeping in FUTEX_WAIT. */
  spinUs?: number;
  /** adaptive (default): poll only when recent messages came within spinUs and a core is idle. */
  spinMode?: 'adaptive' | 'always' | 'never';
  /** Call sched_yield() between polls instead of a pause loop (cheap when nothing else wants the core). */
  spinYield?: boolean;
  /** FUTEX_WAIT timeout (ms); only bounds how quickly close() is noticed. */
  timeoutMs?: number;
  /** u32 word the thread sets to 1 while asleep, so producers can skip futex_wake when 0. */
  sleepFlagOffset?: number;
}

export interface DoorbellWaiter {
  /** Stops and joins the thread, releases the thread-safe function. Idempotent. */
  close(): void;
  /** Keep the event loop alive while this waiter is open (the default). */
  ref(): void;
  /** Let the process exit even though this waiter is open. */
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
  /** FUTEX_WAKE (non-private) on the u32 at byteOffset; returns the number of woken waiters. */
  futexWake(buffer: SharedArrayBuffer, byteOffset: number): number;
  DoorbellWaiter: new (
    buffer: SharedArrayBuffer,
    byteOffset: number,
    onChange: () => void,
    opts?: DoorbellWaiterOptions,
  ) => DoorbellWaiter;
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
    const err = new Error(
      `cannot load the tritium native addon (${ADDON_PATH}): ${(e as Error).message}. ` +
        'Build it with `npm run build:native`.',
    );
    (err as Error & { cause?: unknown }).cause = e;
    throw err;
  }
  return cached;
}
