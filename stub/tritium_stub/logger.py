"""pb_utils.Logger, and the one function every log record of the stub goes through."""

import enum
import os
import sys
import time

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
            channel.send({"t": "log", "level": level, "msg": message, "file": file,
                          "line": line})
            return
        except Exception:
            pass  # a closed channel during teardown: fall back to stderr
    now = time.time()
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now))
    micros = int((now % 1) * 1_000_000)
    sys.stderr.write(f"{_LETTER[level]}{stamp}.{micros:06d} {os.getpid()} {file}:{line}] "
                     f"{message}\n")
    sys.stderr.flush()


def _emit_from_caller(level, message):
    if not isinstance(message, str):
        raise TypeError(f"Logger: message must be str, got {type(message)}")
    caller = sys._getframe(2)
    emit(level, message, os.path.basename(caller.f_code.co_filename), caller.f_lineno)


class Logger:
    INFO = LogLevel.INFO
    WARNING = LogLevel.WARNING
    ERROR = LogLevel.ERROR
    VERBOSE = LogLevel.VERBOSE

    @staticmethod
    def log(message, level=LogLevel.INFO):
        if not isinstance(level, LogLevel):
            raise TypeError(f"Logger.log(): level must be a Logger level, got {type(level)}")
        _emit_from_caller(level.value, message)

    @staticmethod
    def log_info(message):
        _emit_from_caller("INFO", message)

    @staticmethod
    def log_warn(message):
        _emit_from_caller("WARNING", message)

    @staticmethod
    def log_error(message):
        _emit_from_caller("ERROR", message)

    @staticmethod
    def log_verbose(message):
        _emit_from_caller("VERBOSE", message)
