// _tritium_ipc: the stub's hot path of docs/ipc.md in C++ (CPython's stable ABI, no other
// dependency). Built once against the limited API of Python 3.9 (`_tritium_ipc.abi3.so`), it
// loads in every interpreter from 3.9 on, a model's EXECUTION_ENV_PATH interpreter included.
//
//   Link(n0_fd, spin_us=50.0, spin_mode="adaptive", spin_yield=False, wake_fd=-1, side="stub")
//     maps segment n0 itself from the descriptor (the caller keeps and closes `n0_fd`);
//     side="node" takes Node's ends instead (produces ring A, consumes ring B), which is how
//     the stub's Python tests play Node with this same ring code (test/python/node_emulator.py)
//     .recv(timeout=None) -> bytes | None   next message of ring A (GIL released while waiting)
//     .send(data)                             one message onto ring B (+ doorbell), thread-safe
//     .policy() -> (mode, spin_us, score)     for verbose logs and tests
//     .close()
//   Arena(base, size, align=64): .alloc(n) -> offset | -1, .free(off), .blocks_in_use()
//   unpack(data: bytes) -> object   a message as msgpack.unpackb(data, raw=False, strict_map_key=False)
//     makes it, ValueError (or the error met) for what it leaves to msgpack (py_unpack.h)
//
// The stub's pb_utils objects are another module, _tritium_objects (py_objects.cc), built per
// interpreter: they use numpy's C API, which the stable ABI cannot.
//
// Ring, wait policy and arena logic live in ring_core.h / wait_core.h / arena_core.h, shared
// with the Node addon. Messages are encoded by the msgpack C extension; they are decoded here
// when they hold only what Node writes, else by msgpack too (py_unpack.h says why).
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x03090000
#include <Python.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "arena_core.h"
#include "py_unpack.h"
#include "ring_core.h"
#include "wait_core.h"

namespace {

using tritium::arena::Arena;
namespace ring = tritium::ring;
namespace wait = tritium::wait;

// How long one FUTEX_WAIT lasts before the loop re-checks close() and pending signals. close()
// wakes the futex itself, and a signal that lands on the waiting thread interrupts it, so the
// slice only bounds how late a signal caught by another thread runs its Python handler; an
// idle stub wakes once per slice (docs/benchmarks.md, "An idle server").
constexpr int64_t kWaitSliceNs = int64_t{1000} * 1000 * 1000;
// How long Node's side (tests) waits for ring A space before send() raises TimeoutError.
constexpr int64_t kNodeSideSendNs = int64_t{10} * 1000 * 1000 * 1000;

struct LinkObject {
  PyObject_HEAD
  uint8_t* map;  // this object's own mapping of n0 (MAP_SHARED), nullptr once released
  size_t map_size;
  bool closed;
  int active;  // calls inside the object (GIL held to change): close() defers the release
  ring::Layout layout;
  ring::Consumer* in;   // ring A
  ring::Producer* out;  // ring B
  std::mutex* send_mu;  // ring B producers (model threads) and recv's "space freed" signal
  wait::WaitPolicy* policy;
  bool spin_yield;
  int wake_fd;  // Node's wake eventfd (inherited), or -1: wake ring B's consumer by futex
  bool node_side;  // Node's ends (tests): sets ring A's producer_waiting, never waits in slices
};

// ---- Link lifetime ---------------------------------------------------------------------

void LinkRelease(LinkObject* self) {
  if (self->map != nullptr) {
    munmap(self->map, self->map_size);
    self->map = nullptr;
  }
}

// Instances of a heap type (PyType_FromSpec) own a reference to it.
void FreeHeapObject(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  reinterpret_cast<freefunc>(PyType_GetSlot(type, Py_tp_free))(self);
  Py_DECREF(type);
}

PyObject* AllocHeapObject(PyTypeObject* type) {
  return reinterpret_cast<allocfunc>(PyType_GetSlot(type, Py_tp_alloc))(type, 0);
}

void LinkDealloc(LinkObject* self) {
  LinkRelease(self);
  delete self->in;
  delete self->out;
  delete self->send_mu;
  delete self->policy;
  FreeHeapObject(reinterpret_cast<PyObject*>(self));
}

// Maps the whole segment held by `fd`; nullptr with a Python error when it cannot.
uint8_t* MapSegment(int fd, size_t* size) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    PyErr_SetFromErrno(PyExc_OSError);
    return nullptr;
  }
  if (st.st_size <= 0) {
    PyErr_SetString(PyExc_RuntimeError, "segment n0 is empty");
    return nullptr;
  }
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    PyErr_SetFromErrno(PyExc_OSError);
    return nullptr;
  }
  *size = static_cast<size_t>(st.st_size);
  return static_cast<uint8_t*>(p);
}

