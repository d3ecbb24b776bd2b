"""memfd segments on the stub's side (docs/ipc.md, "Segments").

Node hands the stub, at spawn, its region's n0 as a memfd and one end of a socket pair
(SOCK_SEQPACKET) that carries the descriptors of later segments both ways: each datagram holds
segment names (comma-separated) as data and their descriptors as SCM_RIGHTS. The stub passes
each output segment s<k> before any message names it; Node passes its n<k> just before the next
ring-A message, or a little later when the stub's queue was full, so the stub waits for a
segment a message names until its descriptor comes (`FdLink.take`).

memfd pages are charged to the memory cgroup, not to /dev/shm, and past that limit the kernel
OOM-kills rather than failing the allocation: a segment that needs more than is available is
refused beforehand (`headroom`), with a text that says what the limit is (`memory_full_text`).
Mirrors src/backends/python/ipc/{segment-fds,memory-limit}.ts.
"""

from __future__ import annotations

import array
import ctypes
import errno
import os
import socket
import time

# Node's environment for the stub: "<n0 memfd>,<segment socket>" (descriptor numbers).
SEGMENT_FDS_ENV = "TRITIUM_STUB_SEGMENT_FDS"
MFD_CLOEXEC = 0x0001
# Refused memfds without it under vm.memfd_noexec=2 (Linux >= 6.3); older kernels reject the
# flag itself (EINVAL), so then without it.
MFD_NOEXEC_SEAL = 0x0008
MAX_FDS_PER_DATAGRAM = 253  # the kernel's SCM_MAX_FD
# How long the stub waits for a segment of Node's that a message named (Node passes it within
# a millisecond or so; the bound turns a broken peer into an error instead of a hang).
TAKE_TIMEOUT_S = 30.0
SEND_TIMEOUT_S = 30.0


def segment_fds_setting(env) -> tuple[int, int] | None:
    """(n0 memfd, segment socket) from Node's environment, or None (segments are /dev/shm files)."""
    raw = env.get(SEGMENT_FDS_ENV)
    if not raw:
        return None
    n0, sock = (int(x) for x in raw.split(","))
    return n0, sock


def _libc_memfd_create():
    # An interpreter built against a C library without memfd_create's declaration (conda's old
    # sysroot, for one) lacks os.memfd_create although the running one has the symbol.
    try:
        f = ctypes.CDLL(None, use_errno=True).memfd_create
    except AttributeError:
        return None
    f.argtypes = [ctypes.c_char_p, ctypes.c_uint]
    f.restype = ctypes.c_int

    def create(name: str, flags: int) -> int:
        fd = f(name.encode(), flags)
        if fd < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        return fd

    return create


_memfd_create = getattr(os, "memfd_create", None) or _libc_memfd_create()


def create(name: str) -> int:
    """A new memfd (close-on-exec) labelled `name` in /proc/<pid>/fd and maps; raises OSError."""
    if _memfd_create is None:
        raise OSError(errno.ENOSYS, "memfd_create is not available to this interpreter")
    try:
        return _memfd_create(name, MFD_CLOEXEC | MFD_NOEXEC_SEAL)
    except OSError as e:
        if e.errno != errno.EINVAL:
            raise
        return _memfd_create(name, MFD_CLOEXEC)


