// Raw futex wrappers for the addon; the implementation is shared with the CPython extension
// in wait_core.h.
#pragma once
#include "wait_core.h"

namespace tritium {
using wait::FutexWait;
using wait::FutexWake;
}  // namespace tritium
