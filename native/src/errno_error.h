// Throws a JS Error for a failed system call, shaped like Node's fs errors so TypeScript can
// branch on `e.code` (ENOSPC, ENOMEM, EAGAIN, ...). Shared by the segment and descriptor files.
#pragma once
#include <napi.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace tritium {

inline Napi::Value ThrowErrno(Napi::Env env, int err, const std::string& what) {
  Napi::Error e = Napi::Error::New(env, what + ": " + std::strerror(err));
  static const struct {
    int no;
    const char* name;
  } kNames[] = {{ENOSPC, "ENOSPC"}, {EEXIST, "EEXIST"}, {ENOENT, "ENOENT"}, {EACCES, "EACCES"},
                {ENOMEM, "ENOMEM"}, {EINVAL, "EINVAL"}, {EMFILE, "EMFILE"}, {ENFILE, "ENFILE"},
                {EFBIG, "EFBIG"},   {EAGAIN, "EAGAIN"}, {EPERM, "EPERM"},   {ENOSYS, "ENOSYS"},
                {EBADF, "EBADF"},   {EPIPE, "EPIPE"},   {ECONNRESET, "ECONNRESET"}, {ETOOMANYREFS, "ETOOMANYREFS"},
                {EADDRINUSE, "EADDRINUSE"}, {EADDRNOTAVAIL, "EADDRNOTAVAIL"}};
  for (const auto& n : kNames)
    if (n.no == err) e.Set("code", Napi::String::New(env, n.name));
  e.Set("errno", Napi::Number::New(env, err));
  e.ThrowAsJavaScriptException();
  return env.Undefined();
}

}  // namespace tritium
