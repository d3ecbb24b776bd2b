// msgpack -> Python objects for the messages Node sends the stub (docs/ipc.md, "Messages"),
// the same objects msgpack.unpackb(data, raw=False, strict_map_key=False) makes. Why not just
// that: unpackb makes a new str for every map key and interns it (a hash and a lookup in the
// interpreter's interned table), and the stub's messages are mostly keys. Here a key comes from
// a small table of the keys seen before, already interned, and a short str value from a cache
// of recent ones; an `exec` of one request decodes in about half of unpackb's time (timeit:
// 0.6 µs against 1.2).
//
// Decoded: nil, booleans, integers, floats, str (strict UTF-8), bin (bytes), arrays (lists)
// and maps (dicts; keys of any hashable type). Anything else — ext types, the reserved 0xc1,
// invalid UTF-8, an unhashable key, nesting deeper than kMaxDepth, bytes after the object —
// returns nullptr with an error set, and the caller hands the same bytes to msgpack, which
// decodes them or raises its own error: one wire codec decides what the stub accepts.
//
// Stable ABI only (python_ipc.cc is built against the limited API).
#pragma once

#include <cstdint>
#include <cstring>

namespace tritium::unpack {

constexpr int kMaxDepth = 32;
// Keys up to this long are kept in the table; the stub's own keys are all far shorter.
constexpr size_t kMaxKeyBytes = 24;
// Slots of the table (open addressing): the stub's protocol has a few dozen keys, and a peer
// that sends new ones only fills it; once full, further keys are made as unpackb makes them.
constexpr size_t kKeySlots = 256;

// Short str values repeat too (the kind "exec", datatypes, input names, segment names): a
// direct-mapped cache of the last one seen per slot, replaced on a collision, so a stream of
// unique values (request ids) only ever costs what making them costs anyway.
constexpr size_t kMaxValueBytes = 16;
constexpr size_t kValueSlots = 64;

// A str and the UTF-8 bytes it was made from, in either table; nullptr while empty. The str is
// owned by its table (a key's, interned, for the module's life).
struct StrSlot {
  uint8_t len;
  char bytes[kMaxKeyBytes];
  PyObject* str;

  bool Holds(const char* s, size_t n) const { return str != nullptr && len == n && std::memcmp(bytes, s, n) == 0; }
  // Takes `v` (a reference of the slot's own), releasing what it held.
  void Fill(const char* s, size_t n, PyObject* v) {
    PyObject* old = str;  // released after the slot holds the new one
    str = v;
    len = static_cast<uint8_t>(n);
    std::memcpy(bytes, s, n);
    Py_XDECREF(old);
  }
};
static_assert(kMaxValueBytes <= kMaxKeyBytes, "a value slot is a key slot");

// The tables one decoder keeps between messages.
struct Tables {
  StrSlot keys[kKeySlots];
  size_t key_count = 0;
  StrSlot values[kValueSlots];
};

inline uint32_t Fnv1a(const char* s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ static_cast<uint8_t>(s[i])) * 16777619u;
  return h;
}

class Reader {
 public:
  Reader(const uint8_t* p, size_t n, Tables* tables) : p_(p), end_(p + n), t_(tables) {}

  // The one object of the buffer (nothing may follow it), or nullptr with an error set.
  PyObject* Whole() {
    PyObject* v = Value(0, false);
    if (v != nullptr && p_ != end_) {
      Py_DECREF(v);
      return Refuse("bytes after the object");
    }
    return v;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  Tables* t_;

  static PyObject* Refuse(const char* why) {
    PyErr_SetString(PyExc_ValueError, why);
    return nullptr;
  }

  bool Need(size_t n) const { return static_cast<size_t>(end_ - p_) >= n; }

  uint64_t Be(int n) {  // n bytes big-endian; the caller checked Need(n)
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p_[i];
    p_ += n;
    return v;
  }

  PyObject* Value(int depth, bool key) {
    if (!Need(1)) return Refuse("truncated");
    const uint8_t b = *p_++;
    if (b <= 0x7f) return PyLong_FromLong(b);
    if (b >= 0xe0) return PyLong_FromLong(static_cast<int8_t>(b));
    if ((b & 0xe0) == 0xa0) return Str(b & 0x1f, key);
    if ((b & 0xf0) == 0x90) return Array(b & 0x0f, depth);
    if ((b & 0xf0) == 0x80) return Map(b & 0x0f, depth);
    switch (b) {
      case 0xc0: Py_INCREF(Py_None); return Py_None;
      case 0xc2: Py_INCREF(Py_False); return Py_False;
      case 0xc3: Py_INCREF(Py_True); return Py_True;
      case 0xc4: case 0xc5: case 0xc6: {  // bin 8/16/32
        const int w = 1 << (b - 0xc4);
        if (!Need(w)) return Refuse("truncated");
        const uint64_t n = Be(w);
        if (!Need(n)) return Refuse("truncated");
        PyObject* v = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(p_), static_cast<Py_ssize_t>(n));
        p_ += n;
        return v;
      }
      case 0xca: {  // float 32
        if (!Need(4)) return Refuse("truncated");
        const uint32_t u = static_cast<uint32_t>(Be(4));
        float f;
        std::memcpy(&f, &u, 4);
        return PyFloat_FromDouble(f);
      }
      case 0xcb: {  // float 64
        if (!Need(8)) return Refuse("truncated");
        const uint64_t u = Be(8);
        double d;
        std::memcpy(&d, &u, 8);
        return PyFloat_FromDouble(d);
      }
      case 0xcc: case 0xcd: case 0xce: case 0xcf: {  // uint 8/16/32/64
        const int w = 1 << (b - 0xcc);
        if (!Need(w)) return Refuse("truncated");
        return PyLong_FromUnsignedLongLong(Be(w));
      }
      case 0xd0: case 0xd1: case 0xd2: case 0xd3: {  // int 8/16/32/64
        const int w = 1 << (b - 0xd0);
        if (!Need(w)) return Refuse("truncated");
        const uint64_t u = Be(w);
        const int shift = 64 - 8 * w;  // sign-extend from w bytes
        return PyLong_FromLongLong(static_cast<int64_t>(u << shift) >> shift);
      }
      case 0xd9: case 0xda: case 0xdb: {  // str 8/16/32
        const int w = 1 << (b - 0xd9);
        if (!Need(w)) return Refuse("truncated");
        return Str(Be(w), key);
      }
      case 0xdc: case 0xdd: {  // array 16/32
        const int w = b == 0xdc ? 2 : 4;
        if (!Need(w)) return Refuse("truncated");
        return Array(Be(w), depth);
      }
      case 0xde: case 0xdf: {  // map 16/32
        const int w = b == 0xde ? 2 : 4;
        if (!Need(w)) return Refuse("truncated");
        return Map(Be(w), depth);
      }
      default: return Refuse("a msgpack type the stub leaves to msgpack");  // ext, 0xc1
    }
  }

