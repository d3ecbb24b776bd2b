// First-fit allocator with coalescing over [base, base + size) of one segment (docs/ipc.md:
// each side allocates only in its own segments, metadata stays in the owning process).
// Same policy as src/backends/python/ipc/arena.ts and the pure-Python Arena in the stub.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <unordered_map>

namespace tritium {
namespace arena {

class Arena {
 public:
  Arena(uint64_t base, uint64_t size, uint64_t align) : align_(align ? align : 1) {
    uint64_t start = RoundUp(base);
    if (base + size > start) free_[start] = base + size - start;
  }

  // Offset of a new block of at least nbytes (0 bytes still gets a distinct block), -1 if full.
  int64_t Alloc(uint64_t nbytes) {
    uint64_t need = RoundUp(nbytes ? nbytes : 1);
    if (need < nbytes) return -1;  // overflow
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < need) continue;
      uint64_t off = it->first;
      uint64_t rest = it->second - need;
      free_.erase(it);
      if (rest) free_[off + need] = rest;
      used_[off] = need;
      return static_cast<int64_t>(off);
    }
    return -1;
  }

  // False when off is not a live block (double free, foreign offset): nothing changes then.
  bool Free(uint64_t off) {
    auto u = used_.find(off);
    if (u == used_.end()) return false;
    uint64_t size = u->second;
    used_.erase(u);
    auto next = free_.lower_bound(off);
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        off = prev->first;
        size += prev->second;
        free_.erase(prev);
      }
    }
    if (next != free_.end() && off + size == next->first) {
      size += next->second;
      free_.erase(next);
    }
    free_[off] = size;
    return true;
  }

  size_t blocks_in_use() const { return used_.size(); }

 private:
  uint64_t RoundUp(uint64_t n) const { return (n + align_ - 1) / align_ * align_; }

  uint64_t align_;
  std::map<uint64_t, uint64_t> free_;            // offset -> size, address order
  std::unordered_map<uint64_t, uint64_t> used_;  // offset -> size
};

}  // namespace arena
}  // namespace tritium
