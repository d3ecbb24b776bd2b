/**
 * @module backends/python/ipc/shm-layout
 * Byte offsets of the control header at the start of segment `n0` (docs/ipc.md, "Control
 * header"). Mirrored by stub/tritium_stub/ipc.py and native/src/ring_core.h (test/ipc-contract.test.ts
 * compares them); change them together and bump LAYOUT_VERSION. The rings' record format is not
 * here: Node's ring code is ring_core.h's, through the addon's createRingLink.
 * Every hot field sits on its own 64-byte cache line so the two processes never false-share.
 */

export const MAGIC = 'TRITIUM1';
export const LAYOUT_VERSION = 1;
export const HEADER_SIZE = 4096;

export const OFF_MAGIC = 0; // 8 bytes ASCII
export const OFF_VERSION = 8; // u32
export const OFF_HEADER_SIZE = 12; // u32
export const OFF_RING_CAPACITY = 16; // u64, bytes per ring, power of two
export const OFF_RING_A_DATA = 24; // u64
export const OFF_RING_B_DATA = 32; // u64
export const OFF_ARENA = 40; // u64, Node's arena in n0
export const OFF_ARENA_SIZE = 48; // u64
export const OFF_HEARTBEAT = 64; // u64, CLOCK_MONOTONIC ms written by the stub
export const OFF_STUB_PID = 72; // u32

/** Offsets of one ring's control words. */
export interface RingOffsets {
  /** u64 consumer position (bytes, monotonically increasing). */
  head: number;
  /** u64 producer position. */
  tail: number;
  /** u32 futex word, +1 per publish. */
  doorbell: number;
  /** u32, 1 while the consumer sleeps in FUTEX_WAIT (producer may skip futex_wake when 0). */
  sleeping: number;
  /** u32, 1 while the producer waits for free space (consumer then signals the other ring). */
  producerWaiting: number;
}

/** Ring A: Node → stub. */
export const RING_A: RingOffsets = { head: 128, tail: 192, doorbell: 256, sleeping: 260, producerWaiting: 264 };
/** Ring B: stub → Node. */
export const RING_B: RingOffsets = { head: 320, tail: 384, doorbell: 448, sleeping: 452, producerWaiting: 456 };

/** Arena blocks start on this boundary (cache line; also fine for any numpy dtype). */
export const BLOCK_ALIGN = 64;
/** Smallest n0 segment (docs/ipc.md). */
export const MIN_SEGMENT_BYTES = 1 << 20;
export const DEFAULT_RING_BYTES = 1 << 16;
export const MIN_RING_BYTES = 1 << 12;

export const SHM_DIR = '/dev/shm';