  PyObject* Str(uint64_t n, bool key) {
    if (!Need(n)) return Refuse("truncated");
    const char* s = reinterpret_cast<const char*>(p_);
    p_ += n;
    if (key && n <= kMaxKeyBytes) return Key(s, static_cast<size_t>(n));
    if (!key && n > 0 && n <= kMaxValueBytes) return ShortValue(s, static_cast<size_t>(n));
    return PyUnicode_DecodeUTF8(s, static_cast<Py_ssize_t>(n), nullptr);
  }

  PyObject* ShortValue(const char* s, size_t n) {
    StrSlot& slot = t_->values[Fnv1a(s, n) % kValueSlots];
    if (slot.Holds(s, n)) {
      Py_INCREF(slot.str);
      return slot.str;
    }
    PyObject* v = PyUnicode_DecodeUTF8(s, static_cast<Py_ssize_t>(n), nullptr);
    if (v == nullptr) return nullptr;
    Py_INCREF(v);
    slot.Fill(s, n, v);
    return v;
  }

  // A map key from the table, or made, interned (as unpackb does) and kept while there is room.
  PyObject* Key(const char* s, size_t n) {
    const uint32_t h = Fnv1a(s, n);
    for (size_t probe = 0; probe < kKeySlots; probe++) {
      StrSlot& slot = t_->keys[(h + probe) % kKeySlots];
      if (slot.str == nullptr) {
        PyObject* k = PyUnicode_DecodeUTF8(s, static_cast<Py_ssize_t>(n), nullptr);
        if (k == nullptr) return nullptr;
        PyUnicode_InternInPlace(&k);
        // Three quarters full is full: probes stay short.
        if (t_->key_count < kKeySlots * 3 / 4) {
          Py_INCREF(k);
          slot.Fill(s, n, k);
          ++t_->key_count;
        }
        return k;
      }
      if (slot.Holds(s, n)) {
        Py_INCREF(slot.str);
        return slot.str;
      }
    }
    return PyUnicode_DecodeUTF8(s, static_cast<Py_ssize_t>(n), nullptr);  // unreachable while 3/4 full is full
  }

  PyObject* Array(uint64_t n, int depth) {
    if (depth >= kMaxDepth) return Refuse("nested too deep");
    if (!Need(n)) return Refuse("truncated");  // every element takes at least one byte
    PyObject* list = PyList_New(static_cast<Py_ssize_t>(n));
    if (list == nullptr) return nullptr;
    for (uint64_t i = 0; i < n; i++) {
      PyObject* v = Value(depth + 1, false);
      if (v == nullptr) {
        Py_DECREF(list);
        return nullptr;
      }
      PyList_SetItem(list, static_cast<Py_ssize_t>(i), v);  // steals v
    }
    return list;
  }

  PyObject* Map(uint64_t n, int depth) {
    if (depth >= kMaxDepth) return Refuse("nested too deep");
    if (!Need(2 * n)) return Refuse("truncated");
    PyObject* dict = PyDict_New();
    if (dict == nullptr) return nullptr;
    for (uint64_t i = 0; i < n; i++) {
      PyObject* k = Value(depth + 1, true);
      PyObject* v = k == nullptr ? nullptr : Value(depth + 1, false);
      const int rc = v == nullptr ? -1 : PyDict_SetItem(dict, k, v);  // TypeError for an unhashable key
      Py_XDECREF(k);
      Py_XDECREF(v);
      if (rc < 0) {
        Py_DECREF(dict);
        return nullptr;
      }
    }
    return dict;
  }
};

}  // namespace tritium::unpack
