// createRingLink(n0): Node's end of the two rings of segment n0 (docs/ipc.md, "Rings"): it
// produces ring A (Node -> stub) and consumes ring B (stub -> Node). A thin binding over
// ring_core.h, the implementation the stub's extension runs too, so the ring algorithm exists
// once. What stays in TypeScript (StubChannel) is what to send and when: queueing while ring A
// is full, asking the stub for a wake-up, decoding messages.
//
// The link is a plain object of functions that carry the C++ state as their callback data,
// not a Napi::ObjectWrap: these calls are on every request's path, and an ObjectWrap method
// pays for napi_unwrap on each call (measured ~80 ns a call against ~25 ns here).
#include "node_ring.h"

#include <cmath>
#include <memory>
#include <string>

#include "ring_core.h"
#include "v8_interop.h"

namespace tritium {
namespace {

struct Link {
  std::shared_ptr<v8::BackingStore> n0;  // keeps the mapping the rings point into
  ring::Producer out;                    // ring A
  ring::Consumer in;                     // ring B
  int functions = 0;                     // freed with the last function that uses it
};

Link* Of(const Napi::CallbackInfo& info) { return static_cast<Link*>(info.Data()); }

// The bytes of a Uint8Array argument (a Buffer is one); false for anything else.
bool Bytes(const Napi::Value& v, uint8_t** data, uint64_t* length) {
  napi_typedarray_type type;
  size_t n;
  void* p;
  if (napi_get_typedarray_info(v.Env(), v, &type, &n, &p, nullptr, nullptr) != napi_ok || type != napi_uint8_array) return false;
  *data = static_cast<uint8_t*>(p);
  *length = n;
  return true;
}

// write(bytes, offset): Producer::Write of bytes from `offset` on; returns the offset reached
// (bytes.byteLength once all of it is in ring A). Nothing is visible before publish().
Napi::Value Write(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint8_t* bytes;
  uint64_t total;
  if (info.Length() < 2 || !Bytes(info[0], &bytes, &total) || !info[1].IsNumber()) {
    Napi::TypeError::New(env, "write(bytes: Uint8Array, offset: number)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  // Producer::Write starts a record at `offset`: one at the end would be a stray empty record.
  double off = info[1].As<Napi::Number>().DoubleValue();
  if (!(off == 0 || (off > 0 && off < static_cast<double>(total) && off == std::floor(off)))) {
    Napi::RangeError::New(env, "write: offset must be an integer below bytes.byteLength").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  return Napi::Number::New(env, static_cast<double>(Of(info)->out.Write(bytes, total, static_cast<uint64_t>(off))));
}

// publish(): makes what write() put in ring A visible (Producer::Publish: tail, doorbell, and a
// FUTEX_WAKE only when the stub said it sleeps). Nothing happens when nothing was written.
void Publish(const Napi::CallbackInfo& info) {
  ring::Producer& out = Of(info)->out;
  if (out.Unpublished()) out.Publish(false);
}

// hasData(): ring B holds records not yet received (perhaps the start of a message).
Napi::Value HasData(const Napi::CallbackInfo& info) { return Napi::Boolean::New(info.Env(), Of(info)->in.HasData()); }

// receive(scratch): copies the next complete ring-B message into scratch and returns its
// length; -1 when there is none; a length above scratch.byteLength when it does not fit (it
// stays pending: grow scratch and call again). A corrupt ring throws.
Napi::Value Receive(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint8_t* scratch;
  uint64_t room;
  if (info.Length() < 1 || !Bytes(info[0], &scratch, &room)) {
    Napi::TypeError::New(env, "receive(scratch: Uint8Array)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  uint64_t len = 0;
  std::string why;
  switch (Of(info)->in.NextInto(scratch, room, &len, &why)) {
    case ring::Status::kMessage:
    case ring::Status::kTooSmall:
      return Napi::Number::New(env, static_cast<double>(len));
    case ring::Status::kEmpty:
      return Napi::Number::New(env, -1);
    case ring::Status::kCorrupt:
      break;
  }
  Napi::Error::New(env, "ring B is corrupt: " + why).ThrowAsJavaScriptException();
  return env.Undefined();
}

void Release(Napi::Env, Link* link) {
  if (--link->functions == 0) delete link;
}

// Adds `f` (whose callback data is `link`) to the link object as `name`.
void Bind(Napi::Object obj, const char* name, Napi::Function f, Link* link) {
  link->functions++;
  f.AddFinalizer(Release, link);
  obj.Set(name, f);
}

// createRingLink(n0: SharedArrayBuffer): checks the control header (ring_core.h's Layout; an
// Error says what is wrong) and attaches at the positions the header holds now.
Napi::Value CreateRingLink(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::shared_ptr<v8::BackingStore> n0 = info.Length() < 1 ? nullptr : SabStore(info[0]);
  if (!n0) {
    Napi::TypeError::New(env, "createRingLink(n0: SharedArrayBuffer)").ThrowAsJavaScriptException();
    return env.Undefined();
  }
  ring::Layout layout;
  std::string why;
  if (!layout.Check(static_cast<uint8_t*>(n0->Data()), n0->ByteLength(), &why)) {
    Napi::Error::New(env, "createRingLink: " + why).ThrowAsJavaScriptException();
    return env.Undefined();
  }
  auto* link = new Link{std::move(n0), ring::Producer(layout.base, layout.a_data, layout.capacity, ring::kRingA),
                        ring::Consumer(layout.base, layout.b_data, layout.capacity, ring::kRingB)};
  Napi::Object obj = Napi::Object::New(env);
  Bind(obj, "write", Napi::Function::New<Write>(env, "write", link), link);
  Bind(obj, "publish", Napi::Function::New<Publish>(env, "publish", link), link);
  Bind(obj, "hasData", Napi::Function::New<HasData>(env, "hasData", link), link);
  Bind(obj, "receive", Napi::Function::New<Receive>(env, "receive", link), link);
  return obj;
}

}  // namespace

void InitRing(Napi::Env env, Napi::Object exports) {
  exports.Set("createRingLink", Napi::Function::New(env, CreateRingLink, "createRingLink"));
}

}  // namespace tritium
