// Raw futex wrappers. Non-private operations, because the word lives in a MAP_SHARED mapping
// watched by another process (private futexes are keyed by address space and would never meet).
#pragma once
#include <cstdint>

namespace tritium {

// Wakes every waiter on `word`; returns the number woken or -errno.
int FutexWake(uint32_t* word);

// Sleeps while *word == expected, at most timeout_ns (<0: forever). Returns 0 on wake,
// -EAGAIN if the value already differed, -ETIMEDOUT, -EINTR.
int FutexWait(uint32_t* word, uint32_t expected, int64_t timeout_ns);

}  // namespace tritium
