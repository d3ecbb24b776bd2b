"""A model's own readiness check, `is_ready()` (docs/protocol-notes.md, "A model's own readiness check"), served off the main
thread.

The main thread is the only reader of ring A and may be inside a long `execute`, so readiness
requests come through a pipe of their own (TRITIUM_STUB_READY_FD, docs/ipc.md "Readiness
requests"): a daemon thread blocks on it, calls `is_ready()` and answers on ring B with
`{t:"ready_done", seq, ready, err?}`. Started only for a model that defines `is_ready`; a model
without one never sees a readiness message.
"""

import os
import threading

from . import async_loop
from .errors import format_exception
from .messages import READY_DONE

READY_FD_ENV = "TRITIUM_STUB_READY_FD"
NOT_BOOL = "is_ready() must return a boolean value"
_WORD = 4  # one little-endian u32 sequence number per request


def ready_fd_setting(env):
    """The descriptor Node's readiness pipe was inherited as, made private to this process;
    None without one."""
    raw = env.get(READY_FD_ENV)
    if not raw:
        return None
    fd = int(raw)
    try:
        # Not for processes the model starts: an inherited copy would keep the pipe open after
        # this stub is gone. Blocking: the thread sleeps in read(2) until a request comes.
        os.set_inheritable(fd, False)
        os.set_blocking(fd, True)
    except OSError:
        return None  # not open: this stub serves no readiness requests
    return fd


def has_ready_fn(model):
    return callable(getattr(model, "is_ready", None))


def evaluate(model):
    """(ready, error_text) of one call of `model.is_ready()`; error_text is None unless it
    raised or returned something other than a bool (then the model is not ready)."""
    try:
        result = model.is_ready()
        if async_loop.is_coroutine(result):
            result = async_loop.run(result)
    except (Exception, SystemExit) as e:
        return False, format_exception(e)
    if not isinstance(result, bool):
        return False, NOT_BOOL
    return result, None


def answer(seq, ready, error):
    msg = {"t": READY_DONE, "seq": seq, "ready": ready}
    if error is not None:
        msg["err"] = error
    return msg


def serve(fd, model, channel):
    """Answers requests read from `fd` until Node closes its end or the channel closes."""
    pending = b""
    while True:
        try:
            chunk = os.read(fd, 256)
        except InterruptedError:
            continue
        except OSError:
            return
        if not chunk:
            return
        pending += chunk
        whole = len(pending) // _WORD * _WORD
        if not whole:
            continue
        # Node sends one request at a time; should several be waiting, one call answers the
        # newest, which is the one Node waits for.
        seq = int.from_bytes(pending[whole - _WORD : whole], "little")
        pending = pending[whole:]
        ready, error = evaluate(model)
        try:
            channel.send(answer(seq, ready, error))
        except RuntimeError:  # channel closed: the stub is stopping
            return


def start(fd, model, channel):
    thread = threading.Thread(target=serve, args=(fd, model, channel), daemon=True, name="tritium-readiness")
    thread.start()
    return thread
