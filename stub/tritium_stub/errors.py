"""TritonError, TritonModelException, and pybind-style exception text.

Triton's stub is C++ with pybind11, so the texts users and QA tests see are pybind's:
`<Class>: <text>` followed by an `At:` block listing Python frames innermost first. We
reproduce that format and leave our own (shim) frames out, since in Triton those are C++.
"""

import enum
import os

from .pybind_args import MODULE, as_str, bind, is_str, mismatch

# Frames of this package stand for Triton's C++ and are left out of tracebacks.
_SHIM_DIR = os.path.dirname(os.path.abspath(__file__))


class TritonModelException(Exception):
    """Raised by every failing pb_utils call; models raise it to fail a call too."""

    def message(self):
        return str(self)


# Triton's codes are a pybind enum named `__ErrorCode` (its repr shows in TypeError texts); an
# IntEnum keeps them equal to TRITONSERVER_Error_Code numbers for comparisons and the wire.
_ErrorCode = enum.IntEnum(
    "__ErrorCode",
    [
        ("UNKNOWN", 0),
        ("INTERNAL", 1),
        ("NOT_FOUND", 2),
        ("INVALID_ARG", 3),
        ("UNAVAILABLE", 4),
        ("UNSUPPORTED", 5),
        ("ALREADY_EXISTS", 6),
        ("CANCELLED", 7),
    ],
)
_ErrorCode.__qualname__ = "TritonError.__ErrorCode"

_ERROR_SIGNATURE = (
    f"{MODULE}.TritonError(message: str, code: {MODULE}.TritonError.__ErrorCode = <__ErrorCode.INTERNAL: 1>)"
)


class TritonError:
    """An error attached to an InferenceResponse; codes equal TRITONSERVER_Error_Code."""

    UNKNOWN = _ErrorCode.UNKNOWN
    INTERNAL = _ErrorCode.INTERNAL
    NOT_FOUND = _ErrorCode.NOT_FOUND
    INVALID_ARG = _ErrorCode.INVALID_ARG
    UNAVAILABLE = _ErrorCode.UNAVAILABLE
    UNSUPPORTED = _ErrorCode.UNSUPPORTED
    ALREADY_EXISTS = _ErrorCode.ALREADY_EXISTS
    CANCELLED = _ErrorCode.CANCELLED

    __slots__ = ("_message", "_code")

    def __init__(self, *args, **kwargs):
        message, code, ok = _error_args(args, kwargs)
        if not ok:
            # A plain int is refused too: pybind's enum caster takes only the enum's members.
            raise mismatch("__init__", _ERROR_SIGNATURE, args, kwargs, constructor=True)
        self._message = as_str(message)
        self._code = _ErrorCode(code)

    def message(self):
        return self._message

    def code(self):
        return self._code

    def __str__(self):
        return self._message


def _error_args(args, kwargs):
    """(message, code, acceptable) for TritonError(message, code=INTERNAL)."""
    a = bind(("message", "code"), {"code": _ErrorCode.INTERNAL}, args, kwargs)
    if a is None:
        return None, None, False
    return a["message"], a["code"], is_str(a["message"]) and isinstance(a["code"], _ErrorCode)


def _is_user_frame(filename):
    return not os.path.abspath(filename).startswith(_SHIM_DIR + os.sep)


def format_exception(exc):
    """Render `exc` the way pybind11's error_already_set::what() does."""
    text = f"{type(exc).__name__}: {exc}"
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if _is_user_frame(code.co_filename):
            frames.append(f"  {code.co_filename}({tb.tb_lineno}): {code.co_name}\n")
        tb = tb.tb_next
    if not frames:
        return text
    frames.reverse()
    return text + "\n\nAt:\n" + "".join(frames)
