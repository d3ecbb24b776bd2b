// createArena(base, size, align): one of Node's input arenas (docs/ipc.md, "Arenas"), a thin
// binding over arena_core.h, the allocator the stub's extension runs for its own arenas, so the
// policy (first fit, coalescing, alignment) exists once. Like createRingLink, a plain object of
// functions carrying the C++ state as callback data: alloc and release run for every input of
// every request, and an ObjectWrap method would pay napi_unwrap on each call.
#include "node_arena.h"

#include <cmath>

#include "arena_core.h"

namespace tritium {
namespace {

struct Box {
  arena::Arena arena;
  int functions = 0;  // freed with the last function that uses it
};

constexpr double kMaxSafe = 9007199254740991.0;  // 2^53 - 1: offsets stay exact as JS numbers

// These callbacks use napi directly, not node-addon-api's CallbackInfo: they run for every
// input tensor, and the wrapper's argument handling (an IsNumber check, a value wrapper per
// argument) doubled their cost against the TypeScript arena they replaced.

// One call: the arena (the callback's data) and its first argument, when that is a whole number
// in [0, 2^53).
struct Call {
  arena::Arena* arena = nullptr;
  bool whole = false;
  uint64_t n = 0;
};

Call Read(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 1;
  napi_value arg;
  void* data = nullptr;
  Call c;
  napi_get_cb_info(env, cbinfo, &argc, &arg, nullptr, &data);
  c.arena = &static_cast<Box*>(data)->arena;
  double d;
  if (argc >= 1 && napi_get_value_double(env, arg, &d) == napi_ok && d >= 0 && d <= kMaxSafe && d == std::floor(d)) {
    c.whole = true;
    c.n = static_cast<uint64_t>(d);
  }
  return c;
}

napi_value Number(napi_env env, double v) {
  napi_value out;
  napi_create_double(env, v, &out);
  return out;
}

// alloc(nbytes): the offset of a block of at least nbytes (0 gets a minimal block), -1 when full.
napi_value Alloc(napi_env env, napi_callback_info cbinfo) {
  Call c = Read(env, cbinfo);
  if (c.whole) return Number(env, static_cast<double>(c.arena->Alloc(c.n)));
  napi_throw_type_error(env, nullptr, "alloc(nbytes: a whole number of bytes)");
  return nullptr;
}

// release(offset): returns a block; an offset this arena did not hand out (a double free
// included) throws and changes nothing.
napi_value Release(napi_env env, napi_callback_info cbinfo) {
  Call c = Read(env, cbinfo);
  if (!c.whole) {
    napi_throw_type_error(env, nullptr, "release(offset: a whole number)");
  } else if (!c.arena->Free(c.n)) {
    napi_throw_error(env, nullptr, ("arena: free of unknown block at offset " + std::to_string(c.n)).c_str());
  }
  return nullptr;
}

// owns(offset): whether offset is a live block; false for anything else, never a throw.
napi_value Owns(napi_env env, napi_callback_info cbinfo) {
  Call c = Read(env, cbinfo);
  napi_value out;
  napi_get_boolean(env, c.whole && c.arena->Owns(c.n), &out);
  return out;
}

napi_value BlocksInUse(napi_env env, napi_callback_info cbinfo) {
  return Number(env, static_cast<double>(Read(env, cbinfo).arena->blocks_in_use()));
}

napi_value BytesFree(napi_env env, napi_callback_info cbinfo) {
  return Number(env, static_cast<double>(Read(env, cbinfo).arena->bytes_free()));
}

void Drop(Napi::Env, Box* box) {
  if (--box->functions == 0) delete box;
}

void Bind(Napi::Env env, Napi::Object obj, const char* name, napi_callback cb, Box* box) {
  napi_value fn;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, box, &fn);
  Napi::Function f(env, fn);
  box->functions++;
  f.AddFinalizer(Drop, box);
  obj.Set(name, f);
}

// A whole number in [0, 2^53) at info[i].
bool Whole(const Napi::CallbackInfo& info, size_t i, uint64_t* out) {
  if (info.Length() <= i || !info[i].IsNumber()) return false;
  double d = info[i].As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d <= kMaxSafe && d == std::floor(d))) return false;
  *out = static_cast<uint64_t>(d);
  return true;
}

Napi::Value CreateArena(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint64_t base, size, align;
  if (!Whole(info, 0, &base) || !Whole(info, 1, &size) || !Whole(info, 2, &align)) {
    Napi::TypeError::New(env, "createArena(base, size, align: whole numbers)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  if (align == 0 || (align & (align - 1)) != 0 || base + size > static_cast<uint64_t>(kMaxSafe)) {
    Napi::RangeError::New(env, "createArena: align must be a power of two and base + size below 2^53").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  auto* box = new Box{arena::Arena(base, size, align)};
  Napi::Object obj = Napi::Object::New(env);
  Bind(env, obj, "alloc", Alloc, box);
  Bind(env, obj, "release", Release, box);
  Bind(env, obj, "owns", Owns, box);
  Bind(env, obj, "blocksInUse", BlocksInUse, box);
  Bind(env, obj, "bytesFree", BytesFree, box);
  return obj;
}

}  // namespace

void InitArena(Napi::Env env, Napi::Object exports) {
  exports.Set("createArena", Napi::Function::New(env, CreateArena, "createArena"));
}

}  // namespace tritium
