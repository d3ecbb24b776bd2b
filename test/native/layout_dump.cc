// Prints ring_core.h's layout constants as JSON, for test/ipc-layout.test.ts.
#include <cstdio>

#include "ring_core.h"

using namespace tritium::ring;

static void Ring(const char* name, const Offsets& o, bool last) {
  std::printf("\"%s\":[%llu,%llu,%llu,%llu,%llu]%s", name, (unsigned long long)o.head, (unsigned long long)o.tail,
              (unsigned long long)o.doorbell, (unsigned long long)o.sleeping, (unsigned long long)o.producer_waiting,
              last ? "" : ",");
}

int main() {
  std::printf("{\"MAGIC\":\"%.8s\",\"LAYOUT_VERSION\":%u,\"HEADER_SIZE\":%llu,\"MIN_RING_BYTES\":%llu,", kMagic, kLayoutVersion,
              (unsigned long long)kHeaderSize, (unsigned long long)kMinCapacity);
  std::printf("\"FRAG_MORE\":%u,\"WRAP_MARKER\":%u,\"RECORD_ALIGN\":%llu,", kFragMore, kWrapMarker, (unsigned long long)kRecordAlign);
  std::printf("\"OFF_VERSION\":%llu,\"OFF_RING_CAPACITY\":%llu,\"OFF_RING_A_DATA\":%llu,\"OFF_RING_B_DATA\":%llu,",
              (unsigned long long)kOffVersion, (unsigned long long)kOffCapacity, (unsigned long long)kOffRingAData,
              (unsigned long long)kOffRingBData);
  std::printf("\"OFF_HEARTBEAT\":%llu,\"OFF_STUB_PID\":%llu,", (unsigned long long)kOffHeartbeat, (unsigned long long)kOffStubPid);
  Ring("RING_A", kRingA, false);
  Ring("RING_B", kRingB, true);
  std::printf("}\n");
  return 0;
}
