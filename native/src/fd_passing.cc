// Descriptors passed between Node and a stub: SCM_RIGHTS over a socket pair whose other end
// the stub inherits at spawn (docs/ipc.md, "Segments"). A memfd has no name the peer could
// open, so new segments travel as a datagram: their names (`n1`, `s0`, ..., comma-separated) as
// data and their descriptors as ancillary data. The fork server's requests travel the same way
// (a stub's pipes and descriptors, its arguments as JSON; docs/ipc.md, "Fork server"), which is
// what pipe() and dupFd() are for. Every call is non-blocking: Node's event loop never waits on
// the stub here.
#include "fd_passing.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "errno_error.h"

namespace tritium {
namespace {

Napi::Value PairOf(Napi::Env env, const int fds[2]) {
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(0u, Napi::Number::New(env, fds[0]));
  out.Set(1u, Napi::Number::New(env, fds[1]));
  return out;
}

// socketPair(): [nodeEnd, stubEnd], AF_UNIX SOCK_SEQPACKET (datagram boundaries, in order,
// and a closed peer is seen), both close-on-exec; the spawn hands stubEnd to the stub.
Napi::Value SocketPair(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return ThrowErrno(env, errno, "socketpair");
  return PairOf(env, sv);
}

// pipe(): [readEnd, writeEnd], both close-on-exec: a forked stub's stdout, stderr and
// readiness pipe, whose child ends travel to the fork server (Node wraps its own end).
Napi::Value Pipe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return ThrowErrno(env, errno, "pipe2");
  return PairOf(env, p);
}

// dupFd(fd): a close-on-exec duplicate, which the caller owns: a descriptor a request to the
// fork server carries stays open until it is sent, whoever closes the original meanwhile.
Napi::Value DupFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    Napi::TypeError::New(env, "dupFd(fd: number)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int fd = fcntl(info[0].As<Napi::Number>().Int32Value(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return ThrowErrno(env, errno, "dupFd");
  return Napi::Number::New(env, fd);
}

// At most this many descriptors per datagram (the kernel's SCM_MAX_FD).
constexpr size_t kMaxFds = 253;
// At most this much data per datagram sent: a fork request's JSON (paths, names, a few
// variables); segment names are far shorter, and recvFds reads at most 4096.
constexpr size_t kMaxSendData = 65536;

// sendFds(socket, fds, names): one datagram, `names` (the segments' names, comma-separated, or
// a fork request's JSON) as data and `fds` as SCM_RIGHTS. Throws with `code`: EAGAIN while the peer has not read what is
// queued (a SEQPACKET socket queues few datagrams), EPIPE when it is gone; never raises SIGPIPE.
Napi::Value SendFds(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsNumber() || !info[1].IsArray() || !info[2].IsString()) {
    Napi::TypeError::New(env, "sendFds(socket: number, fds: number[], names: string)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int sock = info[0].As<Napi::Number>().Int32Value();
  Napi::Array arr = info[1].As<Napi::Array>();
  std::string names = info[2].As<Napi::String>().Utf8Value();
  size_t n = arr.Length();
  if (n == 0 || n > kMaxFds || names.empty() || names.size() > kMaxSendData)
    return ThrowErrno(env, EINVAL, "sendFds: 1 to 253 descriptors and at most 65536 bytes of data");
  std::vector<int> fds(n);
  for (size_t i = 0; i < n; i++) fds[i] = arr.Get(static_cast<uint32_t>(i)).As<Napi::Number>().Int32Value();
  struct iovec iov = {const_cast<char*>(names.data()), names.size()};
  std::vector<char> control(CMSG_SPACE(n * sizeof(int)), 0);
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(n * sizeof(int));
  std::memcpy(CMSG_DATA(c), fds.data(), n * sizeof(int));
  ssize_t sent;
  do sent = sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  if (sent < 0) return ThrowErrno(env, errno, "sendFds " + names);
  return env.Undefined();
}

// recvFds(socket): the next datagram queued, { names, fds }, or null when none is (or the peer
// closed its end). The descriptors arrive close-on-exec; the caller owns them.
Napi::Value RecvFds(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) {
    Napi::TypeError::New(env, "recvFds(socket: number)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  int sock = info[0].As<Napi::Number>().Int32Value();
  char names[4096];
  struct iovec iov = {names, sizeof names};
  alignas(struct cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))];
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return env.Null();
  if (n < 0) return ThrowErrno(env, errno, "recvFds");
  Napi::Array fds = Napi::Array::New(env);
  uint32_t count = 0;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; i++) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.Set(count++, Napi::Number::New(env, fd));
    }
  }
  if (n == 0 && count == 0) return env.Null();  // the peer closed its end
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    for (uint32_t i = 0; i < count; i++) close(fds.Get(i).As<Napi::Number>().Int32Value());
    return ThrowErrno(env, EINVAL, "recvFds: a datagram larger than the protocol allows");
  }
  Napi::Object out = Napi::Object::New(env);
  out.Set("names", Napi::String::New(env, names, static_cast<size_t>(n)));
  out.Set("fds", fds);
  return out;
}

}  // namespace

void InitFdPassing(Napi::Env env, Napi::Object exports) {
  exports.Set("socketPair", Napi::Function::New(env, SocketPair, "socketPair"));
  exports.Set("sendFds", Napi::Function::New(env, SendFds, "sendFds"));
  exports.Set("recvFds", Napi::Function::New(env, RecvFds, "recvFds"));
  exports.Set("pipe", Napi::Function::New(env, Pipe, "pipe"));
  exports.Set("dupFd", Napi::Function::New(env, DupFd, "dupFd"));
}

}  // namespace tritium
