// loadSharedLibrary(path): dlopen with RTLD_NOW | RTLD_GLOBAL, for libraries that a library
// loaded later needs by soname but cannot find on its own.
//
// onnxruntime's CUDA provider names libcudart.so.13, libcublas.so.13, ... as DT_NEEDED entries
// and has no RUNPATH, so when `tritium install-cuda` puts those libraries from PyPI's nvidia-*
// wheels next to onnxruntime-node, the dynamic loader would not look there. Loaded first, by
// absolute path and into the global scope, they satisfy the provider's entries by soname (what
// onnxruntime's own Python package does for the same wheels). The handle is never closed: the
// library stays for the life of the process, like any dependency of a loaded library.
#include "shared_library.h"

#include <dlfcn.h>

#include <string>

namespace tritium {
namespace {

Napi::Value LoadSharedLibrary(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) {
    Napi::TypeError::New(env, "loadSharedLibrary(path): path must be a string").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  const std::string path = info[0].As<Napi::String>().Utf8Value();
  dlerror();  // clear a stale message
  if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    const char* why = dlerror();
    Napi::Error::New(env, why != nullptr ? why : path + ": dlopen failed").ThrowAsJavaScriptException();
  }
  return env.Undefined();
}

}  // namespace

void InitSharedLibrary(Napi::Env env, Napi::Object exports) {
  exports.Set("loadSharedLibrary", Napi::Function::New(env, LoadSharedLibrary, "loadSharedLibrary"));
}

}  // namespace tritium
