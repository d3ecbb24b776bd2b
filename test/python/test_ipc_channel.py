"""tritium_stub.ipc.Channel over real shared memory, against Node's ends of the same C++ rings
(node_emulator.py), and the loading of its native module."""

import mmap
import os
import struct
import threading
import uuid

import msgpack
import pytest

from node_emulator import NodeEmulator
from tritium_stub import ipc

NATIVE, WHY_NOT = ipc.load_native()
pytestmark = pytest.mark.skipif(NATIVE is None, reason=f"_tritium_ipc unavailable: {WHY_NOT}")


@pytest.fixture
def pair():
    node = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_ipc", ring_capacity=4096)
    ch = ipc.Channel(node.region, 1 << 16)
    yield node, ch
    ch.close()
    node.close()


def test_hello_then_messages_both_ways_across_the_wrap(pair):
    node, ch = pair
    assert node.pop() == {"t": "hello", "pid": os.getpid()}
    for i in range(200):  # 4 KiB rings: wraps many times
        msg = {"t": "echo", "i": i, "pad": b"x" * (i * 7 % 900), "s": "é" * (i % 5)}
        node.push(msg)
        assert ch.recv(timeout=5) == msg
        ch.send(msg)
        assert node.pop() == msg


def test_recv_times_out_with_none(pair):
    node, ch = pair
    assert ch.recv(timeout=0.01) is None


def test_fragmented_message_is_reassembled(pair):
    node, ch = pair
    msg = {"t": "big", "blob": bytes(range(256)) * 40}  # 10 KiB through a 4 KiB ring
    # The ring holds 4 KiB: the stub drains (in a thread) while we push.
    got = []
    reader = threading.Thread(target=lambda: got.append(ch.recv(timeout=5)))
    reader.start()
    node.push(msg)  # records of at most half the ring, FRAG_MORE on all but the last
    reader.join(10)
    assert got == [msg]


def test_output_arena_alloc_free_and_unknown_block(pair):
    node, ch = pair
    seg, off, view = ch.alloc(100)
    assert seg == "s0" and off % 64 == 0 and len(view) == 100
    seg2, off2, _ = ch.alloc(100)
    assert (seg2, off2) != (seg, off)
    ch.free(seg, off)
    assert ch.alloc(64)[:2] == (seg, off)  # first fit reuses the freed block
    with pytest.raises(ValueError):
        ch.free("s0", 12345)
    with pytest.raises(ValueError):
        ch.free("n0", 0)
    # free_many (releases piggy-backed on exec): one lock, bad blocks reported, not raised.
    errors = ch.free_many([[seg, off], ["s0", 12345], ["s9", 0]])
    assert len(errors) == 2 and all(isinstance(e, ValueError) for e in errors)
    assert ch.alloc(64)[:2] == (seg, off)


def test_a_full_arena_takes_back_released_blocks_before_growing(pair):
    """A long execute never returns to the main loop, where releases are read: an output that
    finds no room reads them first (Inbox.poll through Channel.reclaim), so the arena does not
    grow while Node has let go of earlier outputs. Other messages stay for the main loop."""
    from tritium_stub.inbox import Inbox

    node, ch = pair
    node.pop()  # hello

    def route(msg):
        if msg["t"] == "release":
            ch.free_many(msg["blocks"])
            return True
        return False

    inbox = Inbox(ch.recv, route)
    ch.reclaim = inbox.poll
    seg, off, _ = ch.alloc(1 << 16)  # the whole first output segment
    assert seg == "s0"
    node.push({"t": "exec", "id": 1})
    node.push({"t": "release", "blocks": [[seg, off]]})
    assert ch.alloc(1 << 16)[:2] == (seg, off)  # no s1
    assert node.pop() == {"t": "seg", "name": "s0", "size": 1 << 16}
    with pytest.raises(TimeoutError):  # no segment announced for the second block
        node.pop(timeout=0.2)
    assert inbox.next_for_main() == {"t": "exec", "id": 1}
    # Nothing released: the arena grows as before.
    assert ch.alloc(1 << 16)[0] == "s1"


def test_messages_sent_from_other_threads_and_reentrantly_arrive_intact(pair):
    node, ch = pair
    node.pop()  # hello
    t = threading.Thread(target=lambda: ch.send({"t": "from_thread"}))
    t.start()
    t.join()
    assert node.pop() == {"t": "from_thread"}

    class Nested:  # msgpack calls default() in the middle of packing: a re-entrant send
        pass

    ch._packer = msgpack.Packer(use_bin_type=True, default=lambda o: ch.send({"t": "inner"}) or "x")
    ch.send({"t": "outer", "o": Nested()})
    assert node.pop() == {"t": "inner"}
    assert node.pop() == {"t": "outer", "o": "x"}


def test_a_corrupt_ring_raises_instead_of_reading_out_of_bounds():
    node = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_bad", ring_capacity=4096)
    ch = ipc.Channel(node.region, 1 << 16)
    try:
        struct.pack_into("<I", node.mm, node.a_data, 100_000)  # length beyond the ring
        node._u64(ipc.RING_A[1], 8)
        with pytest.raises(RuntimeError, match="corrupt"):
            ch.recv(timeout=1)
        node._u64(ipc.RING_A[1], 1 << 40)  # tail far beyond head
        with pytest.raises(RuntimeError, match="corrupt"):
            ch.recv(timeout=1)
    finally:
        ch.close()
        node.close()