PyObject* LinkNew(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  static const char* kw[] = {"n0_fd", "spin_us", "spin_mode", "spin_yield", "wake_fd", "side", nullptr};
  int n0_fd = -1;
  double spin_us = 50.0;
  const char* mode_s = "adaptive";
  int spin_yield = 0;
  int wake_fd = -1;
  const char* side = "stub";
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "i|dspis", const_cast<char**>(kw), &n0_fd, &spin_us, &mode_s,
                                   &spin_yield, &wake_fd, &side))
    return nullptr;
  bool node_side = std::strcmp(side, "node") == 0;
  if (!node_side && std::strcmp(side, "stub") != 0) {
    PyErr_Format(PyExc_ValueError, "side must be 'stub' or 'node', got '%s'", side);
    return nullptr;
  }
  wait::SpinMode mode;
  if (!wait::ParseSpinMode(mode_s, &mode)) {
    PyErr_Format(PyExc_ValueError, "spin_mode must be 'adaptive', 'always' or 'never', got '%s'", mode_s);
    return nullptr;
  }
  if (!(spin_us >= 0) || spin_us > 1e6) {
    PyErr_SetString(PyExc_ValueError, "spin_us must be between 0 and 1000000");
    return nullptr;
  }
  LinkObject* self = reinterpret_cast<LinkObject*>(AllocHeapObject(type));
  if (self == nullptr) return nullptr;
  if ((self->map = MapSegment(n0_fd, &self->map_size)) == nullptr) {
    Py_DECREF(self);
    return nullptr;
  }
  std::string why;
  if (!self->layout.Check(self->map, static_cast<uint64_t>(self->map_size), &why)) {
    PyErr_SetString(PyExc_RuntimeError, why.c_str());
    Py_DECREF(self);
    return nullptr;
  }
  const ring::Layout& l = self->layout;
  self->node_side = node_side;
  if (node_side) {
    self->in = new ring::Consumer(l.base, l.b_data, l.capacity, ring::kRingB);
    self->out = new ring::Producer(l.base, l.a_data, l.capacity, ring::kRingA);
  } else {
    self->in = new ring::Consumer(l.base, l.a_data, l.capacity, ring::kRingA);
    self->out = new ring::Producer(l.base, l.b_data, l.capacity, ring::kRingB);
  }
  self->send_mu = new std::mutex();
  self->policy = new wait::WaitPolicy(mode, static_cast<int64_t>(spin_us * 1000));
  self->spin_yield = spin_yield != 0;
  self->wake_fd = wake_fd;
  return reinterpret_cast<PyObject*>(self);
}

// Every method brackets its work with Enter/Leave so close() never unmaps under a call.
bool Enter(LinkObject* self) {
  if (self->closed || self->map == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "channel is closed");
    return false;
  }
  self->active++;
  return true;
}

void Leave(LinkObject* self) {
  if (--self->active == 0 && self->closed) LinkRelease(self);
}

// Takes the producer lock without holding the GIL while blocked: the holder may be a thread
// waiting for ring B space with the GIL released, and must be able to come back.
void LockSend(LinkObject* self) {
  if (self->send_mu->try_lock()) return;
  Py_BEGIN_ALLOW_THREADS
  self->send_mu->lock();
  Py_END_ALLOW_THREADS
}

// ---- recv ------------------------------------------------------------------------------

// After ring A space was freed: Node queued messages because ring A was full, tell it.
void SignalSpaceFreed(LinkObject* self) {
  uint32_t* flag = self->in->producer_waiting();
  // The head store (release) must be visible before we read the flag: full barrier.
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (__atomic_load_n(flag, __ATOMIC_SEQ_CST) == 0) return;
  wait::StoreU32(flag, 0);
  LockSend(self);
  self->out->Publish(true, self->wake_fd);
  self->send_mu->unlock();
}

// Pops one message; sets a Python error on corruption. Returns nullptr with no error when empty.
PyObject* PopOne(LinkObject* self, bool* corrupt) {
  std::string msg, why;
  ring::Status st = self->in->Next(&msg, &why);
  if (self->in->advanced()) SignalSpaceFreed(self);
  if (st == ring::Status::kCorrupt) {
    *corrupt = true;
    PyErr_Format(PyExc_RuntimeError, "ring %s is corrupt: %s", self->node_side ? "B" : "A", why.c_str());
    return nullptr;
  }
  if (st == ring::Status::kEmpty) return nullptr;
  return PyBytes_FromStringAndSize(msg.data(), static_cast<Py_ssize_t>(msg.size()));
}

