"""The Python half of the ring/arena conformance suite (docs/ipc.md, "Conformance suite").

The cases live in test/ipc-conformance/cases.json; this module turns them into messages and
checks, for the stub's Channel and for the emulator of Node (node_emulator.py: Node's ends of
the same C++ rings). It is also the peer process that test/ipc-conformance.test.ts (Node) and
test_ipc_conformance.py (the emulator) start, so that a writer of one side always meets a
reader of the other over real shared memory:

    python ipc_conformance.py <region> <role> <section> <case name>

Roles: ring-writer / ring-reader (ring B / ring A of the stub), sleeping-writer /
sleeping-reader, heartbeat, arena-writer (the stub's output arenas) / arena-reader (Node's
input blocks). The peer prints one JSON line (its report) on stdout and exits. A peer that must
wait for the other side to fill a ring before it reads waits for a line `go` on stdin.

Messages of ring cases are {t:"c", i, p}: `i` counts from 0, `p` is bin with byte k equal to
(k + 7 i) mod 256; a case ends with {t:"c_end", n}. Sizes are msgpack sizes of the whole
message, each writer solving for len(p) with its own encoder (msgpackr and msgpack-python
encode maps differently).
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "stub"))

import msgpack  # noqa: E402

from tritium_stub import ipc, memfd  # noqa: E402

CASES_PATH = os.path.join(ROOT, "test", "ipc-conformance", "cases.json")
BOUND_S = 20.0  # every wait of the suite is bounded by this (never an assertion on speed)


def load_cases() -> dict:
    with open(CASES_PATH) as f:
        return json.load(f)


def find_case(section: str, name: str) -> dict:
    for case in load_cases()[section]:
        if case["name"] == name:
            return case
    raise KeyError(f"no {section} case named {name!r}")


# ---- messages ---------------------------------------------------------------------------


def pattern(i: int, n: int) -> bytes:
    start = (7 * i) % 256
    reps = (start + n) // 256 + 1
    return (bytes(range(256)) * reps)[start : start + n]


def message(i: int, payload_len: int) -> dict:
    return {"t": "c", "i": i, "p": pattern(i, payload_len)}


def encoded_size(i: int, payload_len: int) -> int:
    return len(msgpack.packb(message(i, payload_len), use_bin_type=True))


def payload_for(i: int, size: int) -> int | None:
    """len(p) that makes message i exactly `size` bytes, or None when no length does (the bin
    header grows by one or two bytes at 256 and 65536)."""
    base = encoded_size(i, 0)
    for n in (size - base, size - base - 1, size - base - 3):
        if n >= 0 and encoded_size(i, n) == size:
            return n
    return None


def record_size(n: int) -> int:
    return (4 + n + ipc.RECORD_ALIGN - 1) // ipc.RECORD_ALIGN * ipc.RECORD_ALIGN


def place(tail: int, nbytes: int, cap: int) -> int:
    """The reference layout of docs/ipc.md, "Rings": where a writer's tail must be after a
    message of `nbytes`: fragments of at most cap/2 - 8 bytes, a wrap marker wherever a
    record does not fit before the end of the ring."""
    max_rec = cap // 2 - ipc.RECORD_ALIGN
    off = 0
    while True:
        piece = min(max_rec, nbytes - off)
        need = record_size(piece)
        to_end = cap - tail % cap
        if need > to_end:
            tail += to_end
        tail += need
        off += piece
        if off >= nbytes:
            return tail


def fill_sizes(tail: int, cap: int, gap: int, i: int) -> list[int]:
    """Message sizes whose records end exactly `gap` bytes before the end of the ring: each
    record fills what is left before the end or the target exactly (no wrap marker), except
    where fewer bytes than any record are left before the end (the next record wraps there)."""
    sizes = []
    pos = tail % cap
    max_payload = cap // 2 - ipc.RECORD_ALIGN
    d = (cap - gap - pos) % cap
    while True:
        while 0 < d < 24:  # no message is that small: go once more around the ring
            d += cap
        if d == 0:
            return sizes
        if cap - pos < 24:  # too little before the end for any record: a wrap marker goes there
            d -= cap - pos
            pos = 0
            continue
        room = min(d, cap - pos)
        r = min(room, cap // 2)
        if 0 < room - r < 24:
            r -= 24
        for n in range(r - 4, r - 12, -1):  # every n here gives a record of r bytes
            if n <= max_payload and payload_for(i + len(sizes), n) is not None:
                break
        else:
            raise ValueError(f"no message makes a record of {r} bytes")
        sizes.append(n)
        d -= r
        pos = (pos + r) % cap


def expand(case: dict) -> list:
    msgs = case["messages"]
    if isinstance(msgs, dict):
        pat = msgs["pattern"]
        return [pat[k % len(pat)] for k in range(msgs["count"])]
    return list(msgs)


def resolve(spec, cap: int, tail: int, i: int) -> list[tuple[int, int]]:
    """[(payload length, expected size or -1)] of the messages a spec stands for."""
    if isinstance(spec, int):
        n = payload_for(i, spec)
        if n is None:
            raise ValueError(f"no message of exactly {spec} bytes")
        return [(n, spec)]
    if "payload" in spec:
        return [(spec["payload"], -1)]
    if "max" in spec:
        return resolve(cap // 2 - ipc.RECORD_ALIGN + spec["max"], cap, tail, i)
    if "rings" in spec:
        return resolve(int(spec["rings"] * cap), cap, tail, i)
    if "fillTo" in spec:
        out = []
        for size in fill_sizes(tail, cap, spec["fillTo"], i):
            out += resolve(size, cap, tail, i + len(out))
        return out
    raise ValueError(f"unknown message spec {spec!r}")


# ---- the control header, through a mapping of our own ---------------------------------------


class Header:
    """Words of segment n0's control header (docs/ipc.md, "Control header")."""

    def __init__(self, region: str):
        fds = memfd.segment_fds_setting(os.environ)
        if fds is not None:  # n0 is an inherited memfd, which the channel closes once mapped
            self.mm = mmap.mmap(fds[0], ipc.HEADER_SIZE)
        else:
            fd = os.open(f"/dev/shm/{region}.n0", os.O_RDWR)
            try:
                self.mm = mmap.mmap(fd, ipc.HEADER_SIZE)
            finally:
                os.close(fd)
        # One aligned load per word (struct's "<Q" reads byte by byte and can see a torn value).
        self._w32 = memoryview(self.mm).cast("I")
        self._w64 = memoryview(self.mm).cast("Q")

    def u32(self, off: int) -> int:
        return self._w32[off // 4]

    def u64(self, off: int) -> int:
        return self._w64[off // 8]

    def cap(self) -> int:
        return self.u64(ipc.OFF_RING_CAPACITY)

    def ring(self, ring) -> dict:
        head, tail, db, sleeping, waiting = ring
        return {
            "head": self.u64(head),
            "tail": self.u64(tail),
            "doorbell": self.u32(db),
            "sleeping": self.u32(sleeping),
            "producer_waiting": self.u32(waiting),
        }

    def close(self) -> None:
        self._w32.release()
        self._w64.release()
        self.mm.close()


def wait_for(pred, what: str, bound: float = BOUND_S) -> None:
    deadline = time.monotonic() + bound
    while not pred():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {bound} s waiting for {what}")
        time.sleep(0.0005)


def wait_until_writer_blocked(hdr: Header, ring) -> None:
    """A writer that finds the ring full publishes again and again (forced wake-ups, docs/ipc.md
    "Back-pressure") while its tail stands still: the doorbell moves, the tail does not."""

    def blocked() -> bool:
        before = hdr.ring(ring)
        time.sleep(0.005)
        after = hdr.ring(ring)
        return after["doorbell"] != before["doorbell"] and after["tail"] == before["tail"] != after["head"]

    wait_for(blocked, "the writer to wait for ring space")


# ---- ring writer and reader -----------------------------------------------------------------


def write_case(case: dict, send, hdr: Header, ring, queued=lambda: False) -> dict:
    """Sends the case's messages with `send` and reports, per message, its payload length, the
    doorbell change and whether it fitted; checks the writer's tail against `place` whenever
    nothing is queued. `ring` is the writer's ring (offsets)."""
    cap = hdr.cap()
    start = hdr.u64(ring[1])
    tail = start  # the reference position (place), ahead of the real one while queued
    sent, errors = [], []
    i = 0
    for spec in expand(case):
        for n, size in resolve(spec, cap, tail, i):
            msg = message(i, n)
            data = msgpack.packb(msg, use_bin_type=True)
            if size >= 0 and len(data) != size:
                errors.append(f"message {i}: {len(data)} bytes instead of {size}")
            before = hdr.ring(ring)
            fits = not queued() and place(before["tail"], len(data), cap) - before["head"] <= cap
            send(msg)
            after = hdr.ring(ring)
            tail = place(tail, len(data), cap)
            if not queued() and after["tail"] != tail:
                errors.append(
                    f"message {i} ({len(data)} bytes): tail {after['tail'] - start}, layout says {tail - start}"
                )
            sent.append(
                {
                    "i": i,
                    "len": n,
                    "size": len(data),
                    "fits": fits,
                    "doorbell": (after["doorbell"] - before["doorbell"]) % (1 << 32),
                }
            )
            i += 1
    send({"t": "c_end", "n": i})
    return {"sent": sent, "errors": errors}


class ReadCheck:
    """Feeds on received messages (others than c / c_end are ignored: hello, seg) and checks
    order and content; `done` once c_end came."""

    def __init__(self):
        self.lengths: list[int] = []
        self.errors: list[str] = []
        self.done = False

    def feed(self, msg) -> None:
        t = msg.get("t") if isinstance(msg, dict) else None
        if t == "c_end":
            if msg["n"] != len(self.lengths):
                self.errors.append(f"c_end says {msg['n']} messages, {len(self.lengths)} came")
            self.done = True
        elif t == "c":
            i = len(self.lengths)
            p = msg.get("p")
            if msg.get("i") != i:
                self.errors.append(f"message {i} came as {msg.get('i')}")
            elif not isinstance(p, bytes) or p != pattern(i, len(p)):
                self.errors.append(f"message {i}: payload damaged")
            self.lengths.append(len(p) if isinstance(p, bytes) else -1)

    def report(self) -> dict:
        return {"lengths": self.lengths, "errors": self.errors}


def read_case(recv) -> dict:
    check = ReadCheck()
    deadline = time.monotonic() + BOUND_S
    while not check.done:
        msg = recv(max(deadline - time.monotonic(), 0.0))
        if msg is None:
            check.errors.append("timed out before c_end")
            break
        check.feed(msg)
    return check.report()


# ---- arenas ---------------------------------------------------------------------------------


def run_arena_ops(case: dict, alloc, free) -> list[str]:
    """Runs an `arena` case against one allocator (alloc(n) -> offset or -1; free(off) raising
    on a block it does not know); returns the differences from the expected offsets."""
    errors, live = [], {}
    for op in case["ops"]:
        if op[0] == "alloc":
            _, name, n, want = op
            got = alloc(n)
            if got != want:
                errors.append(f"alloc {name} ({n} bytes): {got}, expected {want}")
            if got >= 0:
                live[name] = got
        elif op[0] == "free":
            free(live.pop(op[1]))
        elif op[0] == "free!":  # must be refused
            try:
                free(op[1])
            except (ValueError, RuntimeError):
                continue
            errors.append(f"free of offset {op[1]} was accepted")
    return errors


def region_blocks(case: dict, alloc, free) -> tuple[list, list[str]]:
    """Runs a `regionArena` case with alloc(n) -> (segment index, offset from the arena start,
    writable view) and free(name); fills each new block with its pattern. Returns the live
    blocks [name, segment index, offset, n, seed] and the differences from the expectation."""
    errors, live = [], {}
    for seed, op in enumerate(case["ops"]):
        if op[0] == "alloc":
            _, name, n, want_seg, want_off = op
            seg, off, view = alloc(n)
            if (seg, off) != (want_seg, want_off):
                errors.append(f"alloc {name} ({n} bytes): segment {seg} offset {off}, expected {want_seg} {want_off}")
            view[:n] = pattern(seed, n)
            live[name] = [name, seg, off, n, seed]
        else:
            free(live.pop(op[1]))
    return list(live.values()), errors


def check_blocks(blocks, view) -> list[str]:
    """The reader's side of a regionArena case: every live block holds its pattern."""
    errors = []
    for name, seg, off, n, seed in blocks:
        if bytes(view(seg, off, n)) != pattern(seed, n):
            errors.append(f"block {name} (segment {seg}, offset {off}) does not hold what was written")
    return errors


def futex_wake(mm: mmap.mmap, off: int) -> int:
    """FUTEX_WAKE on the u32 at `off` of the mapping `mm`: how many waiters it woke (x86-64's
    syscall number; the tests' way to see that a peer really sleeps in FUTEX_WAIT)."""
    anchor = ctypes.c_char.from_buffer(mm)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        addr = ctypes.addressof(anchor) + off
        return libc.syscall(202, ctypes.c_void_p(addr), 1, 0x7FFFFFFF, None, None, 0)
    finally:
        del anchor


# ---- the peer process -----------------------------------------------------------------------


def _open_channel(region: str, case: dict):
    fd = os.environ.get("TRITIUM_STUB_WAKE_FD")
    mode = case.get("spinMode", "never")
    return ipc.Channel(
        region,
        case.get("growth", 1 << 16),
        spin_mode=mode,
        wake_fd=None if fd is None else int(fd),
        segment_fds=memfd.segment_fds_setting(os.environ),
    )


def _idle(ring: dict) -> bool:
    return ring["sleeping"] == 1 and ring["head"] == ring["tail"]


def _wait_go() -> None:
    line = sys.stdin.readline()
    if line.strip() != "go":
        raise RuntimeError(f"expected 'go' on stdin, got {line!r}")


def peer(region: str, role: str, section: str, name: str) -> dict:
    case = find_case(section, name)
    hdr = Header(region)
    ch = _open_channel(region, case)
    out: dict = {}
    try:
        if role == "ring-writer":
            out.update(write_case(case, ch.send, hdr, ipc.RING_B))
        elif role == "ring-reader":
            if case.get("blockReader"):
                _wait_go()
                out["atGo"] = hdr.ring(ipc.RING_A)
            out.update(read_case(lambda t: ch.recv(timeout=t)))
            # Node clears its flag once its queue is written out (docs/ipc.md, "Back-pressure").
            wait_for(lambda: hdr.u32(ipc.RING_A[4]) == 0, "producer_waiting of ring A to clear")
        elif role == "sleeping-writer":
            out["rounds"] = []
            for k in range(case["rounds"]):
                # The reader took everything and asks to be woken: only a wake-up brings it more.
                wait_for(lambda: _idle(hdr.ring(ipc.RING_B)), "the reader of ring B to drain and ask for a wake-up")
                out["rounds"].append(hdr.ring(ipc.RING_B))
                ch.send(message(k, 8))
            ch.send({"t": "c_end", "n": case["rounds"]})
        elif role == "sleeping-reader":
            got = []
            for _ in range(case["rounds"]):
                got.append(ch.recv(timeout=BOUND_S))
            out["received"] = [m["i"] if m else None for m in got]
            out["sleepingAfter"] = hdr.u32(ipc.RING_A[3])
        elif role == "heartbeat":
            ch.send({"t": "hb_before"})
            _wait_go()  # the other side has looked at the words before the first beat
            ch.start_heartbeat(case["periodS"])
            ch.send({"t": "hb_started"})
            _wait_go()
        elif role == "arena-writer":

            def alloc(n):
                seg, off, view = ch.alloc(n)
                return int(seg[1:]), off, view

            def free(block):
                ch.free(f"s{block[1]}", block[2])

            blocks, errors = region_blocks(case, alloc, free)
            ch.send({"t": "blocks", "blocks": blocks, "errors": errors})
            _wait_go()  # the reader looks at the blocks first
        elif role == "arena-reader":
            msg = ch.recv(timeout=BOUND_S)
            arena_start = hdr.u64(40)

            def view(seg, off, n):
                return ch.tensor_view(f"n{seg}", off + (arena_start if seg == 0 else 0), n)

            out["errors"] = check_blocks(msg["blocks"], view)
        else:
            raise ValueError(f"unknown role {role!r}")
    finally:
        ch.close()
        hdr.close()
    return out


if __name__ == "__main__":
    report = peer(*sys.argv[1:5])
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()
