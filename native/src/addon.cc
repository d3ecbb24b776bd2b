// tritium_native: shared memory, descriptor passing, futex and wake-up primitives for the
// Python-backend IPC, and Node's side of the protocol core the stub's extension compiles too:
// the header layout (node_layout.cc over layout.h), the rings (node_ring.cc over ring_core.h)
// and the arenas (node_arena.cc over arena_core.h); and the SO_REUSEPORT listeners of the
// frontend threads (listen_socket.cc) and the frontends' direct answers (socket_write.cc);
// loading CUDA libraries by path (shared_library.cc); the gRPC frontend's HTTP/2 sessions over
// the nghttp2 inside Node (h2_session.cc); the CLI's restart with V8's flags (exec.cc). What to
// send and when stays in TypeScript; see docs/ipc.md.
#include <napi.h>

#include "exec.h"
#include "fd_passing.h"
#include "h2_session.h"
#include "listen_socket.h"
#include "node_arena.h"
#include "node_layout.h"
#include "node_ring.h"
#include "shared_library.h"
#include "shm.h"
#include "socket_write.h"
#include "wake.h"

namespace {
Napi::Object Init(Napi::Env env, Napi::Object exports) {
  tritium::InitShm(env, exports);
  tritium::InitFdPassing(env, exports);
  tritium::InitWake(env, exports);
  tritium::InitRing(env, exports);
  tritium::InitArena(env, exports);
  tritium::InitLayout(env, exports);
  tritium::InitListenSocket(env, exports);
  tritium::InitSharedLibrary(env, exports);
  tritium::InitH2Session(env, exports);
  tritium::InitSocketWrite(env, exports);
  tritium::InitExec(env, exports);
  return exports;
}
}  // namespace

NODE_API_MODULE(tritium_native, Init)
