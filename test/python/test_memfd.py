"""The stub's memfd segments (docs/ipc.md, "Segments"): n0 comes as a
descriptor, output segments are memfds whose descriptors go to Node over the segment socket
before any message names them, Node's segments come the same way (also after the message that
names them), and a segment larger than the memory available is refused with a text that says
memory, not /dev/shm, is the limit. Node's end of the socket is played here in-process."""

import array
import mmap
import os
import socket
import threading
import time
import uuid

import pytest

from node_emulator import NodeEmulator
from tritium_stub import ipc, memfd

NATIVE, WHY_NOT = ipc.load_native()
pytestmark = pytest.mark.skipif(NATIVE is None, reason=f"_tritium_ipc unavailable: {WHY_NOT}")


@pytest.fixture
def linked():
    """(emulator, channel, Node's end of the segment socket); n0 handed over as a descriptor."""
    node = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_memfd", ring_capacity=4096)
    node_end, stub_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    n0 = os.open(f"/dev/shm/{node.region}.n0", os.O_RDWR)
    ch = ipc.Channel(
        node.region,
        1 << 16,
        segment_fds=(n0, stub_end.detach()),
    )
    assert node.pop() == {"t": "hello", "pid": os.getpid()}
    yield node, ch, node_end
    ch.close()
    node_end.close()
    node.close()


def recv_segment(sock: socket.socket) -> tuple[str, int]:
    data, anc, _, _ = sock.recvmsg(256, socket.CMSG_SPACE(4))
    fds = array.array("i")
    fds.frombytes(anc[0][2])
    assert len(fds) == 1
    return data.decode(), fds[0]


def send_segment(sock: socket.socket, name: str, size: int, fill: int) -> None:
    fd = memfd.create(f"test.{name}")
    os.ftruncate(fd, size)
    os.pwrite(fd, bytes([fill]) * 16, 0)
    sock.sendmsg([name.encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    os.close(fd)


def test_outputs_are_memfds_passed_before_they_are_named(linked):
    node, ch, node_end = linked
    assert ch.describe().endswith("segments: memfd")
    seg, off, view = ch.alloc(100_000)
    assert seg == "s0"
    name, fd = recv_segment(node_end)
    try:
        assert name == "s0"
        assert os.readlink(f"/proc/self/fd/{fd}") == f"/memfd:{node.region}.s0 (deleted)"
        assert node.pop() == {"t": "seg", "name": "s0", "size": 1 << 17}
        view[:3] = b"abc"
        with mmap.mmap(fd, os.fstat(fd).st_size) as mm:
            assert mm[off : off + 3] == b"abc"
    finally:
        os.close(fd)
    assert not os.path.exists(f"/dev/shm/{node.region}.s0")


def test_node_segments_come_as_descriptors_even_after_the_message_naming_them(linked):
    node, ch, node_end = linked
    send_segment(node_end, "n1", 1 << 16, 7)
    assert bytes(ch.tensor_view("n1", 0, 3)) == b"\x07\x07\x07"
    # The stub waits for a segment a message named before its descriptor came (a full queue).
    timer = threading.Timer(0.2, send_segment, (node_end, "n2", 1 << 16, 9))
    timer.start()
    t0 = time.monotonic()
    assert bytes(ch.tensor_view("n2", 0, 2)) == b"\x09\x09"
    assert time.monotonic() - t0 > 0.1
    timer.join()


def test_a_segment_beyond_the_memory_available_is_refused_naming_memory(linked, monkeypatch):
    node, ch, node_end = linked
    limit = "memory cgroup /sys/fs/cgroup/x: 1 of 2 bytes in use (memory.max)"
    monkeypatch.setattr(memfd, "headroom", lambda: (1000, limit))
    with pytest.raises(MemoryError) as e:
        ch.alloc(1 << 20)
    text = str(e.value)
    assert text.startswith(
        f"out of memory for shared memory: cannot create {1 << 20}-byte output segment {node.region}.s0 "
        f"for {1 << 20} bytes of tensor data (more than the 1000 bytes available). "
        "Tensors travel in memfd segments, which are charged to the memory of the server and its stubs "
        f"(their memory cgroup), not to /dev/shm: {limit}, 1000 bytes available."
    )
    assert "Raise the memory limit of the container" in text and "--shm-size" not in text
    # Nothing was created or passed; a block that fits still comes.
    node_end.setblocking(False)
    with pytest.raises(BlockingIOError):
        node_end.recvmsg(256, socket.CMSG_SPACE(4))
    monkeypatch.undo()
    assert ch.alloc(10)[0] == "s0"


def test_a_stub_refused_memfds_makes_dev_shm_files(linked, monkeypatch):
    node, ch, node_end = linked

    def refused(name):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(memfd, "create", refused)
    seg, _, _ = ch.alloc(10)
    assert os.path.exists(f"/dev/shm/{node.region}.{seg}")
    node_end.setblocking(False)
    with pytest.raises(BlockingIOError):  # no descriptor: Node opens the file by name
        node_end.recvmsg(256, socket.CMSG_SPACE(4))


def test_headroom_reads_this_host():
    room, limit = memfd.headroom()
    assert room > 0
    assert limit.startswith(("memory cgroup ", "no memory cgroup limit"))
