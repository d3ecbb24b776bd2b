// The control header and the SPSC byte rings of docs/ipc.md over raw shared memory: the one
// implementation of the ring algorithm (record framing, wrap markers, fragments), compiled into
// both bindings, the stub's CPython extension (python_ipc.cc) and the Node addon
// (node_ring.cc). Header-only, no Node/Python types.
//
// Everything read from the ring is treated as hostile: positions, lengths and markers are
// checked against the mapping before any byte is touched, and a violation is reported as
// `Status::kCorrupt` with a reason instead of reading or writing out of bounds.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "layout.h"
#include "wait_core.h"

namespace tritium {
namespace ring {

// A reassembled message larger than this is a corrupt stream, not a tensor (tensors travel in
// arenas; messages only carry descriptors).
constexpr uint64_t kMaxMessage = uint64_t{1} << 30;

inline uint64_t RecordSize(uint64_t payload) { return (4 + payload + kRecordAlign - 1) & ~(kRecordAlign - 1); }

template <typename T>
inline T* At(uint8_t* base, uint64_t off) { return reinterpret_cast<T*>(base + off); }

// Validated geometry of segment n0. `Check` fills `why` and returns false on any mismatch.
struct Layout {
  uint8_t* base = nullptr;
  uint64_t size = 0;
  uint64_t capacity = 0;
  uint64_t a_data = 0;
  uint64_t b_data = 0;

  bool Check(uint8_t* b, uint64_t sz, std::string* why) {
    if (b == nullptr || sz < kHeaderSize) return Fail(why, "segment is smaller than the 4096-byte header");
    if (std::memcmp(b, kMagic, sizeof kMagic) != 0) return Fail(why, "segment has no TRITIUM1 header");
    uint32_t version;
    std::memcpy(&version, b + kOffVersion, 4);
    if (version != kLayoutVersion) return Fail(why, "shm layout version " + std::to_string(version) + ", expected 1");
    uint64_t cap, a, bd;
    std::memcpy(&cap, b + kOffCapacity, 8);
    std::memcpy(&a, b + kOffRingAData, 8);
    std::memcpy(&bd, b + kOffRingBData, 8);
    if (cap < kMinCapacity || (cap & (cap - 1)) != 0 || cap > (uint64_t{1} << 32))
      return Fail(why, "ring capacity " + std::to_string(cap) + " is not a power of two in [4096, 2^32]");
    auto inside = [&](uint64_t off) { return off >= kHeaderSize && off % kRecordAlign == 0 && off <= sz && cap <= sz - off; };
    if (!inside(a) || !inside(bd)) return Fail(why, "ring data offsets lie outside the segment");
    if ((a < bd && a + cap > bd) || (bd < a && bd + cap > a) || a == bd) return Fail(why, "ring data areas overlap");
    base = b;
    size = sz;
    capacity = cap;
    a_data = a;
    b_data = bd;
    return true;
  }

 private:
  static bool Fail(std::string* why, std::string text) {
    if (why) *why = std::move(text);
    return false;
  }
};

// kTooSmall: only from Consumer::NextInto, when the message is larger than the caller's buffer.
enum class Status { kMessage, kEmpty, kCorrupt, kTooSmall };

// Consumer end of one ring. Single thread.
class Consumer {
 public:
  Consumer() = default;
  Consumer(uint8_t* base, uint64_t data_off, uint64_t capacity, Offsets o)
      : base_(base), data_(base + data_off), cap_(capacity), o_(o) {
    head_ = wait::LoadAcquireU64(At<uint64_t>(base_, o_.head));
  }

  uint32_t* doorbell() const { return At<uint32_t>(base_, o_.doorbell); }
  uint32_t* sleeping() const { return At<uint32_t>(base_, o_.sleeping); }
  uint32_t* producer_waiting() const { return At<uint32_t>(base_, o_.producer_waiting); }
  uint64_t tail() const { return wait::LoadAcquireU64(At<uint64_t>(base_, o_.tail)); }
  bool HasData() const { return tail() != head_; }
  // True when the last Next() or NextInto() call moved head (the caller then checks
  // producer_waiting).
  bool advanced() const { return advanced_; }

