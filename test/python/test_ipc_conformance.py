"""The ring/arena conformance suite (test/ipc-conformance/cases.json, docs/ipc.md "Conformance
suite") between the emulator of Node (node_emulator.py, in this process: Node's ends of the
C++ rings) and the stub's Channel in a separate process (ipc_conformance.py as the peer); plus
the cases that need no second process: the allocator policy of the stub's arena, ring
corruption as both readers see it, and bad control headers."""

import json
import os
import struct
import subprocess
import sys
import threading
import uuid

import pytest

import ipc_conformance as conf
from node_emulator import NodeEmulator
from tritium_stub import ipc

CASES = conf.load_cases()
NATIVE, WHY_NOT = ipc.load_native()
pytestmark = pytest.mark.skipif(NATIVE is None, reason=f"_tritium_ipc unavailable: {WHY_NOT}")


def ids(section):
    return [c["name"] for c in CASES[section]]


class Peer:
    """The stub side in its own process: a Channel on the emulator's region."""

    def __init__(self, node, role, section, case):
        env = {k: v for k, v in os.environ.items() if k != "TRITIUM_STUB_WAKE_FD"}  # futex wake-ups
        self.proc = subprocess.Popen(
            [sys.executable, conf.__file__, node.region, role, section, case["name"]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def report(self):
        out, _ = self.proc.communicate(timeout=conf.BOUND_S * 2)
        assert self.proc.returncode == 0, f"peer failed (exit {self.proc.returncode})"
        return json.loads(out.strip().splitlines()[-1])


@pytest.fixture
def emulator(request):
    made = []

    def make(ring=4096):
        node = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_conf", ring_capacity=ring, size=4 << 20)
        made.append(node)
        return node

    yield make
    for node in made:
        node.close()


def pop_or_none(node, timeout):
    try:
        return node.pop(timeout=timeout)
    except TimeoutError:
        return None


def expect_hello(node, peer):
    assert node.pop() == {"t": "hello", "pid": peer.proc.pid}


def assert_writer_report(sent, case):
    for s in sent:
        if s["fits"]:
            assert s["doorbell"] == 1, f"message {s['i']}: one publish, one doorbell step ({s})"
        else:
            assert s["doorbell"] >= 1, s
    if case.get("blockReader"):
        assert any(not s["fits"] for s in sent), "the writer never had to wait"


# ---- rings, both directions -------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES["ring"], ids=ids("ring"))
def test_stub_writes_ring_b_the_emulator_reads(emulator, case):
    node = emulator(case["ring"])
    peer = Peer(node, "ring-writer", "ring", case)
    hdr = conf.Header(node.region)
    try:
        expect_hello(node, peer)
        if case.get("blockReader"):
            conf.wait_until_writer_blocked(hdr, ipc.RING_B)
        got = conf.read_case(lambda t: pop_or_none(node, t))
        rep = peer.report()
    finally:
        hdr.close()
    assert rep["errors"] == [] and got["errors"] == []
    assert got["lengths"] == [s["len"] for s in rep["sent"]]
    assert_writer_report(rep["sent"], case)


@pytest.mark.parametrize("case", CASES["ring"], ids=ids("ring"))
def test_emulator_writes_ring_a_the_stub_reads(emulator, case):
    node = emulator(case["ring"])
    peer = Peer(node, "ring-reader", "ring", case)
    hdr = conf.Header(node.region)
    try:
        expect_hello(node, peer)
        result = {}

        def write():
            result.update(conf.write_case(case, node.push, hdr, ipc.RING_A))

        writer = threading.Thread(target=write)
        writer.start()
        if case.get("blockReader"):
            conf.wait_for(lambda: hdr.u32(ipc.RING_A[4]) == 1, "the emulator to wait for ring A space")
            peer.go()
        writer.join(conf.BOUND_S * 2)
        rep = peer.report()
    finally:
        hdr.close()
    assert result["errors"] == [] and rep["errors"] == []
    assert rep["lengths"] == [s["len"] for s in result["sent"]]
    assert_writer_report(result["sent"], case)
    if case.get("blockReader"):
        assert rep["atGo"]["producer_waiting"] == 1


# ---- the sleeping word, wake-ups and the health words -------------------------------------------

SLEEPING = [c for c in CASES["signals"] if c["kind"] == "sleeping"]
HEARTBEAT = next(c for c in CASES["signals"] if c["kind"] == "heartbeat")


def sleeping_emulator(emulator, case):
    """The emulator's region, its doorbells starting where the case says (both rings)."""
    node = emulator(case["ring"])
    for ring in (ipc.RING_A, ipc.RING_B):
        node._u32(ring[2], case.get("doorbellStart", 0))
    return node


@pytest.mark.parametrize("case", SLEEPING, ids=[c["name"] for c in SLEEPING])
def test_stub_sleeps_on_ring_a_and_a_publish_wakes_it(emulator, case):
    node = sleeping_emulator(emulator, case)
    peer = Peer(node, "sleeping-reader", "signals", case)
    expect_hello(node, peer)
    for k in range(case["rounds"]):
        # sleeping = 1 means the stub is in (or entering) FUTEX_WAIT on the doorbell.
        conf.wait_for(lambda: node._u32(ipc.RING_A[3]) == 1, "the stub to sleep on ring A")
        conf.wait_for(lambda: conf.futex_wake(node.mm, ipc.RING_A[2]) >= 1, "a FUTEX_WAKE to find the stub waiting")
        node.push(conf.message(k, 8))
    rep = peer.report()
    assert rep["received"] == list(range(case["rounds"]))
    assert rep["sleepingAfter"] == 0


@pytest.mark.parametrize("case", SLEEPING, ids=[c["name"] for c in SLEEPING])
def test_stub_wakes_a_sleeping_emulator(emulator, case):
    node = sleeping_emulator(emulator, case)
    peer = Peer(node, "sleeping-writer", "signals", case)
    expect_hello(node, peer)
    # pop() sleeps in one FUTEX_WAIT for its whole bound: only the stub's FUTEX_WAKE ends it.
    got = conf.read_case(lambda t: pop_or_none(node, t))
    rep = peer.report()
    assert got["errors"] == [] and len(got["lengths"]) == case["rounds"]
    assert all(r["sleeping"] == 1 for r in rep["rounds"])


def test_stub_pid_and_heartbeat_words(emulator):
    import time

    node = emulator(HEARTBEAT["ring"])
    peer = Peer(node, "heartbeat", "signals", HEARTBEAT)
    expect_hello(node, peer)
    assert node._u32(ipc.OFF_STUB_PID) == peer.proc.pid
    assert node.pop() == {"t": "hb_before"}
    assert node._u64(ipc.OFF_HEARTBEAT) == 0  # 0 until the first beat
    peer.go()
    assert node.pop() == {"t": "hb_started"}
    first = node._u64(ipc.OFF_HEARTBEAT)
    # CLOCK_MONOTONIC milliseconds, the clock of time.monotonic() here and of Node's hrtime.
    assert 0 < first <= time.monotonic() * 1000 + 1
    conf.wait_for(lambda: node._u64(ipc.OFF_HEARTBEAT) > first, "the heartbeat to advance")
    peer.go()
    peer.report()


# ---- arenas ------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES["arena"], ids=ids("arena"))
def test_arena_policy(case):
    arena = NATIVE.Arena(case["base"], case["size"], case["align"])
    assert conf.run_arena_ops(case, arena.alloc, arena.free) == []


@pytest.mark.parametrize("case", CASES["regionArena"], ids=ids("regionArena"))
def test_stub_output_blocks_read_by_the_emulator(emulator, case):
    node = emulator(case["ring"])
    peer = Peer(node, "arena-writer", "regionArena", case)
    expect_hello(node, peer)
    segs = []
    while True:
        msg = node.pop()
        if msg["t"] == "seg":
            segs.append(msg)
            continue
        break
    assert msg["t"] == "blocks" and msg["errors"] == []
    growth = max(case["growth"], 1 << 16)
    assert [s["name"] for s in segs] == ["s0", "s1", "s2"]
    assert [s["size"] for s in segs] == [growth, growth, 2031616]

    def view(seg, off, n):
        return node.read(["x", "UINT8", [n], f"s{seg}", off, n])

    assert conf.check_blocks(msg["blocks"], view) == []
    peer.go()
    peer.report()


# ---- corruption and bad headers -------------------------------------------------------------------


def corrupt_ring(mm, data_off, ring, case):
    struct.pack_into("<Q", mm, ring[0], case["head"])
    for pos, word in case["words"]:
        struct.pack_into("<I", mm, data_off + pos, word)
    struct.pack_into("<Q", mm, ring[1], case["tail"])


@pytest.mark.parametrize("case", CASES["corruption"], ids=ids("corruption"))
def test_stub_reader_detects_a_corrupt_ring_a(emulator, case):
    node = emulator(case["ring"])
    corrupt_ring(node.mm, node.a_data, ipc.RING_A, case)  # head before the stub attaches
    ch = ipc.Channel(node.region, 1 << 16, spin_mode="never")
    try:
        with pytest.raises(RuntimeError, match="ring A is corrupt"):
            ch.recv(timeout=1)
    finally:
        ch.close()


@pytest.mark.parametrize("case", CASES["corruption"], ids=ids("corruption"))
def test_emulator_reader_detects_a_corrupt_ring_b(emulator, case):
    node = emulator(case["ring"])
    corrupt_ring(node.mm, node.b_data, ipc.RING_B, case)
    node.reattach()  # Node's reader starts from the corrupt head
    with pytest.raises(RuntimeError, match="ring B is corrupt"):
        node.pop(timeout=1)


def poke(mm, off, kind, value):
    struct.pack_into({"u8": "<B", "u32": "<I", "u64": "<Q"}[kind], mm, off, value)


@pytest.mark.parametrize("case", CASES["header"], ids=ids("header"))
def test_stub_refuses_a_bad_header(emulator, case):
    node = emulator()
    for off, kind, value in case["write"]:
        poke(node.mm, off, kind, value)
    with pytest.raises(RuntimeError, match=case["error"]):
        ipc.Channel(node.region, 1 << 16)
    assert node._u64(ipc.RING_B[1]) == 0  # nothing was sent
