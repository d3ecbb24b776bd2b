// writeSocket(fd, bytes): one send(2) of a response on a connected socket the event loop owns,
// for the frontends' answers while that socket has nothing queued (src/frontends/socket-write.ts).
// Node's own path to the same system call (Writable.write, Socket._writeGeneric, a WriteWrap
// built through the C++ API, the write callback deferred to a nextTick) was about 7 % of the
// HTTP server's samples at concurrency 16, as much as the JSON answer itself; the floor's
// server pays it too (docs/benchmarks.md, "The floor").
#include "socket_write.h"

#include <sys/socket.h>

#include <cerrno>

namespace tritium {
namespace {

// Returns the bytes the kernel took (all of them, or fewer when its buffer filled), or -errno:
// -EAGAIN when it took none; any other error leaves the bytes to Node's write path, which
// reports a broken connection its usual way. MSG_NOSIGNAL: a peer gone is EPIPE, not a signal.
Napi::Value WriteSocket(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  napi_typedarray_type type;
  size_t length = 0;
  void* data = nullptr;
  if (info.Length() < 2 || !info[0].IsNumber() ||
      napi_get_typedarray_info(env, info[1], &type, &length, &data, nullptr, nullptr) != napi_ok || type != napi_uint8_array) {
    Napi::TypeError::New(env, "writeSocket(fd: number, bytes: Uint8Array)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int fd = info[0].As<Napi::Number>().Int32Value();
  ssize_t n;
  do {
    n = send(fd, data, length, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  return Napi::Number::New(env, n < 0 ? -errno : static_cast<double>(n));
}

}  // namespace

void InitSocketWrite(Napi::Env env, Napi::Object exports) {
  exports.Set("writeSocket", Napi::Function::New(env, WriteSocket, "writeSocket"));
}

}  // namespace tritium
