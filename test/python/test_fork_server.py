"""stub/fork_server.py on its own, driven the way Node drives it (src/backends/python/fork-server.ts):
a real server process, a real socket pair, real children. The children run stub/main.py with
arguments it refuses, so each ends at once with its usage text on the stderr pipe it was given."""

import json
import os
import socket
import subprocess
import sys

import pytest

FORK_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "stub", "fork_server.py")


class Server:
    def __init__(self):
        self.node, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)

        def at_fd_3():
            os.dup2(theirs.fileno(), 3)

        self.proc = subprocess.Popen(
            [sys.executable, FORK_SERVER, "3", "." * 1024],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=at_fd_3,
            close_fds=False,  # Popen would close fd 3 after preexec_fn; ours are close-on-exec anyway
        )
        theirs.close()
        assert "ready" in self.report()

    def report(self):
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read().decode()
        return json.loads(line)

    def fork(self, rid, argv, env=None, stderr_full=False):
        """Sends a request with a stdout and a stderr pipe; returns our read ends. With
        `stderr_full` the stderr pipe is full already: the child blocks on its first write."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        if stderr_full:
            os.set_blocking(err_w, False)
            try:
                while os.write(err_w, b"x" * 4096):
                    pass
            except BlockingIOError:
                pass
            os.set_blocking(err_w, True)
        request = {"id": rid, "argv": argv, "env": env or {}, "fds": [1, 2]}
        socket.send_fds(self.node, [json.dumps(request).encode()], [out_w, err_w])
        os.close(out_w)
        os.close(err_w)
        return out_r, err_r

    def close(self):
        self.node.close()
        return self.proc.wait(timeout=10)


def read_all(fd):
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode()


@pytest.fixture
def server():
    s = Server()
    yield s
    if s.proc.poll() is None:
        s.proc.kill()
        s.proc.wait()


def test_forks_main_py_with_its_arguments_and_descriptors_and_reports_the_exit(server):
    out_r, err_r = server.fork(7, ["only", "three", "args"], {"TRITIUM_STUB_SPIN_US": "5"})
    forked = server.report()
    assert forked["id"] == 7 and forked["pid"] > 0
    assert server.report() == {"pid": forked["pid"], "code": 2, "signal": None}
    # main.py's usage text reached the stderr pipe the request carried, nothing the stdout one.
    assert "python stub/main.py <model_file>" in read_all(err_r)
    assert read_all(out_r) == ""


def test_reports_a_signal_and_keeps_serving(server):
    # The child blocks writing its usage text into a full pipe until it is killed.
    out_r, err_r = server.fork(1, [], stderr_full=True)
    pid = server.report()["pid"]
    os.kill(pid, 9)
    assert server.report() == {"pid": pid, "code": None, "signal": 9}
    read_all(out_r), read_all(err_r)
    out_r, err_r = server.fork(2, [])
    assert server.report()["id"] == 2
    assert server.report()["code"] == 2
    read_all(out_r), read_all(err_r)


def test_ignores_a_bad_request_says_why_and_still_forks(server):
    a, b = os.pipe()
    socket.send_fds(server.node, [b"{not json"], [b])
    socket.send_fds(server.node, [json.dumps({"id": 3, "argv": [], "env": {}, "fds": [1, 2]}).encode()], [b])
    os.close(b)
    out_r, err_r = server.fork(4, [])
    assert server.report()["id"] == 4
    assert server.report()["code"] == 2
    read_all(out_r), read_all(err_r)
    os.close(a)
    assert server.close() == 0
    err = server.proc.stderr.read().decode()
    assert "ignored a request" in err and "1 descriptor(s) received for targets [1, 2]" in err


def test_exits_once_node_closes_its_end_and_the_children_are_reaped(server):
    out_r, err_r = server.fork(5, [])
    pid = server.report()["pid"]
    assert server.close() == 0
    # Its last reports were the child's fork and its exit.
    assert json.loads(server.proc.stdout.readline())["pid"] == pid
    read_all(out_r), read_all(err_r)
