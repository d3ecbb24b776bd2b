"""tritium_stub.ipc.Channel over real shared memory on both hot paths, and the choice between
them (native _tritium_ipc extension vs the pure-Python fallback)."""

import mmap
import os
import struct
import threading
import time
import uuid

import msgpack
import pytest

from node_emulator import NodeEmulator
from tritium_stub import ipc

NATIVE, WHY_NOT = ipc.load_native()


@pytest.fixture(params=["native", "python"])
def pair(request):
    if request.param == "native" and NATIVE is None:
        pytest.skip(f"_tritium_ipc unavailable: {WHY_NOT}")
    node = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_ipc", ring_capacity=4096)
    ch = ipc.Channel(node.region, 1 << 16, native=NATIVE if request.param == "native" else False)
    assert ch.is_native == (request.param == "native")
    yield node, ch
    ch.close()
    node.close()


def push_fragmented(node, msg, piece):
    """Ring A records of at most `piece` bytes with the FRAG_MORE bit, like Node's writer."""
    data = msgpack.packb(msg, use_bin_type=True)
    for start in range(0, len(data), piece):
        chunk = data[start : start + piece]
        more = start + piece < len(data)
        need = (4 + len(chunk) + 7) & ~7
        deadline = time.monotonic() + 5
        while node.a_tail + 2 * need - node._u64(ipc.RING_A[0]) > node.cap:  # wait for space
            assert time.monotonic() < deadline, "the stub does not drain ring A"
            time.sleep(0.001)
        pos = node.a_tail % node.cap
        if pos + need > node.cap:
            struct.pack_into("<I", node.mm, node.a_data + pos, ipc.WRAP_MARKER)
            node.a_tail += node.cap - pos
            pos = 0
        struct.pack_into("<I", node.mm, node.a_data + pos, len(chunk) | (ipc.FRAG_MORE if more else 0))
        node.mm[node.a_data + pos + 4 : node.a_data + pos + 4 + len(chunk)] = chunk
        node.a_tail += need
        node._u64(ipc.RING_A[1], node.a_tail)


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
    push_fragmented(node, msg, 2048 - 8)
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


@pytest.mark.skipif(NATIVE is None, reason="_tritium_ipc unavailable")
def test_native_rejects_a_corrupt_ring_instead_of_reading_out_of_bounds():
    node = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_bad", ring_capacity=4096)
    ch = ipc.Channel(node.region, 1 << 16, native=NATIVE)
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


@pytest.mark.skipif(NATIVE is None, reason="_tritium_ipc unavailable")
def test_native_link_rejects_a_bad_header():
    fd = os.memfd_create("not-a-region")
    try:
        os.ftruncate(fd, 8192)  # zeros: no TRITIUM1 header
        with pytest.raises(RuntimeError, match="header"):
            NATIVE.Link(fd)
        with pytest.raises(ValueError, match="spin_mode"):
            NATIVE.Link(fd, spin_mode="sometimes")
        os.ftruncate(fd, 0)
        with pytest.raises(RuntimeError, match="empty"):
            NATIVE.Link(fd)
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        NATIVE.Link(fd)  # closed: EBADF, not a crash


def test_wait_policy_spins_only_after_recent_hits():
    p = ipc.WaitPolicy("adaptive", 50)
    assert p.budget(0.0) == 0.0  # no history: sleep at once
    for _ in range(10):
        p.observe(10e-6)
    p._cpus = 1 << 20  # pretend the host is idle: the load check alone then decides
    assert p.budget(1.0) == pytest.approx(50e-6)
    p.observe(1.0)  # long gaps: spinning stops paying
    p.observe(1.0)
    assert p.budget(2.0) == 0.0
    # Below the threshold it still probes once every 16 waits (sleeping hides short gaps).
    assert sum(p.budget(3.0) > 0 for _ in range(32)) == 2
    before = p.score
    p.observe(80e-6, spun=False)  # slept, a little over the window: no verdict
    assert p.score == before
    p.observe(80e-6, spun=True)  # a wasted poll is a miss
    assert p.score == max(before - 4, 0)
    assert ipc.WaitPolicy("always", 50).budget(0.0) == pytest.approx(50e-6)
    assert ipc.WaitPolicy("never", 50).budget(0.0) == 0.0
    assert ipc.WaitPolicy("always", 0).mode == "never"
    with pytest.raises(ValueError):
        ipc.WaitPolicy("sometimes", 50)


