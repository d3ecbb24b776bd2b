// _tritium_objects: the stub's hot pb_utils objects in C: the storage and per-request methods
// of Tensor, InferenceRequest and InferenceResponse, the decode of an `exec` message's requests
// and the copy of output tensors into the stub's arena (docs/design.md, "The stub's objects").
// It uses numpy's C API, so unlike _tritium_ipc it is built for one interpreter (its
// EXT_SUFFIX); under any other the stub keeps its pure-Python objects.
//
//   TensorBase, RequestBase, ResponseBase   base types; stub/tritium_stub/{tensor,request,response}.py
//                                           subclass them (names and error texts stay Python's)
//   objects_init(config)                    numpy's C API and the Python helpers (once per process)
//   received(reqs) -> [InferenceRequest]    the requests of one exec message
//   encode_outputs(channel, outputs, requested, blocks) -> [descriptor]
//
// Each type keeps the attribute names of the pure-Python class's __slots__ (`_name`, `_array`,
// `_request_id`, ...) as members, so the Python code that is not ported (BLS, the sender, DLPack,
// argument checking and its error texts) runs unchanged on either implementation. Every case the
// C fast path does not cover (a str subclass, a non-contiguous array, BYTES tensors, a bad
// descriptor, ...) calls the pure-Python code, which raises or builds exactly as before.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <cstring>
#include <initializer_list>
#include <iterator>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "layout.h"
#if NPY_ABI_VERSION < 0x02000000
#define PyDataType_ELSIZE(descr) ((descr)->elsize)
#endif

namespace {

// ---- configuration (objects_init) -------------------------------------------------------

struct Config {
  PyTypeObject* tensor_type;    // tensor.Tensor (subclass of TensorBase)
  PyTypeObject* request_type;   // request.InferenceRequest
  PyObject* tensor_init;        // the pure-Python Tensor.__init__ (slow path, error texts)
  PyObject* response_init;      // the pure-Python InferenceResponse.__init__
  PyObject* decode_input;       // tensor_codec.decode_input(channel, desc)
  PyObject* write_output;       // tensor_codec.write_output(channel, tensor, blocks)
  PyObject* model_exception;    // errors.TritonModelException
  PyObject* state;              // state.STATE
  PyObject* request_slot;       // response_sender.RequestSlot
  PyObject* request_trace;      // trace.request_trace
  PyObject* no_trace;           // trace.NO_TRACE
  PyObject* default_memory;     // memory.DEFAULT_PREFERRED_MEMORY
  PyObject* fixed;              // dtypes.FIXED: datatype -> numpy dtype
};
Config g;

// Interned names and constants, made at module init.
PyObject *s_empty, *s_braces, *s_channel, *s_config_outputs, *s_name, *s_segment_buffer,
    *s_alloc, *s_shape, *s_output_tensors, *s_id, *s_corr, *s_inputs, *s_outs, *s_flags, *s_timeout, *s_tr,
    *s_params, *s_rid, *s_cflag, *k_zero, *k_one, *k_minus_one;

// Every part a function uses must have been registered (objects_init); true with an error when not.
bool Missing(std::initializer_list<const void*> parts) {
  for (const void* p : parts) {
    if (p == nullptr) {
      PyErr_SetString(PyExc_RuntimeError, "_tritium_ipc.objects_init() has not registered the stub's objects");
      return true;
    }
  }
  return false;
}

// Protocol datatype of an array's dtype, as dtypes.from_numpy for the fixed-size types (by
// dtype equality: native byte order, kind and size); nullptr for everything else (BYTES, object
// and 'S' arrays, byte-swapped or unsupported dtypes), which the Python path handles.
PyObject* DatatypeOf(PyArrayObject* a) {
  static PyObject* names[16];
  static const char* const texts[16] = {"BOOL", "INT8",  "INT16",  "INT32",  "INT64", "UINT8", "UINT16", "UINT32",
                                        "UINT64", "FP16", "FP32", "FP64", nullptr, nullptr, nullptr, nullptr};
  if (names[0] == nullptr) {
    for (int i = 0; i < 12; i++) names[i] = PyUnicode_InternFromString(texts[i]);
  }
  PyArray_Descr* d = PyArray_DESCR(a);
  if (!PyArray_ISNBO(d->byteorder)) return nullptr;
  npy_intp size = PyArray_ITEMSIZE(a);
  int log2 = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : size == 8 ? 3 : -1;
  switch (d->type_num) {
    case NPY_BOOL:
      return names[0];
    case NPY_BYTE:
    case NPY_SHORT:
    case NPY_INT:
    case NPY_LONG:
    case NPY_LONGLONG:
      return log2 < 0 ? nullptr : names[1 + log2];
    case NPY_UBYTE:
    case NPY_USHORT:
    case NPY_UINT:
    case NPY_ULONG:
    case NPY_ULONGLONG:
      return log2 < 0 ? nullptr : names[5 + log2];
    case NPY_HALF:
      return names[9];
    case NPY_FLOAT:
      return names[10];
    case NPY_DOUBLE:
      return names[11];
    default:
      return nullptr;
  }
}

bool IsText(PyObject* s, const char* text) {
  return PyUnicode_Check(s) && PyUnicode_CompareWithASCIIString(s, text) == 0;
}

// `value or "{}"` (parameters()).
PyObject* OrBraces(PyObject* value) {
  if (value == nullptr) {
    Py_INCREF(s_braces);
    return s_braces;
  }
  int t = PyObject_IsTrue(value);
  if (t < 0) return nullptr;
  PyObject* r = t ? value : s_braces;
  Py_INCREF(r);
  return r;
}

PyObject* Field(PyObject* value, const char* attr) {
  if (value == nullptr) {
    PyErr_Format(PyExc_AttributeError, "%s", attr);
    return nullptr;
  }
  Py_INCREF(value);
  return value;
}

// The three object types are PyObject_HEAD, then only PyObject* fields (kFields of them), then
// the weak-reference list: one traverse, clear and dealloc serve them all.
template <typename T>
int Traverse(T* self, visitproc visit, void* arg) {
  PyObject** f = self->fields();
  for (int i = 0; i < T::kFields; i++) Py_VISIT(f[i]);
  Py_VISIT(Py_TYPE(self));  // a heap type: instances own a reference to it
  return 0;
}

template <typename T>
int Clear(T* self) {
  PyObject** f = self->fields();
  for (int i = 0; i < T::kFields; i++) Py_CLEAR(f[i]);
  return 0;
}

template <typename T>
void Dealloc(T* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  if (self->weakrefs != nullptr) PyObject_ClearWeakRefs(reinterpret_cast<PyObject*>(self));
  Clear(self);
  type->tp_free(self);
  Py_DECREF(type);
}

// The pure-Python __init__ `init`, called as init(self, *args, **kwds): every case the C
// constructor does not take, with its checks and error texts.
int CallPythonInit(PyObject* init, PyObject* self, PyObject* args, PyObject* kwds) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject* full = PyTuple_New(n + 1);
  if (full == nullptr) return -1;
  Py_INCREF(self);
  PyTuple_SET_ITEM(full, 0, self);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* a = PyTuple_GET_ITEM(args, i);
    Py_INCREF(a);
    PyTuple_SET_ITEM(full, i + 1, a);
  }
  PyObject* r = PyObject_Call(init, full, kwds);
  Py_DECREF(full);
  if (r == nullptr) return -1;
  Py_DECREF(r);
  return 0;
}

