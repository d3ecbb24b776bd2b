"""TritonError, TritonModelException, and pybind-style exception text.

Triton's stub is C++ with pybind11, so the texts users and QA tests see are pybind's:
`<Class>: <text>` followed by an `At:` block listing Python frames innermost first. We
reproduce that format and leave our own (shim) frames out, since in Triton those are C++.
"""

import os

# Frames of this package stand for Triton's C++ and are left out of tracebacks.
_SHIM_DIR = os.path.dirname(os.path.abspath(__file__))


class TritonModelException(Exception):
    """Raised by every failing pb_utils call; models raise it to fail a call too."""

    def message(self):
        return str(self)


class TritonError:
    """An error attached to an InferenceResponse; codes equal TRITONSERVER_Error_Code."""

    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    __slots__ = ("_message", "_code")

    def __init__(self, message, code=INTERNAL):
        if isinstance(message, bytes):
            message = message.decode("utf-8", "replace")
        if not isinstance(message, str):
            raise TypeError(
                "TritonError(): incompatible constructor arguments; message must be str, "
                f"got {type(message)}")
        # bool is an int subclass but never a valid code; pybind's enum caster rejects it too.
        if type(code) is bool or not isinstance(code, int) or not 0 <= code <= 7:
            raise TypeError(
                "TritonError(): incompatible constructor arguments; code must be one of "
                f"the TritonError codes, got {code!r}")
        self._message = message
        self._code = int(code)

    def message(self):
        return self._message

    def code(self):
        return self._code

    def __str__(self):
        return self._message

    def __repr__(self):
        return f"TritonError({self._message!r}, code={self._code})"


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
