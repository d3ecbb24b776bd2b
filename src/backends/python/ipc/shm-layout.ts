/**
 * @module backends/python/ipc/shm-layout
 * The control header of segment `n0` and the ring and arena constants (docs/ipc.md, "Control
 * header"): native/src/layout.h's table as the addon exports it. The stub's extension exports
 * the same table from the same header, so neither side spells an offset and they cannot drift;
 * a change is made in layout.h (with its version bumped) and reaches both on the next build.
 */
import { loadNative } from './native.js';

const L = loadNative().layout;

/** The 8 ASCII bytes n0 starts with. */
export const MAGIC = L.MAGIC;
export const LAYOUT_VERSION = L.LAYOUT_VERSION;
export const HEADER_SIZE = L.HEADER_SIZE;

export const OFF_MAGIC = L.OFF_MAGIC;
export const OFF_VERSION = L.OFF_VERSION; // u32
export const OFF_HEADER_SIZE = L.OFF_HEADER_SIZE; // u32
export const OFF_RING_CAPACITY = L.OFF_RING_CAPACITY; // u64, bytes per ring, a power of two
export const OFF_RING_A_DATA = L.OFF_RING_A_DATA; // u64
export const OFF_RING_B_DATA = L.OFF_RING_B_DATA; // u64
export const OFF_ARENA = L.OFF_ARENA; // u64, Node's arena in n0
export const OFF_ARENA_SIZE = L.OFF_ARENA_SIZE; // u64
export const OFF_HEARTBEAT = L.OFF_HEARTBEAT; // u64, CLOCK_MONOTONIC ms written by the stub
export const OFF_STUB_PID = L.OFF_STUB_PID; // u32

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

const ring = (r: 'A' | 'B'): RingOffsets =>
  Object.freeze({
    head: L[`RING_${r}_HEAD`],
    tail: L[`RING_${r}_TAIL`],
    doorbell: L[`RING_${r}_DOORBELL`],
    sleeping: L[`RING_${r}_SLEEPING`],
    producerWaiting: L[`RING_${r}_PRODUCER_WAITING`],
  });

/** Ring A: Node → stub. */
export const RING_A = ring('A');
/** Ring B: stub → Node. */
export const RING_B = ring('B');

/** Arena blocks start on this boundary (cache line; also fine for any numpy dtype). */
export const BLOCK_ALIGN = L.BLOCK_ALIGN;
/** Smallest n0 segment (docs/ipc.md). */
export const MIN_SEGMENT_BYTES = L.MIN_SEGMENT_BYTES;
export const DEFAULT_RING_BYTES = L.DEFAULT_RING_BYTES;
export const MIN_RING_BYTES = L.MIN_RING_BYTES;
/** Input and output segments past n0 are a multiple of this. */
export const SEGMENT_ROUND = L.SEGMENT_ROUND;