# ---- which path: the fallback decision ------------------------------------------------------


def test_env_forces_pure_python(monkeypatch):
    monkeypatch.setenv(ipc.NATIVE_ENV, "0")
    module, why = ipc.load_native()
    assert module is None and "TRITIUM_STUB_NATIVE=0" in why


def test_missing_module_falls_back(monkeypatch, tmp_path):
    monkeypatch.delenv(ipc.NATIVE_ENV, raising=False)
    monkeypatch.setenv(ipc.NATIVE_DIR_ENV, str(tmp_path))
    module, why = ipc.load_native()
    assert module is None and "no _tritium_ipc module" in why and str(tmp_path) in why


def test_unloadable_module_falls_back(monkeypatch, tmp_path):
    # A file built for another ABI, or simply broken: import fails, the stub goes on in Python.
    import importlib.machinery

    (tmp_path / ("_tritium_ipc" + importlib.machinery.EXTENSION_SUFFIXES[0])).write_bytes(b"not an ELF")
    monkeypatch.delenv(ipc.NATIVE_ENV, raising=False)
    monkeypatch.setenv(ipc.NATIVE_DIR_ENV, str(tmp_path))
    module, why = ipc.load_native()
    assert module is None and "cannot import" in why


def test_channel_auto_uses_the_fallback_when_the_module_is_missing(monkeypatch, tmp_path):
    monkeypatch.setenv(ipc.NATIVE_DIR_ENV, str(tmp_path))
    node = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_fb")
    ch = ipc.Channel(node.region, 1 << 16)
    try:
        assert not ch.is_native and "pure Python (no _tritium_ipc module" in ch.describe()
        node.push({"t": "x"})
        assert ch.recv(timeout=5) == {"t": "x"}
    finally:
        ch.close()
        node.close()


@pytest.mark.parametrize("machine", ["aarch64", "arm64", "ppc64le", "riscv64", "s390x"])
def test_pure_python_path_refuses_a_machine_that_is_not_x86(machine):
    """Without fences the plain rings are only correct under x86's store order: elsewhere the
    fallback refuses before touching a ring, and says that the native extension is the way."""
    node = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_arch")
    try:
        with pytest.raises(RuntimeError) as e:
            ipc.Channel(node.region, 1 << 16, native=False, machine=machine)
        text = str(e.value)
        assert f"this machine is {machine!r}" in text
        assert "only correct on x86 and x86-64" in text
        assert "_tritium_ipc" in text and "npm run build:native" in text
        assert node.a_tail == 0 and node._u64(ipc.RING_B[1]) == 0  # nothing was sent
    finally:
        node.close()


@pytest.mark.parametrize("machine", ["x86_64", "AMD64", "i686"])
def test_pure_python_path_runs_on_x86(machine):
    node = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_x86")
    ch = ipc.Channel(node.region, 1 << 16, native=False, machine=machine)
    try:
        assert node.pop() == {"t": "hello", "pid": os.getpid()}
    finally:
        ch.close()
        node.close()


@pytest.mark.skipif(NATIVE is None, reason="_tritium_ipc unavailable")
def test_native_path_does_not_depend_on_the_machine_check():
    """The extension fences its rings itself (C++ acquire/release), so no machine is refused."""
    node = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_narch")
    ch = ipc.Channel(node.region, 1 << 16, native=NATIVE, machine="aarch64")
    try:
        assert ch.is_native and node.pop() == {"t": "hello", "pid": os.getpid()}
    finally:
        ch.close()
        node.close()


@pytest.mark.skipif(NATIVE is None, reason="_tritium_ipc unavailable")
def test_native_link_survives_random_garbage_in_ring_a():
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
