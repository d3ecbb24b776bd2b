"""Route Python `logging` records and uncaught thread exceptions to Node's log.

The handler is installed as `logging.lastResort` rather than on the root logger: records
reach it exactly when the model configured no handler, so `logging.basicConfig(...)` in a
model keeps working as the user wrote it (those lines go to stderr, which Node also labels).
"""

import logging
import os
import threading
import traceback

from .logger import emit


def level_name(levelno):
    if levelno >= logging.ERROR:
        return "ERROR"
    if levelno >= logging.WARNING:
        return "WARNING"
    if levelno >= logging.INFO:
        return "INFO"
    return "VERBOSE"


class ChannelHandler(logging.Handler):
    def emit(self, record):
        try:
            message = self.format(record)
            if record.name != "root":
                message = f"{record.name}: {message}"
            emit(level_name(record.levelno), message, record.filename, record.lineno)
        except Exception:
            self.handleError(record)


def log_exception(prefix, exc):
    """Log an exception with its traceback at ERROR, located at its innermost frame."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    file, line = "", 0
    tb = exc.__traceback__
    while tb is not None:
        file, line = os.path.basename(tb.tb_frame.f_code.co_filename), tb.tb_lineno
        tb = tb.tb_next
    emit("ERROR", f"{prefix}{text.rstrip()}", file, line)


def _thread_excepthook(args):
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    log_exception(f"Exception in thread {name}:\n", args.exc_value)


def install():
    logging.lastResort = ChannelHandler()
    threading.excepthook = _thread_excepthook
