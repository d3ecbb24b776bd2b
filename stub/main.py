"""tritium stub entry point: one process per model instance (or one auto-complete run).

    python stub/main.py <model_file> <region> <growth_byte_size> <parent_pid> <name>
                        <instance|autocomplete> <log_verbose> [<backend_dir>]

<backend_dir> is given for a model of a Python-based backend: its model.py is imported as
module `model` from there, while <model_file> still names the model's version directory.

The interpreter is prepared the way Triton's stub prepares its embedded one (sys.argv,
sys.path, signals) before any model code runs; see docs/ipc.md for the messages.
"""

import os
import signal
import sys


def _ignore_signal(signum, frame):
    # Ctrl-C on the server's process group must not skip finalize(): Node decides when the
    # stub stops. A no-op handler rather than SIG_IGN, so processes the model execs get the
    # default dispositions back.
    pass


def _importable(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def _pin_to_host_policy():
    """The instance's host policy (--host-policy): Node cannot set a child's CPU affinity before
    exec, so the stub sets its own before any thread or model code exists (threads inherit it)."""
    cpus = os.environ.pop("TRITIUM_STUB_CPUS", "")
    if cpus:
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


def main():
    _pin_to_host_policy()
    stub_dir = os.path.dirname(os.path.realpath(__file__))
    # Python put this script's directory first on sys.path; Triton's interpreter has no such
    # entry, and model code must not find our modules ahead of its own.
    if sys.path and os.path.realpath(sys.path[0] or os.getcwd()) == stub_dir:
        del sys.path[0]
    args = sys.argv[1:]
    if len(args) not in (7, 8):
        sys.stderr.write(__doc__)
        return 2
    model_file, region, growth, parent_pid, name, mode, log_verbose = args[:7]
    runtime_dir = args[7] if len(args) == 8 else None
    if mode not in ("instance", "autocomplete"):
        sys.stderr.write(f"unknown mode '{mode}'\n")
        return 2
    sys.argv = [""]
    # Node reads the stub's stdout line by line; a block-buffered pipe would hold a model's
    # print() output back until exit (a long-standing Triton complaint).
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    signal.signal(signal.SIGINT, _ignore_signal)
    signal.signal(signal.SIGTERM, _ignore_signal)

    # Triton's order (docs/protocol-notes.md, "How model.py is imported"): the version dir lets `import helper` find
    # sibling files, the model dir makes `<version>` a package for `from . import helper2`,
    # and the shim dir comes last so model files win over ours.
    if runtime_dir is not None:
        # A Python-based backend: its directory first, so `model` and its sibling packages
        # (the vLLM backend's `utils/`) import; the model's own directories are not searched.
        sys.path += [runtime_dir, stub_dir]
    else:
        version_dir = os.path.dirname(model_file)
        sys.path += [version_dir, os.path.dirname(version_dir), stub_dir]

    missing = [m for m in ("numpy", "msgpack") if not _importable(m)]
    if missing:
        # Said once, plainly, instead of a traceback from deep inside the stub.
        sys.stderr.write(
            f"tritium's Python stub needs {' and '.join(missing)} in the interpreter that runs it "
            f"({sys.executable}, Python {sys.version.split()[0]}). Install with: "
            f"{sys.executable} -m pip install numpy msgpack\n"
        )
        return 3

    from tritium_stub.runtime import run

    return run(model_file, region, int(growth), int(parent_pid), name, mode, int(log_verbose), runtime_dir)


if __name__ == "__main__":
    sys.exit(main())
