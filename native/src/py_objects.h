// The stub's hot pb_utils objects in C (py_objects.cc), added to the _tritium_ipc module.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace tritium::pyobjects {

// Adds TensorBase, RequestBase, ResponseBase and the functions of py_objects.cc to `module`.
// Without numpy headers at build time it adds nothing (the stub then keeps its Python objects).
int AddToModule(PyObject* module);

}  // namespace tritium::pyobjects
