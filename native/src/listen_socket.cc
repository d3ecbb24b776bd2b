// A listening TCP socket opened here rather than by Node, for the one option Node 20's `net`
// cannot set: SO_REUSEPORT. Each frontend thread listens on a socket of its own bound to the
// same port, and the kernel spreads new connections across them (docs/design.md, "More than
// one core for the frontends"); `--reuse-http-port` / `--reuse-grpc-port` let other processes
// bind the port too. Node adopts the descriptor with `server.listen({ fd })`, which owns and
// closes it from then on.
#include "listen_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "errno_error.h"

namespace tritium {
namespace {

// listenSocket(ip, port, reusePort, backlog): [fd, boundPort]. `ip` is a numeric IPv4 or IPv6
// address (the caller resolves host names); port 0 picks a free port, which the other threads
// then bind. Non-blocking and close-on-exec, as libuv's own listeners are.
Napi::Value ListenSocket(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsBoolean() || !info[3].IsNumber()) {
    Napi::TypeError::New(env, "listenSocket(ip: string, port: number, reusePort: boolean, backlog: number)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  std::string ip = info[0].As<Napi::String>().Utf8Value();
  int port = info[1].As<Napi::Number>().Int32Value();
  bool reusePort = info[2].As<Napi::Boolean>().Value();
  int backlog = info[3].As<Napi::Number>().Int32Value();
  if (port < 0 || port > 65535) return ThrowErrno(env, EINVAL, "listenSocket: port " + std::to_string(port));

  sockaddr_storage addr = {};
  socklen_t len = 0;
  int family = AF_INET;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    family = AF_INET6;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in6);
  } else {
    return ThrowErrno(env, EINVAL, "listenSocket: not a numeric address: " + ip);
  }

  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ThrowErrno(env, errno, "socket");
  int on = 1;
  // SO_REUSEADDR as libuv sets it on every listener: a restart binds while old connections linger.
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      (reusePort && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0)) {
    int err = errno;
    close(fd);
    return ThrowErrno(env, err, "setsockopt");
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    int err = errno;
    close(fd);
    return ThrowErrno(env, err, "bind " + ip + ":" + std::to_string(port));
  }
  if (listen(fd, backlog) != 0) {
    int err = errno;
    close(fd);
    return ThrowErrno(env, err, "listen");
  }
  sockaddr_storage bound = {};
  socklen_t boundLen = sizeof bound;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &boundLen) != 0) {
    int err = errno;
    close(fd);
    return ThrowErrno(env, err, "getsockname");
  }
  int boundPort = family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port)
                                    : ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(0u, Napi::Number::New(env, fd));
  out.Set(1u, Napi::Number::New(env, boundPort));
  return out;
}

}  // namespace

void InitListenSocket(Napi::Env env, Napi::Object exports) {
  exports.Set("listenSocket", Napi::Function::New(env, ListenSocket, "listenSocket"));
}

}  // namespace tritium
