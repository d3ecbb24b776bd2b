// First-fit allocator with coalescing over [base, base + size) of one segment (docs/ipc.md:
// each side allocates only in its own segments, metadata stays in the owning process). The one
// implementation: Node's input arenas (node_arena.cc) and the stub's output arenas
// (python_ipc.cc) both run it.
//
// Free extents and live blocks are sorted vectors, not node-based maps: an alloc and a release
// run for every tensor of every request, and a std::map / unordered_map pays a heap allocation
// per insert (it made Node's arena twice as dear as the TypeScript one it replaced). The
// vectors stay short — extents are merged, and live blocks are the tensors in flight — so the
// shifts of an insert or erase are cheap.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace tritium {
namespace arena {

class Arena {
 public:
  Arena(uint64_t base, uint64_t size, uint64_t align) : align_(align ? align : 1) {
    uint64_t start = RoundUp(base);
    if (base + size > start) {
      free_bytes_ = base + size - start;
      free_.push_back({start, free_bytes_});
    }
  }

  // Offset of a new block of at least nbytes (0 bytes still gets a distinct block), -1 if full.
  int64_t Alloc(uint64_t nbytes) {
    uint64_t need = RoundUp(nbytes ? nbytes : 1);
    if (need < nbytes) return -1;  // overflow
    for (size_t i = 0; i < free_.size(); ++i) {
      Extent& e = free_[i];
      if (e.size < need) continue;
      uint64_t off = e.off;
      if (e.size == need) {
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        e.off += need;
        e.size -= need;
      }
      used_.insert(std::lower_bound(used_.begin(), used_.end(), off, Before), Extent{off, need});
      free_bytes_ -= need;
      return static_cast<int64_t>(off);
    }
    return -1;
  }

  // False when off is not a live block (double free, foreign offset): nothing changes then.
  bool Free(uint64_t off) {
    auto u = std::lower_bound(used_.begin(), used_.end(), off, Before);
    if (u == used_.end() || u->off != off) return false;
    uint64_t size = u->size;
    used_.erase(u);
    free_bytes_ += size;
    auto next = std::lower_bound(free_.begin(), free_.end(), off, Before);
    bool joins_prev = next != free_.begin() && std::prev(next)->off + std::prev(next)->size == off;
    bool joins_next = next != free_.end() && off + size == next->off;
    if (joins_prev) {
      auto prev = std::prev(next);
      prev->size += size;
      if (joins_next) {
        prev->size += next->size;
        free_.erase(next);
      }
    } else if (joins_next) {
      next->off = off;
      next->size += size;
    } else {
      free_.insert(next, Extent{off, size});
    }
    return true;
  }

  bool Owns(uint64_t off) const {
    auto u = std::lower_bound(used_.begin(), used_.end(), off, Before);
    return u != used_.end() && u->off == off;
  }
  size_t blocks_in_use() const { return used_.size(); }
  uint64_t bytes_free() const { return free_bytes_; }

 private:
  struct Extent {
    uint64_t off, size;
  };
  static bool Before(const Extent& e, uint64_t off) { return e.off < off; }
  uint64_t RoundUp(uint64_t n) const { return (n + align_ - 1) / align_ * align_; }

  uint64_t align_;
  uint64_t free_bytes_ = 0;
  std::vector<Extent> free_;  // address order, never adjacent (adjacent extents are merged)
  std::vector<Extent> used_;  // live blocks, address order
};

}  // namespace arena
}  // namespace tritium