PyObject* LinkRecv(LinkObject* self, PyObject* args, PyObject* kwds) {
  static const char* kw[] = {"timeout", nullptr};
  PyObject* timeout_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O", const_cast<char**>(kw), &timeout_obj)) return nullptr;
  int64_t deadline = -1;
  if (timeout_obj != Py_None) {
    double t = PyFloat_AsDouble(timeout_obj);
    if (t == -1.0 && PyErr_Occurred()) return nullptr;
    deadline = wait::NowNs() + static_cast<int64_t>((t > 0 ? t : 0) * 1e9);
  }
  if (!Enter(self)) return nullptr;
  PyObject* result = nullptr;
  uint32_t* db = self->in->doorbell();
  // Set after a slice ran out: the ring stayed empty for a whole slice, so polling before the
  // next one cannot pay, and the policy's load reading (a /proc read) is skipped.
  bool idle = false;
  for (;;) {
    // Read the doorbell before looking: any later push changes it, so the wait cannot miss it.
    uint32_t v = wait::LoadU32(db);
    bool corrupt = false;
    result = PopOne(self, &corrupt);
    if (result != nullptr || corrupt) break;
    if (self->in->HasData()) continue;  // a partial message: keep draining
    if (self->closed) break;
    int64_t now = wait::NowNs();
    if (deadline >= 0 && now >= deadline) break;
    int64_t slice = kWaitSliceNs;
    // Node's side (tests) waits the whole timeout in one FUTEX_WAIT, as the event loop waits for
    // its eventfd: a stub that publishes without waking it then times out instead of being
    // rescued by the next slice.
    if (deadline >= 0 && (deadline - now < slice || self->node_side)) slice = deadline - now;
    int r = 0;
    bool spun = false;
    ring::Consumer* in = self->in;
    wait::WaitPolicy* policy = self->policy;
    bool yield = self->spin_yield;
    uint32_t* sleeping = in->sleeping();
    Py_BEGIN_ALLOW_THREADS
    int64_t budget = idle ? 0 : policy->Budget(now);
    spun = wait::Spin(budget, yield, [in] { return in->HasData(); });
    if (!spun) {
      wait::StoreU32(sleeping, 1);  // the peer wakes us only when this is set (Producer::Publish)
      r = wait::FutexWait(db, v, slice);
      wait::StoreU32(sleeping, 0);
    }
    if (r != -ETIMEDOUT) policy->Observe(wait::NowNs() - now, budget > 0);
    Py_END_ALLOW_THREADS
    idle = r == -ETIMEDOUT;
    // No Python signal handler runs while we sit in C: give them a chance between slices, and
    // at once when a signal interrupted the wait.
    if ((r == -ETIMEDOUT || r == -EINTR) && PyErr_CheckSignals() != 0) break;
  }
  Leave(self);
  if (result == nullptr && !PyErr_Occurred()) Py_RETURN_NONE;
  return result;
}

// ---- send ------------------------------------------------------------------------------

// Ring A's "producer is waiting for space" word, which Node's side sets while ring A is full.
uint32_t* ProducerWaiting(LinkObject* self) {
  return reinterpret_cast<uint32_t*>(self->layout.base + ring::kRingA.producer_waiting);
}

// The bytes of a message to send: bytes or bytearray (the buffer protocol is not in the
// stable ABI before 3.11). The object must stay alive, and a bytearray unresized, meanwhile.
bool MessageBytes(PyObject* arg, const uint8_t** p, uint64_t* n) {
  if (PyBytes_Check(arg)) {
    char* b;
    Py_ssize_t len;
    if (PyBytes_AsStringAndSize(arg, &b, &len) != 0) return false;
    *p = reinterpret_cast<const uint8_t*>(b);
    *n = static_cast<uint64_t>(len);
    return true;
  }
  if (PyByteArray_Check(arg)) {
    *p = reinterpret_cast<const uint8_t*>(PyByteArray_AsString(arg));
    *n = static_cast<uint64_t>(PyByteArray_Size(arg));
    return true;
  }
  PyErr_SetString(PyExc_TypeError, "send() takes bytes or bytearray");
  return false;
}

