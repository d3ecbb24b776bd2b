// Futex doorbells, the eventfd wake and the spin-or-sleep policy, shared by the Node addon and
// the CPython extension (_tritium_ipc). Header-only and free of Node/Python headers so both
// bindings compile the very same logic (docs/ipc.md, "Waiting").
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <linux/futex.h>
#include <sched.h>
#include <string_view>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TRITIUM_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define TRITIUM_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define TRITIUM_CPU_RELAX() std::atomic_signal_fence(std::memory_order_seq_cst)
#endif

namespace tritium {
namespace wait {

inline int64_t NowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Non-private futex operations: the word lives in a MAP_SHARED mapping watched by another
// process, and private futexes are keyed by address space (they would never meet).
inline int FutexWake(uint32_t* word) {
  long r = syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  return r < 0 ? -errno : static_cast<int>(r);
}

// Adds 1 to an eventfd (the peer's wake descriptor). EAGAIN means the counter is saturated,
// i.e. a wake-up is pending anyway; other errors (a closed peer) have nobody left to wake.
inline void EventFdSignal(int fd) {
  const uint64_t one = 1;
  while (write(fd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

// Sleeps while *word == expected, at most timeout_ns (<0: forever). 0 on wake, -EAGAIN when
// the value already differed, -ETIMEDOUT, -EINTR.
inline int FutexWait(uint32_t* word, uint32_t expected, int64_t timeout_ns) {
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

// Atomic access to words of a shared mapping that another process reads and writes. These are
// the GCC/Clang __atomic builtins on plain memory — what C++20's std::atomic_ref does; with
// C++17 there is no standard way to make a std::atomic out of bytes someone else mapped. They
// are only correct across processes when lock-free (a lock would live in this process alone),
// which holds on every 64-bit target we build for; the build fails otherwise.
static_assert(__atomic_always_lock_free(sizeof(uint32_t), 0), "u32 shared-memory atomics must be lock-free");
static_assert(__atomic_always_lock_free(sizeof(uint64_t), 0), "u64 shared-memory atomics must be lock-free");

inline uint32_t LoadU32(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
inline void StoreU32(uint32_t* p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }

// Ring positions (docs/ipc.md, "Memory ordering"). The producer writes a record's bytes and then
// publishes tail with a release store; the consumer loads tail with acquire before it reads
// those bytes. Symmetrically the consumer's release store of head follows its last read of a
// record, and the producer's acquire load of head comes before it overwrites that space. On x86
// these compile to plain moves; on aarch64 to stlr/ldar, the barriers that make the payload
// visible before the position.
inline uint64_t LoadAcquireU64(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
inline void StoreReleaseU64(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

enum class SpinMode { kAdaptive, kAlways, kNever };

// Parses "adaptive" | "always" | "never"; false for anything else.
inline bool ParseSpinMode(const char* s, SpinMode* out) {
  if (s == nullptr) return false;
  std::string_view v(s);
  if (v == "adaptive") *out = SpinMode::kAdaptive;
  else if (v == "always") *out = SpinMode::kAlways;
  else if (v == "never") *out = SpinMode::kNever;
  else return false;
  return true;
}

// Decides, before each sleep, how long a consumer polls its doorbell first.
//
// Polling only pays when (1) the next message usually arrives within the window (otherwise the
// spin is pure waste and the futex sleep follows anyway) and (2) a core is idle (otherwise the
// spin steals the core the peer, the client or another instance needs to produce that very
// message). `kAdaptive` checks both: a hit score over recent waits, and the runnable task count
// from /proc/loadavg against the CPUs this process may use, sampled every few milliseconds.
// In a container /proc/loadavg counts the host's tasks, which only makes spinning rarer.
class WaitPolicy {
 public:
  WaitPolicy(SpinMode mode = SpinMode::kAdaptive, int64_t spin_ns = 50000) { Configure(mode, spin_ns); }

  void Configure(SpinMode mode, int64_t spin_ns) {
    mode_ = mode;
    spin_ns_ = spin_ns > 0 ? spin_ns : 0;
    if (spin_ns_ == 0) mode_ = SpinMode::kNever;
  }

  SpinMode mode() const { return mode_; }
  int64_t spin_ns() const { return spin_ns_; }

  // Poll budget for the wait starting now.
  int64_t Budget(int64_t now_ns) {
    switch (mode_) {
      case SpinMode::kNever: return 0;
      case SpinMode::kAlways: return spin_ns_;
      case SpinMode::kAdaptive: break;
    }
    if (!SpareCore(now_ns)) return 0;
    if (score_ >= kSpinScore) return spin_ns_;
    // Probe now and then: while the consumer sleeps, the wake-up latency inflates every gap,
    // so only an occasional poll can show that answers now come within the window.
    if (++probe_ >= kProbeEvery) {
      probe_ = 0;
      return spin_ns_;
    }
    return 0;
  }

  // The peer's next signal came gap_ns after the consumer ran out of work; `spun` says
  // whether it polled first. A gap inside the window is a hit. A miss counts when the poll
  // was wasted, or when the gap is long beyond doubt; a slept gap a little over the window
  // gives no verdict (the wake-up latency alone may explain it).
  void Observe(int64_t gap_ns, bool spun) {
    if (gap_ns <= spin_ns_) score_ = std::min(score_ + 1, kMaxScore);
    else if (spun || gap_ns > kLongGap * spin_ns_) score_ = std::max(score_ - kMissPenalty, 0);
  }

  // Exposed for tests and verbose logs.
  int score() const { return score_; }

 private:
  static constexpr int kMaxScore = 16;
  static constexpr int kSpinScore = 4;
  static constexpr int kMissPenalty = 4;
  static constexpr int kProbeEvery = 16;
  static constexpr int64_t kLongGap = 4;
  static constexpr int64_t kLoadCheckNs = 20 * 1000 * 1000;

  bool SpareCore(int64_t now_ns) {
    if (now_ns < next_check_ns_) return spare_;
    next_check_ns_ = now_ns + kLoadCheckNs;
    int cpus = AllowedCpus();
    int running = RunnableTasks();
    // `running` includes this thread. Two more cores must be idle: one for the peer that
    // produces the next message, one for whatever else wakes meanwhile (the client, Node's
    // event loop). Measured on a 2-core host under perf_analyzer, any polling (even 1-in-16
    // probes) cost both the server and the stubs more CPU per request than sleeping at once,
    // so there adaptive behaves like `never`; `always` remains for latency-bound setups.
    spare_ = running > 0 && running + 2 <= cpus;
    return spare_;
  }

  static int AllowedCpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    return CPU_COUNT(&set);
  }

  // Field 4 of /proc/loadavg is "<runnable>/<total>". -1 when unreadable (then never spin).
  static int RunnableTasks() {
    FILE* f = std::fopen("/proc/loadavg", "re");
    if (f == nullptr) return -1;
    double a, b, c;
    int running = -1, total = 0;
    if (std::fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5) running = -1;
    std::fclose(f);
    return running;
  }

  SpinMode mode_ = SpinMode::kAdaptive;
  int64_t spin_ns_ = 0;
  int score_ = 0;
  int probe_ = 0;
  int64_t next_check_ns_ = 0;
  bool spare_ = false;
};

// Polls `changed` for at most budget_ns; true as soon as it returns true. `yield` gives the
// core away between polls (sched_yield) instead of pause instructions.
template <typename Changed>
inline bool Spin(int64_t budget_ns, bool yield, Changed changed) {
  if (budget_ns <= 0) return false;
  int64_t deadline = NowNs() + budget_ns;
  for (;;) {
    if (yield) sched_yield();
    else for (int i = 0; i < 32; i++) TRITIUM_CPU_RELAX();
    if (changed()) return true;
    if (NowNs() >= deadline) return false;
  }
}

}  // namespace wait
}  // namespace tritium
