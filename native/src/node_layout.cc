// `layout`: layout.h's constants as a frozen object, what src/backends/python/ipc/shm-layout.ts
// re-exports, so Node reads the header where the stub's extension (built from the same
// layout.h) writes it.
#include "node_layout.h"

#include "layout.h"

namespace tritium {

void InitLayout(Napi::Env env, Napi::Object exports) {
  Napi::Object layout = Napi::Object::New(env);
  layout.Set("MAGIC", Napi::String::New(env, ring::kMagic, sizeof ring::kMagic));
  for (const ring::Constant& c : ring::kConstants) layout.Set(c.name, Napi::Number::New(env, static_cast<double>(c.value)));
  layout.Freeze();
  exports.Set("layout", layout);
}

}  // namespace tritium
