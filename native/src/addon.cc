// tritium_native: shared memory, descriptor passing, futex and wake-up primitives for the
// Python-backend IPC, and Node's end of the rings (node_ring.cc over ring_core.h, the ring code
// the stub's extension runs too). The rest of the protocol (header, messages, arenas) lives in
// TypeScript; see docs/ipc.md.
#include <napi.h>

#include "fd_passing.h"
#include "node_ring.h"
#include "shm.h"
#include "wake.h"

namespace {
Napi::Object Init(Napi::Env env, Napi::Object exports) {
  tritium::InitShm(env, exports);
  tritium::InitFdPassing(env, exports);
  tritium::InitWake(env, exports);
  tritium::InitRing(env, exports);
  return exports;
}
}  // namespace

NODE_API_MODULE(tritium_native, Init)
