"""Exit when the parent (the Node server) is gone, so no stub outlives its server."""

import os

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


class ParentWatch:
    """Checked on the heartbeat's thread after every beat (Channel.start_heartbeat), so an idle
    stub wakes for one timer, not two; an orphan exits within one heartbeat period."""

    def __init__(self, parent_pid):
        self._parent_pid = parent_pid
        self._original_ppid = os.getppid()

    def check(self):
        if _parent_gone(self._parent_pid, self._original_ppid):
            _exit_orphaned()


def _exit_orphaned():
    try:
        from .logger import emit

        STATE.channel = None  # nobody reads the ring any more: log to stderr
        emit("INFO", "Non-graceful termination detected.", "parent_watch.py", 0)
    except BaseException:
        # stderr is a pipe to the dead server: the write may raise BrokenPipeError.
        pass
    finally:
        os._exit(1)
