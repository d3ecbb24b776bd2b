// tritium_native: shared memory, descriptor passing, futex and wake-up primitives for the
// Python-backend IPC.
// Protocol logic (header layout, rings, messages) lives in TypeScript; see docs/ipc.md.
#include <napi.h>

#include "fd_passing.h"
#include "shm.h"
#include "wake.h"

namespace {
Napi::Object Init(Napi::Env env, Napi::Object exports) {
  tritium::InitShm(env, exports);
  tritium::InitFdPassing(env, exports);
  tritium::InitWake(env, exports);
  return exports;
}
}  // namespace

NODE_API_MODULE(tritium_native, Init)
