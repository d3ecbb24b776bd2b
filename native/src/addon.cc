// tritium_native: shared memory, futex and doorbell primitives for the Python-backend IPC.
// Protocol logic (header layout, rings, messages) lives in TypeScript; see docs/ipc.md.
#include <napi.h>

#include "doorbell.h"
#include "shm.h"

namespace {
Napi::Object Init(Napi::Env env, Napi::Object exports) {
  tritium::InitShm(env, exports);
  tritium::InitDoorbell(env, exports);
  return exports;
}
}  // namespace

NODE_API_MODULE(tritium_native, Init)
