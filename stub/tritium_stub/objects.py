"""Which implementation of the stub's hot pb_utils objects runs (docs/design.md, "The stub's objects").

`Tensor`, `InferenceRequest` and `InferenceResponse` keep their storage and per-request methods
in C types of the native module _tritium_objects (native/src/py_objects.cc: TensorBase, RequestBase,
ResponseBase), which the classes of tensor.py, request.py and response.py subclass; the decode of
an `exec` message's requests and the copy of output tensors into the arena run there too.
Everything else (argument checks and their error texts, BLS, the response sender, DLPack) is the
same Python code in both implementations.

TRITIUM_STUB_OBJECTS=c (the default) uses the C types when the module loads: it is built for
one interpreter (it uses numpy's C API, which CPython's stable ABI cannot), and only where
numpy's headers were found. TRITIUM_STUB_OBJECTS=python, or no such module for this
interpreter, keeps the pure-Python classes.
"""

import os

from .ipc import load_extension

OBJECTS_ENV = "TRITIUM_STUB_OBJECTS"


def choose(env=None):
    """(module, None) when the C objects are used, else (None, reason)."""
    want = (os.environ if env is None else env).get(OBJECTS_ENV, "c").strip().lower()
    if want in ("python", "py"):
        return None, f"{OBJECTS_ENV}={want}"
    native, why = load_extension("_tritium_objects")
    if native is None:
        return None, why
    try:
        native.objects_init({})  # numpy's C API: an extension built for another numpy ABI refuses here
    except ImportError as e:
        return None, f"numpy's C API is not usable: {e}"
    return native, None


NATIVE, WHY_NOT = choose()
IMPL = "python" if NATIVE is None else "c"


def register(**parts):
    """Hand the C types the Python parts they call (a no-op with the pure-Python objects)."""
    if NATIVE is not None:
        NATIVE.objects_init(parts)


def describe():
    """For the verbose log: which objects this stub uses."""
    return (
        "pb_utils objects: C (_tritium_objects)" if NATIVE is not None else f"pb_utils objects: pure Python ({WHY_NOT})"
    )
