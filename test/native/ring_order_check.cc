// Runs native/src/ring_core.h's Producer and Consumer on two threads over one buffer laid out
// like segment n0, under ThreadSanitizer (built by ring-order.test.ts). TSan checks the C++
// memory model, not the CPU's: a record byte read without a happens-before edge from its write
// (a tail published without release, or read without acquire; a head handed back without
// release before the producer overwrites the space) is reported as a data race even on x86,
// where the hardware would hide it. Exit 0 and no report = the ring is ordered for any
// architecture. Messages of varied sizes, some several rings long (fragments), wrap the small
// ring many times and are checked byte by byte; the consumer takes them alternately with Next
// (the stub's way) and NextInto into a buffer that starts too small (Node's way).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ring_core.h"

using namespace tritium;

namespace {

constexpr uint64_t kCap = 4096;
constexpr int kMessages = 20000;

std::string Payload(int i) {
  size_t n = i % 16 == 15 ? static_cast<size_t>(i * 131) % (3 * kCap) + 1 : static_cast<size_t>((i * 37) % 700 + 1);
  std::string s(n, '\0');
  for (size_t k = 0; k < s.size(); k++) s[k] = static_cast<char>((i + k * 13) & 0xff);
  return s;
}

}  // namespace

int main() {
  std::vector<uint8_t> seg(ring::kHeaderSize + 2 * kCap, 0);
  uint8_t* b = seg.data();
  std::memcpy(b, ring::kMagic, sizeof ring::kMagic);
  uint32_t version = ring::kLayoutVersion;
  uint64_t cap = kCap, a = ring::kHeaderSize, bd = ring::kHeaderSize + kCap;
  std::memcpy(b + ring::kOffVersion, &version, 4);
  std::memcpy(b + ring::kOffCapacity, &cap, 8);
  std::memcpy(b + ring::kOffRingAData, &a, 8);
  std::memcpy(b + ring::kOffRingBData, &bd, 8);
  ring::Layout layout;
  std::string why;
  if (!layout.Check(b, seg.size(), &why)) {
    std::fprintf(stderr, "layout: %s\n", why.c_str());
    return 2;
  }

  std::thread producer([&] {
    ring::Producer p(b, layout.a_data, layout.capacity, ring::kRingA);
    for (int i = 0; i < kMessages; i++) {
      std::string m = Payload(i);
      const auto* bytes = reinterpret_cast<const uint8_t*>(m.data());
      // Publish the fragments written so far while waiting for space: the consumer frees it.
      for (uint64_t off = p.Write(bytes, m.size(), 0); off < m.size(); off = p.Write(bytes, m.size(), off)) {
        p.Publish(false);
        std::this_thread::yield();
      }
      p.Publish(false);
    }
  });

  int bad = 0;
  ring::Consumer c(b, layout.a_data, layout.capacity, ring::kRingA);
  std::string scratch(256, '\0');
  for (int i = 0; i < kMessages;) {
    std::string out;
    ring::Status st;
    if (i % 2 == 0) {
      st = c.Next(&out, &why);
    } else {
      uint64_t len = 0;
      st = c.NextInto(reinterpret_cast<uint8_t*>(&scratch[0]), scratch.size(), &len, &why);
      if (st == ring::Status::kTooSmall) {
        scratch.resize(len);
        continue;
      }
      if (st == ring::Status::kMessage) out.assign(scratch.data(), len);
    }
    if (st == ring::Status::kCorrupt) {
      std::fprintf(stderr, "corrupt at message %d: %s\n", i, why.c_str());
      bad = 1;
      break;
    }
    if (st == ring::Status::kEmpty) {
      std::this_thread::yield();
      continue;
    }
    if (out != Payload(i)) {
      std::fprintf(stderr, "message %d differs\n", i);
      bad = 1;
      break;
    }
    i++;
  }
  producer.join();
  if (bad) return 1;
  std::printf("ring order check: %d messages\n", kMessages);
  return 0;
}
