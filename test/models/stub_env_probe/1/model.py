"""Reports what the stub process looks like from inside (test/e2e/stub-fork.test.ts): a forked
stub must look like a spawned one to model code."""

import json
import os
import signal
import sys

import numpy as np
import triton_python_backend_utils as pb_utils


def _inheritable(fd):
    try:
        return os.get_inheritable(fd)
    except OSError:
        return False


def _wakeup_fd():
    # Read without changing it (only the main thread may); None where execute runs elsewhere.
    try:
        old = signal.set_wakeup_fd(-1)
        signal.set_wakeup_fd(old)
        return old
    except ValueError:
        return None


def _facts():
    with open("/proc/self/cmdline", "rb") as f:
        cmdline = [w.decode() for w in f.read().rstrip(b"\0").split(b"\0")]
    fds = sorted(int(f) for f in os.listdir("/proc/self/fd"))
    return {
        "argv": sys.argv,
        "path": sys.path,
        "main": getattr(sys.modules.get("__main__"), "__file__", None),
        "our_main_imported": "main" in sys.modules,
        "env": sorted(k for k in os.environ if k.startswith("TRITIUM_STUB_") or k == "PYTHONUNBUFFERED"),
        "inheritable_fds": [fd for fd in fds if _inheritable(fd)],
        "sigchld_default": signal.getsignal(signal.SIGCHLD) == signal.SIG_DFL,
        "sigint_handler": getattr(signal.getsignal(signal.SIGINT), "__name__", str(signal.getsignal(signal.SIGINT))),
        "wakeup_fd": _wakeup_fd(),
        "stdout_line_buffered": sys.stdout.line_buffering,
        "cmdline": cmdline,
        "pid": os.getpid(),
        "ppid": os.getppid(),
    }


class TritonPythonModel:
    def execute(self, requests):
        facts = json.dumps(_facts())
        out = np.array([facts.encode()], dtype=np.object_)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("FACTS", out)]) for _ in requests]
