#include "futex.h"

#include <cerrno>
#include <climits>
#include <ctime>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tritium {

int FutexWake(uint32_t* word) {
  long r = syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  return r < 0 ? -errno : static_cast<int>(r);
}

int FutexWait(uint32_t* word, uint32_t expected, int64_t timeout_ns) {
  struct timespec ts;
  struct timespec* tsp = nullptr;
  if (timeout_ns >= 0) {
    ts.tv_sec = timeout_ns / 1000000000;
    ts.tv_nsec = timeout_ns % 1000000000;
    tsp = &ts;
  }
  long r = syscall(SYS_futex, word, FUTEX_WAIT, expected, tsp, nullptr, 0);
  return r < 0 ? -errno : 0;
}

}  // namespace tritium