PyObject* LinkSend(LinkObject* self, PyObject* arg) {
  const uint8_t* p;
  uint64_t total;
  if (!MessageBytes(arg, &p, &total)) return nullptr;
  Py_INCREF(arg);  // other threads run while we wait for ring B space
  if (!Enter(self)) {
    Py_DECREF(arg);
    return nullptr;
  }
  ring::Producer* out = self->out;
  LockSend(self);
  uint64_t off = 0;
  double pause_s = 0;
  bool waited = false;
  const char* failed = nullptr;
  // Node's side (tests) gives up on a stub that never drains ring A instead of hanging.
  int64_t give_up = self->node_side ? wait::NowNs() + kNodeSideSendNs : -1;
  for (;;) {
    uint64_t reached = out->Write(p, total, off);
    if (reached >= total && (total > 0 || out->Unpublished())) break;
    if (reached > off) {
      off = reached;
      pause_s = 0;
    }
    // Ring full: publish what we have so the peer drains it, then back off (up to 1 ms) with
    // the GIL released; the lock keeps our fragments contiguous. Node's side also says it waits
    // (ring A's producer_waiting), which the stub answers with a ring B doorbell (docs/ipc.md).
    out->Publish(true, self->wake_fd);
    if (self->node_side) wait::StoreU32(ProducerWaiting(self), 1);
    waited = true;
    pause_s = pause_s == 0 ? 1e-5 : (pause_s * 2 > 1e-3 ? 1e-3 : pause_s * 2);
    Py_BEGIN_ALLOW_THREADS
    struct timespec ts{0, static_cast<long>(pause_s * 1e9)};
    nanosleep(&ts, nullptr);
    Py_END_ALLOW_THREADS
    if (self->closed) {
      failed = "channel closed while the ring was full";
      break;
    }
    if (give_up >= 0 && wait::NowNs() > give_up) {
      failed = "ring A stays full: the stub does not drain it";
      break;
    }
  }
  if (!failed) out->Publish(false, self->wake_fd);
  if (self->node_side && waited) wait::StoreU32(ProducerWaiting(self), 0);
  self->send_mu->unlock();
  Py_DECREF(arg);
  Leave(self);
  if (failed) {
    PyErr_SetString(self->closed ? PyExc_RuntimeError : PyExc_TimeoutError, failed);
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* LinkPolicy(LinkObject* self, PyObject*) {
  const char* names[] = {"adaptive", "always", "never"};
  return Py_BuildValue("(sdi)", names[static_cast<int>(self->policy->mode())],
                       static_cast<double>(self->policy->spin_ns()) / 1000.0, self->policy->score());
}

PyObject* LinkClose(LinkObject* self, PyObject*) {
  if (!self->closed) {
    self->closed = true;
    wait::FutexWake(self->in->doorbell());  // a recv on another thread re-checks at once
    if (self->active == 0) LinkRelease(self);
  }
  Py_RETURN_NONE;
}

PyMethodDef kLinkMethods[] = {
    {"recv", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(LinkRecv)), METH_VARARGS | METH_KEYWORDS,
     "recv(timeout=None) -> bytes | None: the next message of ring A."},
    {"send", reinterpret_cast<PyCFunction>(LinkSend), METH_O, "send(data): one message onto ring B."},
    {"policy", reinterpret_cast<PyCFunction>(LinkPolicy), METH_NOARGS, "policy() -> (mode, spin_us, score)."},
    {"close", reinterpret_cast<PyCFunction>(LinkClose), METH_NOARGS, "close(): drop the mapping reference."},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot kLinkSlots[] = {{Py_tp_new, reinterpret_cast<void*>(LinkNew)},
                            {Py_tp_dealloc, reinterpret_cast<void*>(LinkDealloc)},
                            {Py_tp_methods, kLinkMethods},
                            {Py_tp_doc, const_cast<char*>("The stub's end of rings A and B of one region.")},
                            {0, nullptr}};
PyType_Spec kLinkSpec = {"_tritium_ipc.Link", sizeof(LinkObject), 0, Py_TPFLAGS_DEFAULT, kLinkSlots};

// ---- Arena -----------------------------------------------------------------------------

struct ArenaObject {
  PyObject_HEAD
  Arena* arena;
};

void ArenaDealloc(ArenaObject* self) {
  delete self->arena;
  FreeHeapObject(reinterpret_cast<PyObject*>(self));
}

PyObject* ArenaNew(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  static const char* kw[] = {"base", "size", "align", nullptr};
  unsigned long long base = 0, size = 0, align = 64;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "KK|K", const_cast<char**>(kw), &base, &size, &align)) return nullptr;
  if (align == 0 || base + size < base) {
    PyErr_SetString(PyExc_ValueError, "Arena: bad base/size/align");
    return nullptr;
  }
  ArenaObject* self = reinterpret_cast<ArenaObject*>(AllocHeapObject(type));
  if (self == nullptr) return nullptr;
  self->arena = new Arena(base, size, align);
  return reinterpret_cast<PyObject*>(self);
}

