"""A minimal Node side of docs/ipc.md, in Python, to run the real stub process in tests.

It creates segment n0 with the control header and both rings, pushes messages onto ring A,
pops ring B, and reads output segments the stub creates. Single-threaded; its rings follow the
protocol in full (fragments, wrap markers, back-pressure, the futex wake-up of a peer without a
wake eventfd), which the conformance suite checks (test/python/test_ipc_conformance.py).
"""

import ctypes
import errno
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
        self._words32 = memoryview(self.mm).cast("I")
        self._words64 = memoryview(self.mm).cast("Q")
        self._anchor = ctypes.c_char.from_buffer(self.mm)
        self._addr = ctypes.addressof(self._anchor)
        self.a_tail = 0
        self.b_head = 0
        self._frags = []
        self.outputs = {}

    # Header words through memoryview.cast(), as the stub's pure-Python path does: each access is
    # one aligned machine load or store. struct.pack_into("<Q") writes byte by byte, and a stub
    # reading a tail torn that way sees it jump backwards (a "corrupt" ring).
    def _u64(self, off, value=None):
        if value is None:
            return self._words64[off // 8]
        self._words64[off // 8] = value

    def _u32(self, off, value=None):
        if value is None:
            return self._words32[off // 4]
        self._words32[off // 4] = value

    def push(self, msg, timeout=10.0):
        """One message onto ring A the way Node writes it (docs/ipc.md, "Rings"): fragments of at
        most half the ring, a wrap marker where a record does not fit before the end, and, while
        the ring is full, `producer_waiting` set and a bounded wait for the stub to drain."""
        data = msgpack.packb(msg, use_bin_type=True)
        max_rec = self.cap // 2 - ipc.RECORD_ALIGN
        deadline = time.monotonic() + timeout
        off, waited = 0, False
        while True:
            end = min(len(data), off + max_rec)
            if self._try_write(data[off:end], end < len(data)):
                off = end
                if off >= len(data):
                    break
                continue
            self._publish()  # what fits so far, so that the stub drains it
            waited = True
            self._u32(ipc.RING_A[4], 1)
            if time.monotonic() > deadline:
                raise TimeoutError("ring A stays full: the stub does not drain it")
            time.sleep(0.0005)
        if waited:
            self._u32(ipc.RING_A[4], 0)
        self._publish()

    def _try_write(self, chunk, more):
        need = (4 + len(chunk) + 7) & ~7
        free = self.cap - (self.a_tail - self._u64(ipc.RING_A[0]))
        pos = self.a_tail % self.cap
        if need > self.cap - pos:
            if self.cap - pos + need > free:
                return False
            self._u32(self.a_data + pos, ipc.WRAP_MARKER)
            self.a_tail += self.cap - pos
            pos = 0
        elif need > free:
            return False
        self._u32(self.a_data + pos, len(chunk) | (ipc.FRAG_MORE if more else 0))
        self.mm[self.a_data + pos + 4 : self.a_data + pos + 4 + len(chunk)] = chunk
        self.a_tail += need
        return True

    def _publish(self):
        """Tail, doorbell + 1, then FUTEX_WAKE only if the stub said it sleeps (after a fence:
        the doorbell store must not pass the `sleeping` load, docs/ipc.md "Rings")."""
        self._u64(ipc.RING_A[1], self.a_tail)
        db = ipc.RING_A[2]
        self._u32(db, (self._u32(db) + 1) & 0xFFFFFFFF)
        ipc._fence()
        if self._u32(ipc.RING_A[3]):
            ipc.futex_wake(self._addr + db)

    def pop(self, timeout=10.0):
        """The next message of ring B (fragments reassembled). Waits the futex way of a peer
        without a wake eventfd (docs/ipc.md, "Waking Node"): `sleeping` = 1, then FUTEX_WAIT on
        the doorbell for the whole remaining time, so a stub that fails to wake us times out
        here instead of being rescued by polling."""
        deadline = time.monotonic() + timeout
        db, sleeping = ipc.RING_B[2], ipc.RING_B[3]
        while True:
            seen = self._u32(db)  # before looking: a publish after this changes it
            msg = self._next()
            if msg is not None:
                return msg
            if self._u64(ipc.RING_B[1]) != self.b_head:
                continue  # a partial message: keep draining
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message from the stub")
            self._u32(sleeping, 1)
            r = ipc.futex_wait(self._addr + db, seen, left)
            self._u32(sleeping, 0)
            if r == errno.ETIMEDOUT:
                raise TimeoutError("no message from the stub (or it published without waking us)")

    def _next(self):
        """One complete message of ring B, or None; every length is checked against the ring
        and the published tail first (a corrupt ring raises instead of reading elsewhere)."""
        tail = self._u64(ipc.RING_B[1])
        while self.b_head < tail:
            if tail - self.b_head > self.cap:
                raise RuntimeError("ring B is corrupt: tail is more than one capacity ahead of head")
            pos = self.b_head % self.cap
            to_end = self.cap - pos
            word = self._u32(self.b_data + pos)
            if word == ipc.WRAP_MARKER:
                if to_end > tail - self.b_head:
                    raise RuntimeError("ring B is corrupt: wrap marker beyond the published tail")
                self._advance(to_end)
                continue
            n = word & ~ipc.FRAG_MORE
            rec = (4 + n + 7) & ~7
            if 4 + n > to_end or rec > tail - self.b_head or n > self.cap // 2:
                raise RuntimeError(f"ring B is corrupt: record length {n} runs past the ring or the published tail")
            start = self.b_data + pos + 4
            chunk = bytes(self.mm[start : start + n])
            self._advance(rec)
            if word & ipc.FRAG_MORE:
                self._frags.append(chunk)
                continue
            if self._frags:
                chunk = b"".join([*self._frags, chunk])
                self._frags = []
            return msgpack.unpackb(chunk, raw=False)
        return None

    def _advance(self, n):
        self.b_head += n
        self._u64(ipc.RING_B[0], self.b_head)

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
        self._words32.release()
        self._words64.release()
        for mm in list(self.outputs.values()) + [self.mm]:
            mm.close()
        for f in os.listdir("/dev/shm"):
            if f.startswith(self.region + "."):
                os.unlink(os.path.join("/dev/shm", f))