// ---- TensorBase -----------------------------------------------------------------------------

struct TensorObject {
  PyObject_HEAD
  PyObject* name;
  PyObject* dtype;
  PyObject* array;
  PyObject* weakrefs;
  static constexpr int kFields = 3;
  PyObject** fields() { return &name; }
};

PyTypeObject* TensorBaseType;


void TensorSet(TensorObject* t, PyObject* name, PyObject* dtype, PyObject* array) {
  Py_INCREF(name);
  Py_INCREF(dtype);
  Py_INCREF(array);
  Py_XSETREF(t->name, name);
  Py_XSETREF(t->dtype, dtype);
  Py_XSETREF(t->array, array);
}

// Tensor(name: str, array: numpy.ndarray): the common case here, everything else (and every
// error text) in the pure-Python __init__.
int TensorInit(TensorObject* self, PyObject* args, PyObject* kwds) {
  if (Missing({PyArray_API, g.tensor_init})) return -1;
  if ((kwds == nullptr || PyDict_GET_SIZE(kwds) == 0) && PyTuple_GET_SIZE(args) == 2) {
    PyObject* name = PyTuple_GET_ITEM(args, 0);
    PyObject* array = PyTuple_GET_ITEM(args, 1);
    if (PyUnicode_CheckExact(name) && PyUnicode_GET_LENGTH(name) > 0 && PyArray_Check(array) &&
        PyArray_IS_C_CONTIGUOUS(reinterpret_cast<PyArrayObject*>(array))) {
      PyObject* dtype = DatatypeOf(reinterpret_cast<PyArrayObject*>(array));
      if (dtype != nullptr) {
        TensorSet(self, name, dtype, array);
        return 0;
      }
    }
  }
  return CallPythonInit(g.tensor_init, reinterpret_cast<PyObject*>(self), args, kwds);
}

PyObject* NewTensor(PyTypeObject* type, PyObject* name, PyObject* dtype, PyObject* array) {
  TensorObject* t = reinterpret_cast<TensorObject*>(type->tp_alloc(type, 0));
  if (t == nullptr) return nullptr;
  TensorSet(t, name, dtype, array);
  return reinterpret_cast<PyObject*>(t);
}

// Tensor._wrap(name, dtype, array): without validation (request inputs, DLPack imports, BLS outputs).
PyObject* TensorWrap(PyObject* cls, PyObject* const* args, Py_ssize_t n) {
  if (n != 3) {
    PyErr_SetString(PyExc_TypeError, "_wrap(name, dtype, array)");
    return nullptr;
  }
  return NewTensor(reinterpret_cast<PyTypeObject*>(cls), args[0], args[1], args[2]);
}

PyObject* TensorName(TensorObject* self, PyObject*) { return Field(self->name, "_name"); }

PyObject* TensorAsNumpy(TensorObject* self, PyObject*) {
  if (Missing({g.model_exception})) return nullptr;
  if (self->dtype != nullptr && IsText(self->dtype, "BF16")) {
    PyErr_SetString(g.model_exception,
                    "Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and from_dlpack() instead.");
    return nullptr;
  }
  return Field(self->array, "_array");
}

PyObject* ShapeList(PyObject* array) {
  if (PyArray_Check(array)) {
    PyArrayObject* a = reinterpret_cast<PyArrayObject*>(array);
    int nd = PyArray_NDIM(a);
    PyObject* list = PyList_New(nd);
    if (list == nullptr) return nullptr;
    for (int i = 0; i < nd; i++) {
      PyObject* d = PyLong_FromSsize_t(PyArray_DIM(a, i));
      if (d == nullptr) {
        Py_DECREF(list);
        return nullptr;
      }
      PyList_SET_ITEM(list, i, d);
    }
    return list;
  }
  PyObject* shape = PyObject_GetAttr(array, s_shape);
  if (shape == nullptr) return nullptr;
  PyObject* list = PySequence_List(shape);
  Py_DECREF(shape);
  return list;
}

PyObject* TensorShape(TensorObject* self, PyObject*) {
  if (self->array == nullptr) return Field(nullptr, "_array");
  return ShapeList(self->array);
}