  // Moves the next complete message into *out. Partial fragments are kept across calls.
  Status Next(std::string* out, std::string* why) {
    advanced_ = false;
    Record r;
    Status st;
    while ((st = NextRecord(&r, why)) == Status::kMessage) {
      if (r.more || !frags_.empty()) {
        if (!Gather(r, why)) return Status::kCorrupt;
        if (r.more) continue;
        out->swap(frags_);
        frags_.clear();
      } else {
        out->assign(reinterpret_cast<const char*>(r.payload), r.n);
        Advance(r.size);
      }
      return Status::kMessage;
    }
    return st;
  }

  // Next for a caller that brings its own buffer: copies the next complete message into
  // dst[0, room) straight from the ring, so a single-record message is copied once, and sets
  // *len to its size. A message larger than `room` is left pending (its last record stays in
  // the ring, the fragments before it are kept) and kTooSmall returned with *len set: the
  // caller grows its buffer and calls again.
  Status NextInto(uint8_t* dst, uint64_t room, uint64_t* len, std::string* why) {
    advanced_ = false;
    Record r;
    Status st;
    while ((st = NextRecord(&r, why)) == Status::kMessage) {
      if (r.more) {
        if (!Gather(r, why)) return Status::kCorrupt;
        continue;
      }
      uint64_t total = frags_.size() + r.n;
      if (!frags_.empty() && total > kMaxMessage) return Corrupt(why, "fragmented message exceeds 1 GiB");
      *len = total;
      if (total > room) return Status::kTooSmall;
      if (!frags_.empty()) std::memcpy(dst, frags_.data(), frags_.size());
      if (r.n) std::memcpy(dst + frags_.size(), r.payload, r.n);
      frags_.clear();
      Advance(r.size);
      return Status::kMessage;
    }
    return st;
  }

 private:
  // A record found by NextRecord, still in the ring (head has not moved past it).
  struct Record {
    const uint8_t* payload;
    uint64_t n;     // payload bytes
    uint64_t size;  // bytes it takes in the ring, RecordSize(n)
    bool more;      // kFragMore: another fragment of the same message follows
  };

  // Steps over wrap markers to the next record and checks it against the ring and the
  // published tail: kMessage with *r (not consumed), kEmpty at the tail, or kCorrupt.
  Status NextRecord(Record* r, std::string* why) {
    // Acquire: the producer's record bytes up to this tail are visible from here on.
    uint64_t tail = this->tail();
    while (head_ != tail) {
      if (tail - head_ > cap_) return Corrupt(why, "ring tail is more than one capacity ahead of head");
      uint64_t pos = head_ & (cap_ - 1);
      uint64_t to_end = cap_ - pos;
      uint32_t word;
      std::memcpy(&word, data_ + pos, 4);
      if (word == kWrapMarker) {
        if (to_end > tail - head_) return Corrupt(why, "wrap marker beyond the published tail");
        Advance(to_end);
        continue;
      }
      uint64_t n = word & ~kFragMore;
      uint64_t rec = RecordSize(n);
      if (4 + n > to_end || rec > tail - head_ || n > cap_ / 2)
        return Corrupt(why, "record length " + std::to_string(n) + " runs past the ring or the published tail");
      *r = Record{data_ + pos + 4, n, rec, (word & kFragMore) != 0};
      return Status::kMessage;
    }
    return Status::kEmpty;
  }

  // Appends a fragment to the message being reassembled and consumes its record.
  bool Gather(const Record& r, std::string* why) {
    if (frags_.size() + r.n > kMaxMessage) {
      Corrupt(why, "fragmented message exceeds 1 GiB");
      return false;
    }
    frags_.append(reinterpret_cast<const char*>(r.payload), r.n);
    Advance(r.size);
    return true;
  }

  void Advance(uint64_t n) {
    head_ += n;
    // Hand the space back at once: a blocked producer goes on while we handle the message.
    // Release: our reads of the record are done before the producer may overwrite it.
    wait::StoreReleaseU64(At<uint64_t>(base_, o_.head), head_);
    advanced_ = true;
  }
  Status Corrupt(std::string* why, std::string text) {
    if (why) *why = std::move(text);
    return Status::kCorrupt;
  }

  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t cap_ = 0;
  Offsets o_{};
  uint64_t head_ = 0;
  bool advanced_ = false;
  std::string frags_;
};

// Producer end of one ring. The caller serialises producers.
class Producer {
 public:
  Producer() = default;
  Producer(uint8_t* base, uint64_t data_off, uint64_t capacity, Offsets o)
      : base_(base), data_(base + data_off), cap_(capacity), o_(o) {
    tail_ = wait::LoadAcquireU64(At<uint64_t>(base_, o_.tail));
    published_ = tail_;
  }

