"""tritium's stub fork server: imports what every stub imports once, then forks the stubs.

    python stub/fork_server.py <socket_fd> <padding>

A stub spends most of its start importing numpy and tritium's own modules (150-400 ms of CPU);
with many instances on few cores that was most of start-to-ready. One of these per interpreter
imports them once and forks a stub per request of Node's, so each stub starts with them
imported and shares their pages. The child then runs stub/main.py exactly as a spawned stub
would (docs/ipc.md, "Fork server"), and shows in ps as one: its command line is rewritten to
the one a spawned stub has, within the room <padding> (a long argument of Node's) left.

Node -> server: one SOCK_SEQPACKET datagram per stub on <socket_fd>, JSON data
    {"id": n, "argv": [...main.py's arguments], "env": {name: value or null}, "fds": [targets]}
with the stub's descriptors as SCM_RIGHTS, the i-th received becoming descriptor fds[i] in the
child (stdout, stderr, the wake eventfd, ...). A closed socket means: fork no more, and exit
once every child has been reaped.

Server -> Node: one JSON line per event on stdout:
    {"ready": pid}                      the imports are done (or failed: children report it)
    {"id": n, "pid": p}                 forked
    {"id": n, "error": "..."}           fork failed (the errno's text)
    {"pid": p, "code": c, "signal": s}  a child was reaped (s: signal number or null)
"""

import ctypes
import json
import os
import select
import signal
import socket
import sys
import warnings

_MAX_REQUEST = 65536
_MAX_FDS = 16


def _preimport():
    # Best effort: whatever fails here fails again in the child, which says why as a spawned
    # stub does (main.py's missing-module message, the extension's load error).
    try:
        import msgpack  # noqa: F401
        import numpy  # noqa: F401

        import tritium_stub.runtime  # noqa: F401
    except BaseException:
        pass


def _report(event):
    data = (json.dumps(event, separators=(",", ":")) + "\n").encode()
    while data:
        data = data[os.write(1, data) :]


def _retitle(words):
    """Makes /proc/self/cmdline, which ps and pgrep -f read, say `words`: written over the
    process's argument strings (their memory is the process's own), truncated to their room."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # proc(5): arg_start (48), arg_end (49)
        title = b"\0".join(w.encode() for w in words)[: end - start - 1]
        ctypes.memmove(start, title + b"\0" * (end - start - len(title)), end - start)
    except (OSError, ValueError, IndexError):
        pass  # no /proc: ps shows the fork server's command line


def _place(fds, targets):
    """In the child: received descriptor i becomes targets[i] (inheritable), the rest close."""
    # Out of the way first, so no dup2 lands on a descriptor still to be moved.
    high = [os.dup(fd) for fd in fds]
    for fd in fds:
        os.close(fd)
    for fd, target in zip(high, targets):
        os.dup2(fd, target, inheritable=True)
        os.close(fd)


def _child(request, fds, sock, wake_r, wake_w):
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    sock.close()
    os.close(wake_r)
    os.close(wake_w)
    _place(fds, request["fds"])
    for name, value in request["env"].items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    # A spawned stub seeds numpy's global generator from the OS when numpy.random loads; one
    # loaded here (numpy 1.x loads it with numpy) would give every stub the same numbers.
    # Python's own `random` reseeds itself in a forked child.
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        np_random.seed()
    return request["argv"]


def _request(data, fds, flags):
    """The request in a datagram, or None (said on stderr, which Node logs) when it is not one:
    nothing Node sends is refused, but a bad datagram must not end the server and its stubs."""
    try:
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            raise ValueError("the datagram was truncated")
        request = json.loads(data)
        if not isinstance(request.get("id"), int) or not isinstance(request.get("env"), dict):
            raise ValueError("no id or env")
        if not all(isinstance(a, str) for a in request["argv"]):
            raise ValueError("argv is not a list of strings")
        if len(request["fds"]) != len(fds) or not all(isinstance(t, int) and 0 < t < 1024 for t in request["fds"]):
            raise ValueError(f"{len(fds)} descriptor(s) received for targets {request['fds']!r}")
        return request
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        sys.stderr.write(f"stub fork server: ignored a request: {exc}\n")
        return None


def _reap(children):
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            children.clear()
            return
        if pid == 0:
            return
        children.discard(pid)
        if os.WIFSIGNALED(status):
            _report({"pid": pid, "code": None, "signal": os.WTERMSIG(status)})
        elif os.WIFEXITED(status):
            _report({"pid": pid, "code": os.WEXITSTATUS(status), "signal": None})


def serve(sock_fd):
    """Forks on each request; returns main.py's argv in a child, None when the server is done."""
    # Out of the low descriptors, which every child fills with its own.
    sock = socket.socket(fileno=os.dup(sock_fd))
    os.close(sock_fd)
    sock.setblocking(True)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    # Node decides when the server ends (the socket closes), not Ctrl-C on the process group.
    signal.signal(signal.SIGINT, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: None)
    _preimport()
    _report({"ready": os.getpid()})
    children = set()
    accepting = True
    while accepting or children:
        watched = [wake_r, sock] if accepting else [wake_r]
        readable, _, _ = select.select(watched, [], [])
        if wake_r in readable:
            os.read(wake_r, 512)
        _reap(children)
        if sock not in readable:
            continue
        try:
            data, fds, flags, _ = socket.recv_fds(sock, _MAX_REQUEST, _MAX_FDS)
        except OSError:
            data, fds, flags = b"", [], 0
        if not data:
            accepting = False
            for fd in fds:
                os.close(fd)
            continue
        request = _request(data, fds, flags)
        if request is None:
            for fd in fds:
                os.close(fd)
            continue
        try:
            # Python 3.12 warns that forking a process with threads (OpenBLAS's pool) may
            # deadlock; OpenBLAS stops its pool around fork(), and no other thread exists yet.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError as exc:
            _report({"id": request["id"], "error": os.strerror(exc.errno or 0)})
            pid = -1
        if pid == 0:
            return _child(request, fds, sock, wake_r, wake_w)
        for fd in fds:
            os.close(fd)
        if pid > 0:
            children.add(pid)
            _report({"id": request["id"], "pid": pid})
    return None


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    python = sys.orig_argv[0] if hasattr(sys, "orig_argv") else sys.executable
    # The padding only makes room for the stubs' command lines.
    _retitle([python, sys.argv[0], sys.argv[1]])
    argv = serve(int(sys.argv[1]))
    if argv is None:
        return 0
    # The child: run main.py as a spawned stub runs it (as __main__, sys.path[0] still this
    # directory, which main.py removes), under the command line a spawned stub has.
    import runpy

    sys.argv = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "main.py"), *argv]
    sys.orig_argv = [python, *sys.argv]
    _retitle(sys.orig_argv)
    runpy.run_path(sys.argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