PyObject* TensorIsCpu(TensorObject*, PyObject*) { Py_RETURN_TRUE; }

PyMethodDef kTensorMethods[] = {
    {"_wrap", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(TensorWrap)), METH_FASTCALL | METH_CLASS,
     "Build without validation."},
    {"name", reinterpret_cast<PyCFunction>(TensorName), METH_NOARGS, nullptr},
    {"as_numpy", reinterpret_cast<PyCFunction>(TensorAsNumpy), METH_NOARGS, nullptr},
    {"shape", reinterpret_cast<PyCFunction>(TensorShape), METH_NOARGS, nullptr},
    {"is_cpu", reinterpret_cast<PyCFunction>(TensorIsCpu), METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyMemberDef kTensorMembers[] = {
    {"_name", T_OBJECT_EX, offsetof(TensorObject, name), 0, nullptr},
    {"_dtype", T_OBJECT_EX, offsetof(TensorObject, dtype), 0, nullptr},
    {"_array", T_OBJECT_EX, offsetof(TensorObject, array), 0, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(TensorObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

// ---- ResponseBase ---------------------------------------------------------------------------

struct ResponseObject {
  PyObject_HEAD
  PyObject* outputs;
  PyObject* error;
  PyObject* params;
  PyObject* weakrefs;
  static constexpr int kFields = 3;
  PyObject** fields() { return &outputs; }
};

PyTypeObject* ResponseBaseType;


// InferenceResponse(output_tensors=[Tensor, ...]) or InferenceResponse([Tensor, ...]): here;
// anything else through the pure-Python __init__.
int ResponseInit(ResponseObject* self, PyObject* args, PyObject* kwds) {
  if (Missing({g.tensor_type, g.response_init})) return -1;
  PyObject* list = nullptr;
  Py_ssize_t nk = kwds == nullptr ? 0 : PyDict_GET_SIZE(kwds);
  if (PyTuple_GET_SIZE(args) == 1 && nk == 0) {
    list = PyTuple_GET_ITEM(args, 0);
  } else if (PyTuple_GET_SIZE(args) == 0 && nk == 1) {
    list = PyDict_GetItemWithError(kwds, s_output_tensors);
    if (list == nullptr && PyErr_Occurred()) return -1;
  }
  if (list != nullptr && PyList_CheckExact(list)) {
    Py_ssize_t n = PyList_GET_SIZE(list);
    bool all = true;
    for (Py_ssize_t i = 0; i < n && all; i++) all = Py_TYPE(PyList_GET_ITEM(list, i)) == g.tensor_type;
    if (all) {
      PyObject* copy = PyList_GetSlice(list, 0, n);
      if (copy == nullptr) return -1;
      Py_XSETREF(self->outputs, copy);
      Py_INCREF(Py_None);
      Py_XSETREF(self->error, Py_None);
      Py_INCREF(Py_None);
      Py_XSETREF(self->params, Py_None);
      return 0;
    }
  }
  return CallPythonInit(g.response_init, reinterpret_cast<PyObject*>(self), args, kwds);
}

// InferenceResponse._wrap(outputs, error, params): without validation (BLS answers).
PyObject* ResponseWrap(PyObject* cls, PyObject* const* args, Py_ssize_t n) {
  if (n != 3) {
    PyErr_SetString(PyExc_TypeError, "_wrap(outputs, error, params)");
    return nullptr;
  }
  PyTypeObject* type = reinterpret_cast<PyTypeObject*>(cls);
  ResponseObject* r = reinterpret_cast<ResponseObject*>(type->tp_alloc(type, 0));
  if (r == nullptr) return nullptr;
  Py_INCREF(args[0]);
  Py_INCREF(args[1]);
  Py_INCREF(args[2]);
  r->outputs = args[0];
  r->error = args[1];
  r->params = args[2];
  return reinterpret_cast<PyObject*>(r);
}

PyObject* ResponseOutputs(ResponseObject* self, PyObject*) { return Field(self->outputs, "_outputs"); }

PyObject* ResponseHasError(ResponseObject* self, PyObject*) {
  if (self->error == nullptr) return Field(nullptr, "_error");
  return PyBool_FromLong(self->error != Py_None);
}

PyObject* ResponseError(ResponseObject* self, PyObject*) { return Field(self->error, "_error"); }

PyObject* ResponseParameters(ResponseObject* self, PyObject*) {
  if (self->params == nullptr) return Field(nullptr, "_params");
  return OrBraces(self->params);
}

PyMethodDef kResponseMethods[] = {
    {"_wrap", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(ResponseWrap)),
     METH_FASTCALL | METH_CLASS, "Build without validation."},
    {"output_tensors", reinterpret_cast<PyCFunction>(ResponseOutputs), METH_NOARGS, nullptr},
    {"has_error", reinterpret_cast<PyCFunction>(ResponseHasError), METH_NOARGS, nullptr},
    {"error", reinterpret_cast<PyCFunction>(ResponseError), METH_NOARGS, nullptr},
    {"parameters", reinterpret_cast<PyCFunction>(ResponseParameters), METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyMemberDef kResponseMembers[] = {
    {"_outputs", T_OBJECT_EX, offsetof(ResponseObject, outputs), 0, nullptr},
    {"_error", T_OBJECT_EX, offsetof(ResponseObject, error), 0, nullptr},
    {"_params", T_OBJECT_EX, offsetof(ResponseObject, params), 0, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(ResponseObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

// ---- RequestBase ----------------------------------------------------------------------------

// The fields of request.py's __slots__, in that order.
struct RequestObject {
  PyObject_HEAD
  PyObject* request_id;
  PyObject* correlation_id;
  PyObject* inputs;
  PyObject* input_descs;
  PyObject* requested;
  PyObject* model_name;
  PyObject* model_version;
  PyObject* flags;
  PyObject* timeout;
  PyObject* preferred_memory;
  PyObject* trace;
  PyObject* params;
  PyObject* slot;
  PyObject* sender;
  PyObject* release_flags;
  PyObject* weakrefs;
  static constexpr int kFields = 15;
  PyObject** fields() { return &request_id; }
};

PyTypeObject* RequestBaseType;


// A numpy array over [offset, offset + nbytes) of `segment` for a fixed-size input, as
// tensor_codec.block_array makes it (np.frombuffer over the segment's memoryview, then the
// shape): the array holds an export of the memoryview, so the segment cannot be unmapped
// under it. Returns nullptr without an error for a descriptor the Python path must take.
PyObject* InputArray(PyObject* mv, PyObject* np_dtype, PyObject* shape, PyObject* offset_obj, PyObject* nbytes_obj) {
  if (!PyList_CheckExact(shape) || !PyLong_CheckExact(offset_obj) || !PyLong_CheckExact(nbytes_obj)) return nullptr;
  Py_ssize_t nd = PyList_GET_SIZE(shape);
  if (nd > 32) return nullptr;
  long long offset = PyLong_AsLongLong(offset_obj);
  long long nbytes = PyLong_AsLongLong(nbytes_obj);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return nullptr;
  }
  PyArray_Descr* descr = reinterpret_cast<PyArray_Descr*>(np_dtype);
  long long itemsize = PyDataType_ELSIZE(descr);
  if (nbytes <= 0 || offset < 0 || itemsize <= 0 || nbytes % itemsize != 0) return nullptr;
  npy_intp dims[32];
  long long count = 1;
  for (Py_ssize_t i = 0; i < nd; i++) {
    PyObject* d = PyList_GET_ITEM(shape, i);
    if (!PyLong_CheckExact(d)) return nullptr;
    long long v = PyLong_AsLongLong(d);
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return nullptr;
    }
    if (v < 0 || (v > 0 && count > (1LL << 62) / v)) return nullptr;
    dims[i] = static_cast<npy_intp>(v);
    count *= v;
  }
  if (count * itemsize != nbytes) return nullptr;
  Py_buffer view;
  if (PyObject_GetBuffer(mv, &view, PyBUF_SIMPLE) != 0) {
    PyErr_Clear();
    return nullptr;
  }
  bool fits = offset + nbytes <= static_cast<long long>(view.len);
  char* data = static_cast<char*>(view.buf) + offset;
  bool readonly = view.readonly != 0;
  PyBuffer_Release(&view);
  if (!fits) return nullptr;
  PyObject* base = PyMemoryView_FromObject(mv);  // holds an export of the segment's memoryview
  if (base == nullptr) return nullptr;
  Py_INCREF(descr);  // stolen by PyArray_NewFromDescr
  PyObject* array = PyArray_NewFromDescr(&PyArray_Type, descr, static_cast<int>(nd), dims, nullptr, data,
                                         readonly ? NPY_ARRAY_CARRAY_RO : NPY_ARRAY_CARRAY, nullptr);
  if (array == nullptr) {
    Py_DECREF(base);
    return nullptr;
  }
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), base) != 0) {  // steals base
    Py_DECREF(array);
    return nullptr;
  }
  return array;
}

// The input tensors of a received request, decoded on the first inputs() call.
PyObject* DecodeInputs(PyObject* descs) {
  PyObject* channel = PyObject_GetAttr(g.state, s_channel);
  if (channel == nullptr) return nullptr;
  PyObject* seq = PySequence_Fast(descs, "input descriptors must be a sequence");
  if (seq == nullptr) {
    Py_DECREF(channel);
    return nullptr;
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject* out = PyList_New(n);
  PyObject* last_seg = nullptr;  // the segment of the previous input and its memoryview
  PyObject* last_mv = nullptr;
  for (Py_ssize_t i = 0; out != nullptr && i < n; i++) {
    PyObject* desc = PySequence_Fast_GET_ITEM(seq, i);
    PyObject* tensor = nullptr;
    if (PyList_CheckExact(desc) && PyList_GET_SIZE(desc) == 6) {
      PyObject* dtype = PyList_GET_ITEM(desc, 1);
      PyObject* seg = PyList_GET_ITEM(desc, 3);
      PyObject* np_dtype = PyUnicode_CheckExact(dtype) ? PyDict_GetItemWithError(g.fixed, dtype) : nullptr;
      if (np_dtype != nullptr && PyUnicode_CheckExact(seg)) {
        if (last_seg == nullptr || PyUnicode_Compare(last_seg, seg) != 0) {
          Py_XDECREF(last_mv);
          last_mv = PyObject_CallMethodOneArg(channel, s_segment_buffer, seg);
          last_seg = seg;
        }
        PyObject* array = last_mv == nullptr ? nullptr
                                             : InputArray(last_mv, np_dtype, PyList_GET_ITEM(desc, 2),
                                                          PyList_GET_ITEM(desc, 4), PyList_GET_ITEM(desc, 5));
        if (array != nullptr) {
          tensor = NewTensor(g.tensor_type, PyList_GET_ITEM(desc, 0), dtype, array);
          Py_DECREF(array);
          if (tensor == nullptr) Py_CLEAR(out);
        } else if (last_mv == nullptr || PyErr_Occurred()) {
          Py_CLEAR(out);
        }
      } else if (PyErr_Occurred()) {
        Py_CLEAR(out);
      }
    }
    if (out != nullptr && tensor == nullptr) {
      PyObject* args[] = {channel, desc};
      tensor = PyObject_Vectorcall(g.decode_input, args, 2, nullptr);
      if (tensor == nullptr) Py_CLEAR(out);
    }
    if (out != nullptr) PyList_SET_ITEM(out, i, tensor);
  }
  Py_XDECREF(last_mv);
  Py_DECREF(seq);
  Py_DECREF(channel);
  return out;
}

PyObject* RequestInputs(RequestObject* self, PyObject*) {
  if (Missing({PyArray_API, g.tensor_type, g.state, g.fixed, g.decode_input})) return nullptr;
  if (self->inputs == nullptr || self->inputs == Py_None) {
    if (self->input_descs == nullptr) return Field(nullptr, "_input_descs");
    PyObject* inputs = DecodeInputs(self->input_descs);
    if (inputs == nullptr) return nullptr;
    Py_XSETREF(self->inputs, inputs);
  }
  Py_INCREF(self->inputs);
  return self->inputs;
}

PyObject* RequestId(RequestObject* self, PyObject*) { return Field(self->request_id, "_request_id"); }
PyObject* RequestCorrelationId(RequestObject* self, PyObject*) {
  return Field(self->correlation_id, "_correlation_id");
}
PyObject* RequestFlags(RequestObject* self, PyObject*) { return Field(self->flags, "_flags"); }
PyObject* RequestTimeout(RequestObject* self, PyObject*) { return Field(self->timeout, "_timeout"); }
PyObject* RequestTrace(RequestObject* self, PyObject*) { return Field(self->trace, "_trace"); }

PyObject* RequestRequested(RequestObject* self, PyObject*) {
  if (self->requested == nullptr) return Field(nullptr, "_requested");
  return PySet_New(self->requested);
}

PyObject* RequestParameters(RequestObject* self, PyObject*) {
  if (self->params == nullptr) return Field(nullptr, "_params");
  return OrBraces(self->params);
}

// m.get(key, fallback) as a new reference (fallback borrowed); nullptr with an error set.
PyObject* Get(PyObject* m, PyObject* key, PyObject* fallback) {
  PyObject* v = PyDict_GetItemWithError(m, key);
  if (v == nullptr) {
    if (PyErr_Occurred()) return nullptr;
    v = fallback;
  }
  Py_INCREF(v);
  return v;
}

// m[key] as a new reference: KeyError as a dict raises it.
PyObject* Need(PyObject* m, PyObject* key) { return PyObject_GetItem(m, key); }

// One request of an `exec` message (keys per docs/ipc.md), as request.py's _received.
PyObject* Received(PyTypeObject* type, PyObject* m) {
  if (!PyDict_Check(m)) {
    PyErr_SetString(PyExc_TypeError, "a request of an exec message must be a map");
    return nullptr;
  }
  RequestObject* r = reinterpret_cast<RequestObject*>(type->tp_alloc(type, 0));
  if (r == nullptr) return nullptr;
  PyObject* obj = reinterpret_cast<PyObject*>(r);
  PyObject *outs = nullptr, *rid = nullptr, *cflag = nullptr, *tr = nullptr;
  bool ok = false;
  do {
    if ((r->request_id = Get(m, s_id, s_empty)) == nullptr) break;
    if ((r->correlation_id = Get(m, s_corr, k_zero)) == nullptr) break;
    Py_INCREF(Py_None);
    r->inputs = Py_None;
    if ((r->input_descs = Need(m, s_inputs)) == nullptr) break;
    if ((outs = Need(m, s_outs)) == nullptr) break;
    if (outs == Py_None) {  // the client named no outputs: every output of the config
      PyObject* names = PyObject_GetAttr(g.state, s_config_outputs);
      if (names == nullptr) break;
      Py_SETREF(outs, PySequence_List(names));
      Py_DECREF(names);
      if (outs == nullptr) break;
    }
    Py_INCREF(outs);
    r->requested = outs;
    if ((r->model_name = PyObject_GetAttr(g.state, s_name)) == nullptr) break;
    Py_INCREF(k_minus_one);
    r->model_version = k_minus_one;
    if ((r->flags = Get(m, s_flags, k_zero)) == nullptr) break;
    if ((r->timeout = Get(m, s_timeout, k_zero)) == nullptr) break;
    Py_INCREF(g.default_memory);
    r->preferred_memory = g.default_memory;
    if ((tr = Get(m, s_tr, Py_None)) == nullptr) break;
    int traced = PyObject_IsTrue(tr);
    if (traced < 0) break;
    if (traced) {
      if ((rid = Need(m, s_rid)) == nullptr) break;
      if ((r->trace = PyObject_CallOneArg(g.request_trace, rid)) == nullptr) break;
      Py_CLEAR(rid);
    } else {
      Py_INCREF(g.no_trace);
      r->trace = g.no_trace;
    }
    if ((r->params = Get(m, s_params, Py_None)) == nullptr) break;
    if ((rid = Need(m, s_rid)) == nullptr) break;
    if ((cflag = Get(m, s_cflag, Py_None)) == nullptr) break;
    PyObject* args[] = {rid, outs, cflag};
    if ((r->slot = PyObject_Vectorcall(g.request_slot, args, 3, nullptr)) == nullptr) break;
    Py_INCREF(Py_None);
    r->sender = Py_None;
    Py_INCREF(k_one);
    r->release_flags = k_one;
    ok = true;
  } while (false);
  Py_XDECREF(outs);
  Py_XDECREF(rid);
  Py_XDECREF(cflag);
  Py_XDECREF(tr);
  if (!ok) {
    Py_DECREF(obj);
    return nullptr;
  }
  return obj;
}

// InferenceRequest._received(m)
PyObject* RequestReceived(PyObject* cls, PyObject* m) {
  if (Missing({g.state, g.request_slot, g.request_trace, g.no_trace, g.default_memory})) return nullptr;
  return Received(reinterpret_cast<PyTypeObject*>(cls), m);
}

PyMethodDef kRequestMethods[] = {
    {"_received", reinterpret_cast<PyCFunction>(RequestReceived), METH_O | METH_CLASS,
     "A request from an `exec` message."},
    {"inputs", reinterpret_cast<PyCFunction>(RequestInputs), METH_NOARGS, nullptr},
    {"request_id", reinterpret_cast<PyCFunction>(RequestId), METH_NOARGS, nullptr},
    {"correlation_id", reinterpret_cast<PyCFunction>(RequestCorrelationId), METH_NOARGS, nullptr},
    {"requested_output_names", reinterpret_cast<PyCFunction>(RequestRequested), METH_NOARGS, nullptr},
    {"flags", reinterpret_cast<PyCFunction>(RequestFlags), METH_NOARGS, nullptr},
    {"timeout", reinterpret_cast<PyCFunction>(RequestTimeout), METH_NOARGS, nullptr},
    {"parameters", reinterpret_cast<PyCFunction>(RequestParameters), METH_NOARGS, nullptr},
    {"trace", reinterpret_cast<PyCFunction>(RequestTrace), METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};

#define REQUEST_MEMBER(name, field) {name, T_OBJECT_EX, offsetof(RequestObject, field), 0, nullptr}
PyMemberDef kRequestMembers[] = {
    REQUEST_MEMBER("_request_id", request_id),
    REQUEST_MEMBER("_correlation_id", correlation_id),
    REQUEST_MEMBER("_inputs", inputs),
    REQUEST_MEMBER("_input_descs", input_descs),
    REQUEST_MEMBER("_requested", requested),
    REQUEST_MEMBER("_model_name", model_name),
    REQUEST_MEMBER("_model_version", model_version),
    REQUEST_MEMBER("_flags", flags),
    REQUEST_MEMBER("_timeout", timeout),
    REQUEST_MEMBER("_preferred_memory", preferred_memory),
    REQUEST_MEMBER("_trace", trace),
    REQUEST_MEMBER("_params", params),
    REQUEST_MEMBER("_slot", slot),
    REQUEST_MEMBER("_sender", sender),
    REQUEST_MEMBER("_release_flags", release_flags),
    {"__weaklistoffset__", T_PYSSIZET, offsetof(RequestObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};
#undef REQUEST_MEMBER

// ---- module functions -----------------------------------------------------------------------

// received(reqs) -> [InferenceRequest, ...]: the requests of one exec message.
PyObject* ReceivedBatch(PyObject*, PyObject* reqs) {
  if (Missing({g.request_type, g.state, g.request_slot, g.request_trace, g.no_trace, g.default_memory})) return nullptr;
  PyObject* seq = PySequence_Fast(reqs, "reqs must be a sequence");
  if (seq == nullptr) return nullptr;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject* out = PyList_New(n);
  for (Py_ssize_t i = 0; out != nullptr && i < n; i++) {
    PyObject* r = Received(g.request_type, PySequence_Fast_GET_ITEM(seq, i));
    if (r == nullptr) {
      Py_CLEAR(out);
      break;
    }
    PyList_SET_ITEM(out, i, r);
  }
  Py_DECREF(seq);
  return out;
}

// A small output's inline descriptor `[name, datatype, shape, data]` (as
// tensor_codec.write_output): its bytes copied into the message, no block.
PyObject* InlineFixed(TensorObject* t, PyArrayObject* a, npy_intp nbytes) {
  PyObject* shape = ShapeList(t->array);
  if (shape == nullptr) return nullptr;
  PyObject* data = PyBytes_FromStringAndSize(static_cast<const char*>(PyArray_DATA(a)), nbytes);
  PyObject* desc = data == nullptr ? nullptr : PyList_New(4);
  if (desc == nullptr) {
    Py_DECREF(shape);
    Py_XDECREF(data);
    return nullptr;
  }
  Py_INCREF(t->name);
  Py_INCREF(t->dtype);
  PyList_SET_ITEM(desc, 0, t->name);
  PyList_SET_ITEM(desc, 1, t->dtype);
  PyList_SET_ITEM(desc, 2, shape);
  PyList_SET_ITEM(desc, 3, data);
  return desc;
}

// One output of a fixed-size type in a C-contiguous array: inline when small, else a block from
// channel.alloc, one memcpy, its descriptor (as tensor_codec.write_output). nullptr without an
// error: not this case.
PyObject* WriteFixed(PyObject* channel, TensorObject* t, PyObject* blocks) {
  if (t->array == nullptr || t->dtype == nullptr || t->name == nullptr || !PyArray_Check(t->array) ||
      IsText(t->dtype, "BYTES"))
    return nullptr;
  PyArrayObject* a = reinterpret_cast<PyArrayObject*>(t->array);
  if (!PyArray_IS_C_CONTIGUOUS(a) || PyArray_DESCR(a)->type_num == NPY_OBJECT) return nullptr;
  npy_intp nbytes = PyArray_NBYTES(a);
  if (static_cast<uint64_t>(nbytes) <= tritium::ring::kInlineOutputBytes) return InlineFixed(t, a, nbytes);
  PyObject* n_obj = PyLong_FromSsize_t(nbytes);
  if (n_obj == nullptr) return nullptr;
  PyObject* got = PyObject_CallMethodOneArg(channel, s_alloc, n_obj);
  if (got == nullptr) {
    Py_DECREF(n_obj);
    return nullptr;
  }
  PyObject* desc = nullptr;
  if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 3) {
    PyErr_SetString(PyExc_TypeError, "channel.alloc must return (segment, offset, view)");
  } else {
    PyObject* seg = PyTuple_GET_ITEM(got, 0);
    PyObject* off = PyTuple_GET_ITEM(got, 1);
    PyObject* block = PyTuple_Pack(2, seg, off);
    if (block != nullptr && PyList_Append(blocks, block) == 0) {
      bool copied = true;
      if (nbytes > 0) {
        Py_buffer view;
        copied = PyObject_GetBuffer(PyTuple_GET_ITEM(got, 2), &view, PyBUF_WRITABLE) == 0;
        if (copied) {
          if (view.len < nbytes) {
            PyErr_SetString(PyExc_ValueError, "output block is smaller than the tensor");
            copied = false;
          } else {
            std::memcpy(view.buf, PyArray_DATA(a), static_cast<size_t>(nbytes));
          }
          PyBuffer_Release(&view);
        }
      }
      PyObject* shape = copied ? ShapeList(t->array) : nullptr;
      if (shape != nullptr) {
        desc = PyList_New(6);
        if (desc != nullptr) {
          PyObject* items[] = {t->name, t->dtype, shape, seg, off, n_obj};
          for (int i = 0; i < 6; i++) {
            if (i != 2) Py_INCREF(items[i]);
            PyList_SET_ITEM(desc, i, items[i]);
          }
          n_obj = nullptr;  // the descriptor holds it now (incref'd above)
          shape = nullptr;
        }
        Py_XDECREF(shape);
      }
    }
    Py_XDECREF(block);
  }
  Py_XDECREF(n_obj);
  Py_DECREF(got);
  return desc;
}

// encode_outputs(channel, outputs, requested, blocks) -> [descriptor]: the outputs named in
// `requested`, each inline when small, else copied into a new block of the stub's arena
// (appended to `blocks`).
PyObject* EncodeOutputs(PyObject*, PyObject* const* args, Py_ssize_t n) {
  if (Missing({PyArray_API, g.write_output})) return nullptr;
  if (n != 4 || !PyList_Check(args[3])) {
    PyErr_SetString(PyExc_TypeError, "encode_outputs(channel, outputs, requested, blocks: list)");
    return nullptr;
  }
  PyObject *channel = args[0], *requested = args[2], *blocks = args[3];
  PyObject* seq = PySequence_Fast(args[1], "outputs must be a sequence");
  if (seq == nullptr) return nullptr;
  PyObject* out = PyList_New(0);
  Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t i = 0; out != nullptr && i < count; i++) {
    PyObject* t = PySequence_Fast_GET_ITEM(seq, i);
    bool native = PyObject_TypeCheck(t, TensorBaseType);
    PyObject* name = native ? reinterpret_cast<TensorObject*>(t)->name : nullptr;
    if (name != nullptr) Py_INCREF(name);
    else name = PyObject_GetAttrString(t, "_name");
    int wanted = name == nullptr ? -1 : PySequence_Contains(requested, name);
    Py_XDECREF(name);
    if (wanted <= 0) {
      if (wanted < 0) Py_CLEAR(out);
      continue;
    }
    PyObject* desc = native ? WriteFixed(channel, reinterpret_cast<TensorObject*>(t), blocks) : nullptr;
    if (desc == nullptr && !PyErr_Occurred()) {
      PyObject* call[] = {channel, t, blocks};
      desc = PyObject_Vectorcall(g.write_output, call, 3, nullptr);
    }
    if (desc == nullptr || PyList_Append(out, desc) != 0) Py_CLEAR(out);
    Py_XDECREF(desc);
  }
  Py_DECREF(seq);
  return out;
}

// objects_init(config: dict): numpy's C API, then the Python parts the C code calls. Each module
// of the stub registers its own parts (keys below) as it is imported; a later call replaces a part.
PyObject* ObjectsInit(PyObject*, PyObject* config) {
  if (!PyDict_Check(config)) {
    PyErr_SetString(PyExc_TypeError, "objects_init(config: dict)");
    return nullptr;
  }
  if (PyArray_API == nullptr && _import_array() < 0) return nullptr;  // ImportError: numpy ABI mismatch
  struct {
    const char* key;
    PyObject** field;
    PyTypeObject* base;  // a subclass of it is required
    bool dtypes;         // a dict of datatype -> numpy dtype
  } parts[] = {{"tensor_type", reinterpret_cast<PyObject**>(&g.tensor_type), TensorBaseType, false},
               {"request_type", reinterpret_cast<PyObject**>(&g.request_type), RequestBaseType, false},
               {"tensor_init", &g.tensor_init, nullptr, false},
               {"response_init", &g.response_init, nullptr, false},
               {"decode_input", &g.decode_input, nullptr, false},
               {"write_output", &g.write_output, nullptr, false},
               {"model_exception", &g.model_exception, nullptr, false},
               {"state", &g.state, nullptr, false},
               {"request_slot", &g.request_slot, nullptr, false},
               {"request_trace", &g.request_trace, nullptr, false},
               {"no_trace", &g.no_trace, nullptr, false},
               {"default_memory", &g.default_memory, nullptr, false},
               {"fixed", &g.fixed, nullptr, true}};
  PyObject* key;
  PyObject* value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(config, &pos, &key, &value)) {
    auto* part = std::begin(parts);
    while (part != std::end(parts) && !(PyUnicode_Check(key) && PyUnicode_CompareWithASCIIString(key, part->key) == 0))
      part++;
    if (part == std::end(parts)) {
      PyErr_Format(PyExc_KeyError, "objects_init: unknown part %R", key);
      return nullptr;
    }
    if (part->base != nullptr &&
        (!PyType_Check(value) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(value), part->base))) {
      PyErr_Format(PyExc_TypeError, "objects_init: '%s' must be a subclass of %s", part->key, part->base->tp_name);
      return nullptr;
    }
    if (part->dtypes) {
      PyObject* k;
      PyObject* v;
      Py_ssize_t p = 0;
      bool ok = PyDict_Check(value);
      while (ok && PyDict_Next(value, &p, &k, &v)) ok = PyUnicode_Check(k) && PyArray_DescrCheck(v);
      if (!ok) {
        PyErr_SetString(PyExc_TypeError, "objects_init: 'fixed' must map datatypes to numpy dtypes");
        return nullptr;
      }
    }
    Py_INCREF(value);
    Py_XSETREF(*part->field, value);
  }
  Py_RETURN_NONE;
}

PyMethodDef kFunctions[] = {
    {"objects_init", reinterpret_cast<PyCFunction>(ObjectsInit), METH_O,
     "objects_init(config): numpy's C API and the stub's Python helpers for the object types."},
    {"received", reinterpret_cast<PyCFunction>(ReceivedBatch), METH_O,
     "received(reqs) -> [InferenceRequest]: the requests of one exec message."},
    {"encode_outputs", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(EncodeOutputs)), METH_FASTCALL,
     "encode_outputs(channel, outputs, requested, blocks) -> [descriptor]."},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject* MakeType(const char* name, int basicsize, PyMethodDef* methods, PyMemberDef* members, void* dealloc,
                       void* traverse, void* clear, void* init, const char* doc) {
  PyType_Slot slots[] = {{Py_tp_dealloc, dealloc},
                         {Py_tp_traverse, traverse},
                         {Py_tp_clear, clear},
                         {Py_tp_methods, methods},
                         {Py_tp_members, members},
                         {Py_tp_new, reinterpret_cast<void*>(PyType_GenericNew)},
                         {Py_tp_doc, const_cast<char*>(doc)},
                         {Py_tp_init, init},
                         {0, nullptr}};
  if (init == nullptr) slots[7] = {0, nullptr};  // RequestBase: __init__ stays Python's
  PyType_Spec spec = {name, basicsize, 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, slots};
  return reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
}

// Adds TensorBase, RequestBase, ResponseBase and the functions above to `module`.
int AddToModule(PyObject* module) {
  struct {
    PyObject** slot;
    const char* text;
  } names[] = {{&s_empty, ""},
               {&s_braces, "{}"},
               {&s_channel, "channel"},
               {&s_config_outputs, "config_outputs"},
               {&s_name, "name"},
               {&s_segment_buffer, "segment_buffer"},
               {&s_alloc, "alloc"},
               {&s_shape, "shape"},
               {&s_output_tensors, "output_tensors"},
               {&s_id, "id"},
               {&s_corr, "corr"},
               {&s_inputs, "inputs"},
               {&s_outs, "outs"},
               {&s_flags, "flags"},
               {&s_timeout, "timeout"},
               {&s_tr, "tr"},
               {&s_params, "params"},
               {&s_rid, "rid"},
               {&s_cflag, "cflag"}};
  for (auto& n : names) {
    if (*n.slot == nullptr && (*n.slot = PyUnicode_InternFromString(n.text)) == nullptr) return -1;
  }
  if (k_zero == nullptr) {
    k_zero = PyLong_FromLong(0);
    k_one = PyLong_FromLong(1);
    k_minus_one = PyLong_FromLong(-1);
    if (k_zero == nullptr || k_one == nullptr || k_minus_one == nullptr) return -1;
  }
  if (TensorBaseType == nullptr) {
    TensorBaseType = MakeType("_tritium_ipc.TensorBase", sizeof(TensorObject), kTensorMethods, kTensorMembers,
                              reinterpret_cast<void*>(Dealloc<TensorObject>), reinterpret_cast<void*>(Traverse<TensorObject>),
                              reinterpret_cast<void*>(Clear<TensorObject>), reinterpret_cast<void*>(TensorInit),
                              "pb_utils.Tensor's storage and hot methods (tensor.py subclasses it).");
    ResponseBaseType = MakeType("_tritium_ipc.ResponseBase", sizeof(ResponseObject), kResponseMethods,
                                kResponseMembers, reinterpret_cast<void*>(Dealloc<ResponseObject>),
                                reinterpret_cast<void*>(Traverse<ResponseObject>), reinterpret_cast<void*>(Clear<ResponseObject>),
                                reinterpret_cast<void*>(ResponseInit),
                                "pb_utils.InferenceResponse's storage and methods (response.py subclasses it).");
    RequestBaseType = MakeType("_tritium_ipc.RequestBase", sizeof(RequestObject), kRequestMethods, kRequestMembers,
                               reinterpret_cast<void*>(Dealloc<RequestObject>), reinterpret_cast<void*>(Traverse<RequestObject>),
                               reinterpret_cast<void*>(Clear<RequestObject>), nullptr,
                               "pb_utils.InferenceRequest's storage and the methods of a received request.");
    if (TensorBaseType == nullptr || ResponseBaseType == nullptr || RequestBaseType == nullptr) return -1;
  }
  PyObject* types[] = {reinterpret_cast<PyObject*>(TensorBaseType), reinterpret_cast<PyObject*>(RequestBaseType),
                       reinterpret_cast<PyObject*>(ResponseBaseType)};
  const char* type_names[] = {"TensorBase", "RequestBase", "ResponseBase"};
  for (int i = 0; i < 3; i++) {
    Py_INCREF(types[i]);
    if (PyModule_AddObject(module, type_names[i], types[i]) < 0) {
      Py_DECREF(types[i]);
      return -1;
    }
  }
  return PyModule_AddFunctions(module, kFunctions);
}

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_tritium_objects",
                       "The stub's pb_utils objects in C; see stub/tritium_stub/objects.py.", -1, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__tritium_objects(void) {
  PyObject* m = PyModule_Create(&kModule);
  if (m != nullptr && AddToModule(m) < 0) Py_CLEAR(m);
  return m;
}