PyObject* ArenaAlloc(ArenaObject* self, PyObject* arg) {
  long long n = PyLong_AsLongLong(arg);
  if (n == -1 && PyErr_Occurred()) return nullptr;
  if (n < 0) {
    PyErr_SetString(PyExc_ValueError, "Arena.alloc: negative size");
    return nullptr;
  }
  return PyLong_FromLongLong(self->arena->Alloc(static_cast<uint64_t>(n)));
}

PyObject* ArenaFree(ArenaObject* self, PyObject* arg) {
  long long off = PyLong_AsLongLong(arg);
  if (off == -1 && PyErr_Occurred()) return nullptr;
  if (off < 0 || !self->arena->Free(static_cast<uint64_t>(off))) {
    PyErr_Format(PyExc_ValueError, "arena: free of unknown block at offset %lld", off);
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* ArenaInUse(ArenaObject* self, PyObject*) {
  return PyLong_FromSize_t(self->arena->blocks_in_use());
}

PyMethodDef kArenaMethods[] = {
    {"alloc", reinterpret_cast<PyCFunction>(ArenaAlloc), METH_O, "alloc(nbytes) -> offset, or -1 when full."},
    {"free", reinterpret_cast<PyCFunction>(ArenaFree), METH_O, "free(offset); ValueError for an unknown block."},
    {"blocks_in_use", reinterpret_cast<PyCFunction>(ArenaInUse), METH_NOARGS, "number of live blocks."},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot kArenaSlots[] = {{Py_tp_new, reinterpret_cast<void*>(ArenaNew)},
                             {Py_tp_dealloc, reinterpret_cast<void*>(ArenaDealloc)},
                             {Py_tp_methods, kArenaMethods},
                             {Py_tp_doc, const_cast<char*>("First-fit arena allocator (offsets only).")},
                             {0, nullptr}};
PyType_Spec kArenaSpec = {"_tritium_ipc.Arena", sizeof(ArenaObject), 0, Py_TPFLAGS_DEFAULT, kArenaSlots};

// The map keys and short values unpack() has met (py_unpack.h), for the module's life.
tritium::unpack::Tables g_unpack_tables;

// bytes only: the buffer protocol is not in the limited API of 3.9, and Link.recv makes bytes.
PyObject* Unpack(PyObject*, PyObject* data) {
  char* p;
  Py_ssize_t n;
  if (PyBytes_AsStringAndSize(data, &p, &n) != 0) return nullptr;
  tritium::unpack::Reader reader(reinterpret_cast<const uint8_t*>(p), static_cast<size_t>(n), &g_unpack_tables);
  return reader.Whole();
}

PyMethodDef kModuleMethods[] = {
    {"unpack", reinterpret_cast<PyCFunction>(Unpack), METH_O,
     "unpack(data): a message as msgpack.unpackb(data, raw=False, strict_map_key=False) makes it; "
     "ValueError for what it leaves to msgpack."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_tritium_ipc",
                       "tritium stub IPC hot path (rings, doorbells, arenas); see docs/ipc.md.", -1, kModuleMethods};

}  // namespace

PyMODINIT_FUNC PyInit__tritium_ipc(void) {
  PyObject* m = PyModule_Create(&kModule);
  if (m == nullptr) return nullptr;
  const struct {
    const char* name;
    PyType_Spec* spec;
  } types[] = {{"Link", &kLinkSpec}, {"Arena", &kArenaSpec}};
  for (const auto& t : types) {
    PyObject* type = PyType_FromSpec(t.spec);
    if (type == nullptr || PyModule_AddObject(m, t.name, type) < 0) {
      Py_XDECREF(type);
      Py_DECREF(m);
      return nullptr;
    }
  }
  // layout.h's constants, what stub/tritium_stub/ipc.py re-exports (Node's addon exports the
  // same table), so the stub reads the header where Node writes it.
  for (const tritium::ring::Constant& c : tritium::ring::kConstants) {
    if (PyModule_AddIntConstant(m, c.name, static_cast<long>(c.value)) < 0) {
      Py_DECREF(m);
      return nullptr;
    }
  }
  PyObject* magic = PyBytes_FromStringAndSize(tritium::ring::kMagic, sizeof tritium::ring::kMagic);
  if (magic == nullptr || PyModule_AddObject(m, "MAGIC", magic) < 0) {
    Py_XDECREF(magic);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