class FdLink:
    """The stub's end of the segment socket."""

    def __init__(self, fd: int):
        self.sock = socket.socket(fileno=fd)
        # Processes the model starts must not hold the socket (or Node's segments) open.
        self.sock.set_inheritable(False)
        self._arrived: dict[str, int] = {}

    def send(self, name: str, fd: int) -> None:
        """Passes one of the stub's segments to Node. Node reads its queue on each `seg`
        message, so a full queue (EAGAIN) frees up soon: wait with back-off, bounded."""
        data = [name.encode()]
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))]
        deadline = time.monotonic() + SEND_TIMEOUT_S
        pause = 1e-5
        while True:
            try:
                self.sock.sendmsg(data, anc, socket.MSG_DONTWAIT)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise OSError(errno.EAGAIN, f"Node did not take segment {name} for {SEND_TIMEOUT_S:g} s") from None
                time.sleep(pause)
                pause = min(pause * 2, 1e-3)

    def take(self, name: str, timeout: float = TAKE_TIMEOUT_S) -> int:
        """The descriptor of Node's segment `name` (the caller owns it), waiting for it."""
        fd = self._arrived.pop(name, None)
        if fd is not None:
            return fd
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"Node did not pass segment {name} within {timeout:g} s")
            self.sock.settimeout(left)
            try:
                got = self._recv()
            except socket.timeout:
                continue
            finally:
                self.sock.settimeout(None)
            if got is None:
                raise RuntimeError(f"the segment socket closed before segment {name} came")
            fd = self._arrived.pop(name, None)
            if fd is not None:
                return fd

    def _recv(self):
        """One datagram into `_arrived`; None when Node closed its end."""
        size = socket.CMSG_SPACE(MAX_FDS_PER_DATAGRAM * array.array("i").itemsize)
        data, anc, flags, _ = self.sock.recvmsg(4096, size, socket.MSG_CMSG_CLOEXEC)
        fds = array.array("i")
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        if not data and not fds:
            return None
        names = data.decode().split(",")
        for i, fd in enumerate(fds):
            if i >= len(names):
                os.close(fd)
                continue
            old = self._arrived.get(names[i])
            if old is not None:
                os.close(old)
            self._arrived[names[i]] = fd
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            raise RuntimeError("the segment socket carried a datagram larger than the protocol allows")
        return True

    def close(self) -> None:
        for fd in self._arrived.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._arrived.clear()
        self.sock.close()


# ---- what limits memfd segments (src/backends/python/ipc/memory-limit.ts) ----

_CGROUP_ROOT = "/sys/fs/cgroup"
_V1_NO_LIMIT = 1 << 62


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _number(path: str) -> int | None:
    t = (_read(path) or "").strip()
    return int(t) if t.isdigit() else None


def _stat_field(folder: str, key: str) -> int:
    for line in (_read(os.path.join(folder, "memory.stat")) or "").splitlines():
        k, _, v = line.partition(" ")
        if k == key and v.isdigit():
            return int(v)
    return 0


def _host_available() -> int | None:
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def _cgroup_limits():
    """(folder, limit, used, reclaimable, file) of each limited memory cgroup we are in, inner first."""
    out = []
    for line in (_read("/proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, rel = parts
        v2 = hid == "0" and controllers == ""
        if not v2 and "memory" not in controllers.split(","):
            continue
        root = _CGROUP_ROOT if v2 else os.path.join(_CGROUP_ROOT, "memory")
        folder = os.path.normpath(root + "/" + rel)
        if not os.path.isdir(folder):
            folder = root
        while True:
            file = "memory.max" if v2 else "memory.limit_in_bytes"
            limit = _number(os.path.join(folder, file))
            used = _number(os.path.join(folder, "memory.current" if v2 else "memory.usage_in_bytes"))
            if limit is not None and used is not None and limit < _V1_NO_LIMIT:
                out.append(
                    (folder, limit, used, _stat_field(folder, "inactive_file" if v2 else "total_inactive_file"), file)
                )
            if folder == root or len(folder) <= len(root):
                break
            folder = os.path.dirname(folder)
    return out


def headroom() -> tuple[int, str]:
    """(bytes a new segment may take now, which limit that is in words)."""
    host = _host_available()
    best = (
        host if host is not None else 1 << 62,
        "no memory limit could be read"
        if host is None
        else f"no memory cgroup limit; the host has {host} bytes available (MemAvailable)",
    )
    for folder, limit, used, reclaimable, file in _cgroup_limits():
        free = max(0, limit - used + reclaimable)
        if free < best[0]:
            best = (free, f"memory cgroup {folder}: {used} of {limit} bytes in use ({file})")
    return best


def memory_full_text(what: str, nbytes: int, why: str) -> str:
    """The error of an output segment that did not fit: what limits memfd segments, and what helps."""
    room, limit = headroom()
    return (
        f"out of memory for shared memory: cannot {what} for {nbytes} bytes of tensor data ({why}). "
        "Tensors travel in memfd segments, which are charged to the memory of the server and its stubs "
        f"(their memory cgroup), not to /dev/shm: {limit}, {room} bytes available. "
        "Raise the memory limit of the container (e.g. docker run --memory, a Kubernetes memory limit), "
        "send fewer large tensors at once, or lower --backend-config=python,shm-default-byte-size or the instance count."
    )
