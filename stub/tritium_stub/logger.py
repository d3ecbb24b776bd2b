"""pb_utils.Logger, and the one function every log record of the stub goes through."""

import enum
import os
import sys
import time

from .messages import LOG
from .pybind_args import MODULE, bind, mismatch
from .state import STATE


class LogLevel(enum.Enum):
    # A plain Enum (not IntEnum): Triton's levels are pybind enums, so ints raise TypeError.
    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    VERBOSE = "VERBOSE"


_LETTER = {"INFO": "I", "WARNING": "W", "ERROR": "E", "VERBOSE": "I"}


def emit(level, message, file, line):
    """Send one record to Node, or write it to stderr in Triton's format before the channel
    exists. `level` is "INFO", "WARNING", "ERROR" or "VERBOSE"."""
    if level == "VERBOSE" and STATE.log_verbose < 1:
        return
    channel = STATE.channel
    if channel is not None:
        try:
            channel.send({"t": LOG, "level": level, "msg": message, "file": file, "line": line})
            return
        except Exception:
            pass  # a closed channel during teardown: fall back to stderr
    now = time.time()
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now))
    micros = int((now % 1) * 1_000_000)
    sys.stderr.write(f"{_LETTER[level]}{stamp}.{micros:06d} {os.getpid()} {file}:{line}] {message}\n")
    sys.stderr.flush()


def _emit_from_caller(level, message):
    caller = sys._getframe(2)
    emit(level, message, os.path.basename(caller.f_code.co_filename), caller.f_lineno)


class Logger:
    INFO = LogLevel.INFO
    WARNING = LogLevel.WARNING
    ERROR = LogLevel.ERROR
    VERBOSE = LogLevel.VERBOSE

    @staticmethod
    def log(*args, **kwargs):
        a = bind(("message", "level"), {"level": LogLevel.INFO}, args, kwargs)
        if a is None or not isinstance(a["message"], str) or not isinstance(a["level"], LogLevel):
            raise mismatch(
                "log", f"(message: str, level: {MODULE}.Logger.LogLevel = <LogLevel.INFO: 0>) -> None", args, kwargs
            )
        _emit_from_caller(a["level"].value, a["message"])

    @staticmethod
    def log_info(*args, **kwargs):
        _emit_from_caller("INFO", _message("log_info", args, kwargs))

    @staticmethod
    def log_warn(*args, **kwargs):
        _emit_from_caller("WARNING", _message("log_warn", args, kwargs))

    @staticmethod
    def log_error(*args, **kwargs):
        _emit_from_caller("ERROR", _message("log_error", args, kwargs))

    @staticmethod
    def log_verbose(*args, **kwargs):
        _emit_from_caller("VERBOSE", _message("log_verbose", args, kwargs))


def _message(name, args, kwargs):
    a = bind(("message",), {}, args, kwargs)
    if a is None or not isinstance(a["message"], str):
        raise mismatch(name, "(message: str) -> None", args, kwargs)
    return a["message"]
