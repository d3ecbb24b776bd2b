"""Argument checks with pybind11's outcome: Triton's pb_utils classes are C++ bound by pybind11,
so an argument of the wrong type never reaches Triton's code: pybind raises TypeError with its
own text, listing the binding's signature and the arguments it got. Models and QA tests tell a
TypeError (bad argument) from a TritonModelException (Triton refused a well-typed call), so each
entry point checks its arguments here first, the way pybind's type casters accept them.

Signatures are those Triton 2.51's c_python_backend_utils prints (compared on it).
"""

import operator

import numpy as np

MODULE = "c_python_backend_utils"


def mismatch(name, signature, args=(), kwargs=None, constructor=False):
    """pybind11's TypeError for a call no overload accepts. `args` are the positional
    arguments as given (methods include self, constructors do not); `signature` is the
    binding's, e.g. "(message: str) -> None"."""
    invoked = ", ".join(repr(a) for a in args)
    if kwargs:
        invoked += ("; " if args else "") + "kwargs: " + ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    what = "constructor" if constructor else "function"
    return TypeError(
        f"{name}(): incompatible {what} arguments. The following argument types "
        f"are supported:\n    1. {signature}\n\nInvoked with: {invoked}"
    )


def is_str(value):
    # pybind's std::string caster takes str and bytes.
    return isinstance(value, (str, bytes))


def as_str(value):
    return value.decode("utf-8") if isinstance(value, bytes) else value


def is_int(value, bits=64, signed=True):
    """pybind's integer caster: ints (bool included) and objects with __index__ (numpy ints),
    never floats, within the C type's range."""
    if isinstance(value, float):
        return False
    try:
        v = operator.index(value)
    except TypeError:
        return False
    if signed:
        return -(1 << (bits - 1)) <= v < (1 << (bits - 1))
    return 0 <= v < (1 << bits)


def is_float(value):
    # pybind's double caster converts ints, floats and anything with __float__ or __index__.
    if isinstance(value, (int, float, np.number)):
        return True
    return hasattr(value, "__float__") or hasattr(value, "__index__")


def is_bool(value):
    # pybind's bool caster: True/False and numpy.bool_ (None is refused for these bindings).
    return value is True or value is False or isinstance(value, np.bool_)


def is_sequence_of(value, kind, none_ok=False):
    """pybind's std::vector caster: any sequence except str/bytes, every item of `kind`
    (None allowed where the item is a pointer, as for tensors)."""
    if type(value) is list or type(value) is tuple:
        items = value  # the common case, without the generic probing below
    elif isinstance(value, (str, bytes, dict)) or not hasattr(value, "__len__") or not hasattr(value, "__getitem__"):
        return False
    else:
        try:
            items = list(value)
        except TypeError:
            return False
    # A plain loop: this runs for every BLS request and response, and a generator under all()
    # costs more than the checks themselves.
    for x in items:
        if not isinstance(x, kind) and (x is not None or not none_ok):
            return False
    return True


def bind(names, defaults, args, kwargs):
    """The arguments of a call by parameter name, with defaults filled in; None when pybind
    would find no match (too many, unknown or repeated names, a required one missing)."""
    if len(args) > len(names) or any(k not in names for k in kwargs) or any(k in kwargs for k in names[: len(args)]):
        return None
    bound = dict(defaults)
    bound.update(zip(names, args))
    bound.update(kwargs)
    return bound if all(k in bound for k in names) else None
