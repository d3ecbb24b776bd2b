"""Exit when the parent (the Node server) is gone, so no stub outlives its server."""

import os
import threading
import time

from .state import STATE


def _parent_gone(parent_pid, original_ppid):
    # getppid() changes when we are re-parented, which also covers a recycled parent pid.
    if original_ppid == parent_pid and os.getppid() != parent_pid:
        return True
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, owned by someone else
    return False


def _watch(parent_pid, period_s):
    original_ppid = os.getppid()
    while True:
        time.sleep(period_s)
        if _parent_gone(parent_pid, original_ppid):
            try:
                from .logger import emit

                STATE.channel = None  # nobody reads the ring any more: log to stderr
                emit("INFO", "Non-graceful termination detected.", "parent_watch.py", 0)
            except BaseException:
                # stderr is a pipe to the dead server: the write may raise BrokenPipeError.
                pass
            finally:
                os._exit(1)


def start(parent_pid, period_s=0.3):
    threading.Thread(target=_watch, args=(parent_pid, period_s), daemon=True, name="tritium-parent-watch").start()
