"""A minimal Node side of docs/ipc.md, in Python, to run the real stub process in tests.

It creates segment n0 with the control header and both rings, pushes messages onto ring A,
pops ring B, and reads output segments the stub creates. Single-threaded and polling: enough
for tests, not a model of the Node implementation.
"""

import ctypes
import mmap
import os
import struct
import time

import msgpack

from tritium_stub import ipc

HEADER = 4096


class NodeEmulator:
    def __init__(self, region, ring_capacity=1 << 16, size=1 << 20):
        self.region = region
        self.cap = ring_capacity
        path = f"/dev/shm/{region}.n0"
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        os.ftruncate(fd, size)
        self.mm = mmap.mmap(fd, size)
        os.close(fd)
        self.a_data, self.b_data = HEADER, HEADER + ring_capacity
        self.arena_pos = HEADER + 2 * ring_capacity
        self.mm[0:8] = ipc.MAGIC
        struct.pack_into("<II", self.mm, 8, ipc.LAYOUT_VERSION, HEADER)
        struct.pack_into(
            "<QQQQQ", self.mm, 16, ring_capacity, self.a_data, self.b_data, self.arena_pos, size - self.arena_pos
        )
        self._anchor = ctypes.c_char.from_buffer(self.mm)
        self._addr = ctypes.addressof(self._anchor)
        self.a_tail = 0
        self.b_head = 0
        self.outputs = {}

    def _u64(self, off, value=None):
        if value is None:
            return struct.unpack_from("<Q", self.mm, off)[0]
        struct.pack_into("<Q", self.mm, off, value)

    def push(self, msg):
        data = msgpack.packb(msg, use_bin_type=True)
        need = (4 + len(data) + 7) & ~7
        pos = self.a_tail % self.cap
        if pos + need > self.cap:
            struct.pack_into("<I", self.mm, self.a_data + pos, ipc.WRAP_MARKER)
            self.a_tail += self.cap - pos
            pos = 0
        struct.pack_into("<I", self.mm, self.a_data + pos, len(data))
        self.mm[self.a_data + pos + 4 : self.a_data + pos + 4 + len(data)] = data
        self.a_tail += need
        self._u64(ipc.RING_A[1], self.a_tail)
        db = ipc.RING_A[2]
        struct.pack_into("<I", self.mm, db, (struct.unpack_from("<I", self.mm, db)[0] + 1) & 0xFFFFFFFF)
        # Wake a sleeping stub at once (it would re-check within 100 ms anyway).
        if struct.unpack_from("<I", self.mm, ipc.RING_A[3])[0]:
            ipc.futex_wake(self._addr + db)

    def pop(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            tail = self._u64(ipc.RING_B[1])
            while self.b_head < tail:
                pos = self.b_head % self.cap
                (word,) = struct.unpack_from("<I", self.mm, self.b_data + pos)
                if word == ipc.WRAP_MARKER:
                    self.b_head += self.cap - pos
                    continue
                assert not word & ipc.FRAG_MORE, "fragmented records are not needed in tests"
                start = self.b_data + pos + 4
                msg = msgpack.unpackb(self.mm[start : start + word], raw=False)
                self.b_head += (4 + word + 7) & ~7
                self._u64(ipc.RING_B[0], self.b_head)
                return msg
            time.sleep(0.0005)
        raise TimeoutError("no message from the stub")

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
        del self._anchor
        for mm in list(self.outputs.values()) + [self.mm]:
            mm.close()
        for f in os.listdir("/dev/shm"):
            if f.startswith(self.region + "."):
                os.unlink(os.path.join("/dev/shm", f))