def test_link_rejects_a_bad_header_and_a_bad_side():
    fd = os.memfd_create("not-a-region")
    try:
        os.ftruncate(fd, 8192)  # zeros: no TRITIUM1 header
        with pytest.raises(RuntimeError, match="header"):
            NATIVE.Link(fd)
        with pytest.raises(ValueError, match="spin_mode"):
            NATIVE.Link(fd, spin_mode="sometimes")
        with pytest.raises(ValueError, match="side"):
            NATIVE.Link(fd, side="both")
        os.ftruncate(fd, 0)
        with pytest.raises(RuntimeError, match="empty"):
            NATIVE.Link(fd)
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        NATIVE.Link(fd)  # closed: EBADF, not a crash


def test_wait_policy_is_the_links():
    node = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_pol")
    ch = ipc.Channel(node.region, 1 << 16, spin_us=30, spin_mode="always")
    try:
        assert "spin-mode=always, spin-us=30" in ch.describe()
        with pytest.raises(ValueError, match="spin_mode"):
            ipc.Channel(node.region, 1 << 16, spin_mode="sometimes")
    finally:
        ch.close()
        node.close()


# ---- loading the native module ------------------------------------------------------------


def test_a_missing_module_is_named_with_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setenv(ipc.NATIVE_DIR_ENV, str(tmp_path))
    module, why = ipc.load_native()
    assert module is None and "no _tritium_ipc module" in why and str(tmp_path) in why
    node = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_nomod")
    try:
        with pytest.raises(RuntimeError, match="the stub needs its native IPC module _tritium_ipc") as e:
            ipc.Channel(node.region, 1 << 16)
        assert "npm run build:native" in str(e.value)
        assert node._u64(ipc.RING_B[1]) == 0  # nothing was sent
    finally:
        node.close()


def test_an_unloadable_module_is_refused_with_the_reason(monkeypatch, tmp_path):
    # A broken file, or one built for something else: import fails, and says why.
    (tmp_path / "_tritium_ipc.abi3.so").write_bytes(b"not an ELF")
    monkeypatch.setenv(ipc.NATIVE_DIR_ENV, str(tmp_path))
    module, why = ipc.load_native()
    assert module is None and "cannot import" in why


def test_link_survives_random_garbage_in_ring_a():
    """Hostile ring contents: every outcome is a message, None, or RuntimeError, never a crash."""
    import random

    rng = random.Random(1234)
    cap = 4096
    size = 4096 + 2 * cap + 4096
    fd = os.memfd_create("garbage")
    os.ftruncate(fd, size)
    buf = mmap.mmap(fd, size)  # the Link maps the same pages from the descriptor
    for _ in range(300):
        buf[:] = bytes(size)
        buf[0:8] = ipc.MAGIC
        struct.pack_into("<II", buf, 8, ipc.LAYOUT_VERSION, 4096)
        struct.pack_into("<QQQ", buf, 16, cap, 4096, 4096 + cap)
        head = rng.choice([0, rng.randrange(0, 1 << 20) & ~7])
        struct.pack_into("<Q", buf, ipc.RING_A[0], head)
        link = NATIVE.Link(fd, spin_mode="never")
        for pos in range(0, cap, 8):
            struct.pack_into(
                "<I",
                buf,
                4096 + pos,
                rng.choice(
                    [
                        rng.randrange(0, 64),
                        rng.randrange(0, 1 << 32),
                        ipc.WRAP_MARKER,
                        ipc.FRAG_MORE | rng.randrange(0, 64),
                    ]
                ),
            )
        struct.pack_into("<Q", buf, ipc.RING_A[1], head + rng.choice([8, 64, cap, cap + 8, rng.randrange(0, 1 << 40)]))
        for _ in range(5):
            try:
                if link.recv(timeout=0) is None:
                    break
            except RuntimeError:
                break
        link.close()
    buf.close()
    os.close(fd)


def test_channel_decodes_natively_and_falls_back_to_msgpack(pair):
    node, ch = pair
    node.pop()  # hello
    msg = {"t": "exec", "id": 3, "reqs": [{"rid": 1, "inputs": [["INPUT0", "FP32", [4], "n0", 64, 16]]}]}
    node.push(msg)
    assert ch.recv(timeout=5) == msg
    # An ext type (never sent by Node today) goes to msgpack, which decodes it as it always did.
    odd = {"t": "odd", "x": msgpack.ExtType(5, b"abc")}
    node.push(odd)
    assert ch.recv(timeout=5) == odd
    # Bytes msgpack refuses too raise msgpack's error, as before the native decoder.
    node.link.send(b"\xc1")
    with pytest.raises(Exception) as raised:
        ch.recv(timeout=5)
    with pytest.raises(type(raised.value)):
        msgpack.unpackb(b"\xc1", raw=False, strict_map_key=False)
