// execve(file, argv): replaces this process's program, keeping its pid, its parent, its
// environment (process.env's writes reach it) and its standard descriptors, for the CLI's one
// restart with the V8 flags that Node reads only when it starts (src/cli/node-flags.ts). Node
// marks descriptors 0-2 close-on-exec when it starts (so that a plain exec would leave the new
// program without stdout and stderr); they are cleared first. Node's other descriptors stay
// close-on-exec. Returns only by throwing.
#include "exec.h"

#include <fcntl.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <crt_externs.h>
#define environ (*_NSGetEnviron())
#endif

#include <cerrno>
#include <string>
#include <vector>

#include "errno_error.h"

namespace tritium {
namespace {

// An array of strings, as UTF-8; false for anything else, or a string with a NUL in it.
bool Strings(const Napi::Value& v, std::vector<std::string>* out) {
  if (!v.IsArray()) return false;
  Napi::Array a = v.As<Napi::Array>();
  for (uint32_t i = 0; i < a.Length(); i++) {
    Napi::Value item = a.Get(i);
    if (!item.IsString()) return false;
    out->push_back(item.As<Napi::String>().Utf8Value());
    if (out->back().find('\0') != std::string::npos) return false;
  }
  return true;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (std::string& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

Napi::Value Execve(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<std::string> argv;
  if (info.Length() < 2 || !info[0].IsString() || !Strings(info[1], &argv) || argv.empty()) {
    Napi::TypeError::New(env, "execve(file, argv): a path and a non-empty array of strings without NUL").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const std::string file = info[0].As<Napi::String>().Utf8Value();
  std::vector<char*> a = Pointers(argv);
  for (int fd = 0; fd <= 2; fd++) {
    const int flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) != 0) fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
  }
  execve(file.c_str(), a.data(), environ);
  return ThrowErrno(env, errno, "execve " + file);
}

}  // namespace

void InitExec(Napi::Env env, Napi::Object exports) {
  exports.Set("execve", Napi::Function::New(env, Execve, "execve"));
}

}  // namespace tritium