  // Half the ring always fits once the consumer has drained it, wherever the wrap point is.
  uint64_t max_record() const { return cap_ / 2 - kRecordAlign; }

  // Writes as many records of the message p[0, total) as ring space allows, from byte `off`
  // (< total, or 0 for an empty message, which is one empty record): fragments of at most
  // max_record() bytes, all but the last flagged kFragMore. Returns the offset reached, total
  // once the whole message is in; the caller calls again from there when space is freed.
  uint64_t Write(const uint8_t* p, uint64_t total, uint64_t off) {
    uint64_t max = max_record();
    do {
      uint64_t end = total - off > max ? off + max : total;
      if (!TryWrite(p + off, end - off, end < total)) break;
      off = end;
    } while (off < total);
    return off;
  }

  // True when records were written since the last Publish.
  bool Unpublished() const { return tail_ != published_; }

  // Writes one record (n <= max_record()) if there is room; false and nothing written if not.
  // A consumer that publishes a head beyond our tail is corrupt; treat the ring as full.
  bool TryWrite(const uint8_t* payload, uint64_t n, bool more) {
    // Acquire: the consumer has finished reading everything below this head.
    uint64_t head = wait::LoadAcquireU64(At<uint64_t>(base_, o_.head));
    if (head > tail_ || tail_ - head > cap_) return false;
    uint64_t free = cap_ - (tail_ - head);
    uint64_t need = RecordSize(n);
    uint64_t pos = tail_ & (cap_ - 1);
    uint64_t to_end = cap_ - pos;
    if (need > to_end) {
      if (to_end + need > free) return false;
      uint32_t marker = kWrapMarker;
      std::memcpy(data_ + pos, &marker, 4);
      tail_ += to_end;
      pos = 0;
    } else if (need > free) {
      return false;
    }
    uint32_t word = static_cast<uint32_t>(n) | (more ? kFragMore : 0);
    std::memcpy(data_ + pos, &word, 4);
    if (n) std::memcpy(data_ + pos + 4, payload, n);
    tail_ += need;
    return true;
  }

  // Stores tail, bumps the doorbell, wakes the consumer if it asked for it (or always, if
  // forced). The doorbell increment is a locked RMW (full barrier), so the `sleeping` load
  // cannot move before it.
  // - wake_fd < 0: the consumer sets `sleeping` before FUTEX_WAIT (which re-checks the
  //   doorbell), and is woken with FUTEX_WAKE.
  // - wake_fd >= 0 (Node's event loop, docs/ipc.md "Waking Node"): `sleeping` = 1 asks for one
  //   eventfd write, and the consumer re-checks the ring after asking again.
  // Either way the producer takes the flag with an exchange: the first publish after the
  // consumer asked wakes it, and the publishes that follow before it runs again cost no system
  // call (a woken consumer drains everything published before it looks). The plain load first
  // keeps the cache line shared while the consumer is awake.
  void Publish(bool force_wake, int wake_fd = -1) {
    // Release: every record byte written by TryWrite is visible before the new tail is.
    wait::StoreReleaseU64(At<uint64_t>(base_, o_.tail), tail_);
    published_ = tail_;
    uint32_t* db = At<uint32_t>(base_, o_.doorbell);
    __atomic_add_fetch(db, 1u, __ATOMIC_SEQ_CST);
    uint32_t* sleeping = At<uint32_t>(base_, o_.sleeping);
    bool asked = __atomic_load_n(sleeping, __ATOMIC_SEQ_CST) != 0 && __atomic_exchange_n(sleeping, 0u, __ATOMIC_SEQ_CST) != 0;
    if (!asked && !force_wake) return;
    if (wake_fd >= 0) wait::EventFdSignal(wake_fd);
    else wait::FutexWake(db);
  }

 private:
  uint8_t* base_ = nullptr;
  uint8_t* data_ = nullptr;
  uint64_t cap_ = 0;
  Offsets o_{};
  uint64_t tail_ = 0;
  uint64_t published_ = 0;  // tail_ as of the last Publish
};

}  // namespace ring
}  // namespace tritium
