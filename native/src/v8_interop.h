// Bridges napi values and V8 handles. napi exposes no way to build a SharedArrayBuffer over
// external memory, and Atomics are only guaranteed to be real cross-agent atomics on a
// SharedArrayBuffer, so the shm mappings are handed to JS through the V8 BackingStore API.
// A napi_value is, in Node's implementation, the address of a V8 handle slot exactly like a
// v8::Local (node's own v8impl::JsValueFromV8LocalValue is this memcpy); the static_assert
// guards the size assumption.
#pragma once
#include <cstring>
#include <napi.h>
#include <v8.h>

namespace tritium {

inline v8::Local<v8::Value> ToV8(napi_value v) {
  static_assert(sizeof(v8::Local<v8::Value>) == sizeof(napi_value), "napi_value layout");
  v8::Local<v8::Value> local;
  std::memcpy(static_cast<void*>(&local), &v, sizeof v);
  return local;
}

inline napi_value FromV8(v8::Local<v8::Value> local) {
  napi_value v;
  std::memcpy(&v, static_cast<void*>(&local), sizeof v);
  return v;
}

// The backing store of a SharedArrayBuffer, or null when `value` is not one. Whoever holds it
// keeps the memory mapped, whatever becomes of the JS object (shm.cc's deleter unmaps).
inline std::shared_ptr<v8::BackingStore> SabStore(const Napi::Value& value) {
  v8::Local<v8::Value> local = ToV8(value);
  if (local.IsEmpty() || !local->IsSharedArrayBuffer()) return nullptr;
  return local.As<v8::SharedArrayBuffer>()->GetBackingStore();
}

// Returns the base address and length of a SharedArrayBuffer, or false when `value` is not one.
inline bool SabInfo(const Napi::Value& value, uint8_t** data, size_t* length) {
  std::shared_ptr<v8::BackingStore> store = SabStore(value);
  if (!store) return false;
  *data = static_cast<uint8_t*>(store->Data());
  *length = store->ByteLength();
  return true;
}

}  // namespace tritium
