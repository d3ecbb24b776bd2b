// The control header of segment n0 and the constants of docs/ipc.md ("Control header",
// "Rings", "Arenas"), declared once. Both bindings export kConstants as they are — the Node addon
// as `layout` (src/backends/python/ipc/shm-layout.ts), the stub's _tritium_ipc as module
// attributes (stub/tritium_stub/ipc.py) — so no other file spells an offset. Change one here,
// bump kLayoutVersion, and both processes follow on the next build.
//
// Every hot field sits on its own 64-byte cache line so the two processes never false-share.
#pragma once

#include <cstdint>

namespace tritium {
namespace ring {

constexpr char kMagic[8] = {'T', 'R', 'I', 'T', 'I', 'U', 'M', '1'};
constexpr uint32_t kLayoutVersion = 1;
constexpr uint64_t kHeaderSize = 4096;

// Header offsets.
constexpr uint64_t kOffMagic = 0;         // 8 bytes ASCII
constexpr uint64_t kOffVersion = 8;       // u32
constexpr uint64_t kOffHeaderSize = 12;   // u32
constexpr uint64_t kOffCapacity = 16;     // u64, bytes per ring, a power of two
constexpr uint64_t kOffRingAData = 24;    // u64
constexpr uint64_t kOffRingBData = 32;    // u64
constexpr uint64_t kOffArena = 40;        // u64, Node's arena in n0
constexpr uint64_t kOffArenaSize = 48;    // u64
constexpr uint64_t kOffHeartbeat = 64;    // u64, CLOCK_MONOTONIC ms written by the stub
constexpr uint64_t kOffStubPid = 72;      // u32

// One ring's control words: u64 consumer and producer positions (bytes, only growing), the u32
// doorbell futex (+1 per publish), u32 `sleeping` (1 while the consumer is in FUTEX_WAIT) and
// u32 `producer_waiting` (1 while the producer waits for room).
struct Offsets {
  uint64_t head, tail, doorbell, sleeping, producer_waiting;
};
constexpr Offsets kRingA{128, 192, 256, 260, 264};  // Node -> stub
constexpr Offsets kRingB{320, 384, 448, 452, 456};  // stub -> Node

// Records.
constexpr uint32_t kFragMore = 0x80000000u;
constexpr uint32_t kWrapMarker = 0xFFFFFFFFu;
constexpr uint64_t kRecordAlign = 8;

// Sizes.
constexpr uint64_t kMinCapacity = 4096;            // smallest ring
constexpr uint64_t kDefaultCapacity = 1 << 16;     // ring size unless a test asks for another
constexpr uint64_t kMinSegmentBytes = 1 << 20;     // smallest n0
constexpr uint64_t kSegmentRound = 1 << 16;        // arena segments are a multiple of this
constexpr uint64_t kBlockAlign = 64;               // arena blocks: a cache line, fine for any dtype
// A response's output of at most this many bytes travels inside the stub's message (an inline
// descriptor, docs/ipc.md) instead of in an arena block: no block to allocate, hand back and free.
constexpr uint64_t kInlineOutputBytes = 256;

struct Constant {
  const char* name;
  uint64_t value;
};

// What the bindings export, under the names the TypeScript and Python sides use.
constexpr Constant kConstants[] = {
    {"LAYOUT_VERSION", kLayoutVersion},
    {"HEADER_SIZE", kHeaderSize},
    {"OFF_MAGIC", kOffMagic},
    {"OFF_VERSION", kOffVersion},
    {"OFF_HEADER_SIZE", kOffHeaderSize},
    {"OFF_RING_CAPACITY", kOffCapacity},
    {"OFF_RING_A_DATA", kOffRingAData},
    {"OFF_RING_B_DATA", kOffRingBData},
    {"OFF_ARENA", kOffArena},
    {"OFF_ARENA_SIZE", kOffArenaSize},
    {"OFF_HEARTBEAT", kOffHeartbeat},
    {"OFF_STUB_PID", kOffStubPid},
    {"RING_A_HEAD", kRingA.head},
    {"RING_A_TAIL", kRingA.tail},
    {"RING_A_DOORBELL", kRingA.doorbell},
    {"RING_A_SLEEPING", kRingA.sleeping},
    {"RING_A_PRODUCER_WAITING", kRingA.producer_waiting},
    {"RING_B_HEAD", kRingB.head},
    {"RING_B_TAIL", kRingB.tail},
    {"RING_B_DOORBELL", kRingB.doorbell},
    {"RING_B_SLEEPING", kRingB.sleeping},
    {"RING_B_PRODUCER_WAITING", kRingB.producer_waiting},
    {"FRAG_MORE", kFragMore},
    {"WRAP_MARKER", kWrapMarker},
    {"RECORD_ALIGN", kRecordAlign},
    {"MIN_RING_BYTES", kMinCapacity},
    {"DEFAULT_RING_BYTES", kDefaultCapacity},
    {"MIN_SEGMENT_BYTES", kMinSegmentBytes},
    {"SEGMENT_ROUND", kSegmentRound},
    {"BLOCK_ALIGN", kBlockAlign},
    {"INLINE_OUTPUT_BYTES", kInlineOutputBytes},
};

}  // namespace ring
}  // namespace tritium
