"""A minimal Node side of docs/ipc.md, in Python, to run the real stub process in tests.

It creates segment n0 with the control header, pushes messages onto ring A, pops ring B, and
reads output segments the stub creates. The rings are not implemented here: Node's ends come
from the same C++ ring code as the stub's (`_tritium_ipc.Link(..., side="node")`, over
native/src/ring_core.h), so the protocol exists once; this file only lays out the header, plays
Node's part of the messages and pokes header words for the tests that corrupt them.
"""

import mmap
import os
import struct

import msgpack

from tritium_stub import ipc

HEADER = 4096
NATIVE, WHY_NOT = ipc.load_native()


class NodeEmulator:
    def __init__(self, region, ring_capacity=1 << 16, size=1 << 20):
        if NATIVE is None:
            raise RuntimeError(f"the Node emulator needs _tritium_ipc: {WHY_NOT}")
        self.region = region
        self.cap = ring_capacity
        path = f"/dev/shm/{region}.n0"
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(fd, size)
            self.mm = mmap.mmap(fd, size)
            self.a_data, self.b_data = HEADER, HEADER + ring_capacity
            self.arena_pos = HEADER + 2 * ring_capacity
            self.mm[0:8] = ipc.MAGIC
            struct.pack_into("<II", self.mm, 8, ipc.LAYOUT_VERSION, HEADER)
            struct.pack_into(
                "<QQQQQ", self.mm, 16, ring_capacity, self.a_data, self.b_data, self.arena_pos, size - self.arena_pos
            )
            self._words32 = memoryview(self.mm).cast("I")
            self._words64 = memoryview(self.mm).cast("Q")
            self.link = None
            self.reattach(fd)
        finally:
            os.close(fd)
        self.outputs = {}

    def reattach(self, fd=None):
        """(Re)takes Node's ends of both rings from the header's positions now (tests that
        rewrite them first). It never polls, as Node's event loop on a 2-core host, and waits on
        ring B's futex, the way of a peer without a wake eventfd."""
        if self.link is not None:
            self.link.close()
        own = fd is None
        if own:
            fd = os.open(f"/dev/shm/{self.region}.n0", os.O_RDWR)
        try:
            self.link = NATIVE.Link(fd, spin_mode="never", side="node")
        finally:
            if own:
                os.close(fd)

    # Header words through memoryview.cast(): each access is one aligned machine load or store.
    # struct.pack_into("<Q") writes byte by byte, and a stub reading a tail torn that way sees it
    # jump backwards (a "corrupt" ring).
    def _u64(self, off, value=None):
        if value is None:
            return self._words64[off // 8]
        self._words64[off // 8] = value

    def _u32(self, off, value=None):
        if value is None:
            return self._words32[off // 4]
        self._words32[off // 4] = value

    def push(self, msg):
        """One message onto ring A as Node writes it (fragments, wrap markers, and while the ring
        is full `producer_waiting` set; TimeoutError when the stub does not drain it in 10 s)."""
        self.link.send(msgpack.packb(msg, use_bin_type=True))

    def pop(self, timeout=10.0):
        """The next message of ring B. Waits on the doorbell futex for the whole remaining time,
        so a stub that fails to wake its peer times out here instead of being rescued by polling."""
        data = self.link.recv(timeout)
        if data is None:
            raise TimeoutError("no message from the stub (or it published without waking us)")
        return msgpack.unpackb(data, raw=False)

    def pop_until(self, t, timeout=10.0):
        """The next message of type t; others (logs, seg) are collected in self.seen."""
        while True:
            msg = self.pop(timeout)
            self.seen.append(msg)
            if msg["t"] == t:
                return msg
            if msg["t"].endswith("_err"):
                raise AssertionError(f"expected {t}, got {msg}")

    seen = []

    def put_input(self, name, datatype, shape, data):
        off = (self.arena_pos + 63) & ~63
        self.mm[off : off + len(data)] = data
        self.arena_pos = off + len(data)
        return [name, datatype, shape, "n0", off, len(data)]

    def read(self, desc):
        name, datatype, shape, seg, off, nbytes = desc
        mm = self.outputs.get(seg)
        if mm is None:
            fd = os.open(f"/dev/shm/{self.region}.{seg}", os.O_RDWR)
            mm = self.outputs[seg] = mmap.mmap(fd, os.fstat(fd).st_size)
            os.close(fd)
        return bytes(mm[off : off + nbytes])

    def close(self):
        self.link.close()
        self._words32.release()
        self._words64.release()
        for mm in list(self.outputs.values()) + [self.mm]:
            mm.close()
        for f in os.listdir("/dev/shm"):
            if f.startswith(self.region + "."):
                os.unlink(os.path.join("/dev/shm", f))
