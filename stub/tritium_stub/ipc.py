"""Stub side of the shared-memory link with the Node server (docs/ipc.md).

Two implementations of the hot path behind one `Channel`: the native one (the `_tritium_ipc`
extension built from native/src/python_ipc.cc by scripts/build-native.mjs, sharing its ring,
wait and arena code with the Node addon) and this pure-Python fallback, used when the module
is missing, was built for another interpreter, or TRITIUM_STUB_NATIVE=0.

The fallback is stdlib + msgpack only: segments are mmap'ed memfds (memfd.py) or files in /dev/shm,
the futex is reached through ctypes' syscall(), and rings/arenas are plain Python over memoryviews. Mirrors
src/backends/python/ipc/{shm-layout,ring,arena,channel}.ts; change both together.

Memory ordering: the pure-Python path runs only on x86 and x86-64, and refuses any other
machine (see check_pure_python_machine). CPython never reorders our loads/stores, and the header
fields are naturally aligned, so every u32/u64 access through memoryview.cast() is one machine
load/store; x86's total store order then gives the order the protocol needs (write record ->
store tail -> bump doorbell; load tail -> read record). The one store->load pair that TSO does
not order (doorbell or head store, then "is the peer asleep/waiting?" load) is fenced with a
locked instruction (see _fence). Weaker machines (aarch64, POWER, RISC-V) would need release and
acquire barriers that pure Python cannot issue; there the native extension, whose rings use C++
acquire/release atomics (native/src/ring_core.h), is the only way.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import platform
import sys
import threading
import time

import msgpack

from . import memfd

_packb = msgpack.packb
_unpackb = msgpack.unpackb

SHM_DIR = "/dev/shm"

# ---- layout (src/backends/python/ipc/shm-layout.ts) ----
MAGIC = b"TRITIUM1"
LAYOUT_VERSION = 1
HEADER_SIZE = 4096
MIN_RING_BYTES = 4096
OFF_VERSION = 8
OFF_HEADER_SIZE = 12
OFF_RING_CAPACITY = 16
OFF_RING_A_DATA = 24
OFF_RING_B_DATA = 32
OFF_HEARTBEAT = 64
OFF_STUB_PID = 72
# ring: head, tail, doorbell, sleeping, producer_waiting
RING_A = (128, 192, 256, 260, 264)  # Node -> stub
RING_B = (320, 384, 448, 452, 456)  # stub -> Node
FRAG_MORE = 0x8000_0000
WRAP_MARKER = 0xFFFF_FFFF
RECORD_ALIGN = 8
BLOCK_ALIGN = 64
SEGMENT_ROUND = 1 << 16

# ---- futex via ctypes (pure-Python path only, so only the machines it runs on) ----
_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "i386": 240, "i686": 240}
_MACHINE = platform.machine().lower()
SYS_FUTEX = _SYS_FUTEX.get(_MACHINE, -1)
FUTEX_WAIT = 0  # non-private: the word is in a MAP_SHARED mapping used by another process
FUTEX_WAKE = 1
_EVENTFD_ONE = (1).to_bytes(8, "little")
# Total-store-order machines: the only ones where the pure-Python rings are correct (see above).
PURE_PYTHON_MACHINES = frozenset(_SYS_FUTEX)


def check_pure_python_machine(machine: str | None = None, why_not_native: str | None = None) -> None:
    """Raises RuntimeError unless the pure-Python rings are correct on `machine` (default: this
    one). Injectable so tests can ask about a machine they do not run on."""
    m = (machine if machine is not None else _MACHINE).lower()
    if m in PURE_PYTHON_MACHINES:
        return
    because = f" (it is not used here: {why_not_native})" if why_not_native else ""
    raise RuntimeError(
        f"the pure-Python IPC path is only correct on x86 and x86-64, and this machine is "
        f"{m!r}: it has no release/acquire barriers for the shared-memory rings. Use the native "
        f"extension _tritium_ipc instead{because}: build it for this interpreter with "
        f"`npm run build:native` (TRITIUM_PYTHON={sys.executable}) and do not set {NATIVE_ENV}=0."
    )


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


# ---- native hot path ----
NATIVE_ENV = "TRITIUM_STUB_NATIVE"
NATIVE_DIR_ENV = "TRITIUM_STUB_NATIVE_DIR"  # where _tritium_ipc*.so lives (tests, packaging)
_DEFAULT_NATIVE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "native", "build", "python")


def load_extension(name: str):
    """(module, None) when the native module `name` of native/build/python loads here, else
    (None, reason). _tritium_ipc is built once for the stable ABI (`.abi3.so`, any interpreter
    from 3.9 on); _tritium_objects for one interpreter (its EXT_SUFFIX), so a model's
    EXECUTION_ENV_PATH interpreter of another version finds none and does without."""
    import importlib.machinery
    import importlib.util

    folder = os.path.abspath(os.environ.get(NATIVE_DIR_ENV) or _DEFAULT_NATIVE_DIR)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(folder, name + suffix)
        if not os.path.isfile(path):
            continue
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except Exception as e:  # ImportError, or a symbol/ABI mismatch
            return None, f"cannot import {path}: {e}"
        return module, None
    return None, (
        f"no {name} module for this interpreter in {folder} "
        f"(build it with `npm run build:native`, TRITIUM_PYTHON={sys.executable})"
    )


def load_native():
    """(module, None) when the native hot path can be used, else (None, reason)."""
    if os.environ.get(NATIVE_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return None, f"disabled by {NATIVE_ENV}=0"
    module, why = load_extension("_tritium_ipc")
    if module is not None and getattr(module, "PROTOCOL_VERSION", None) != LAYOUT_VERSION:
        return None, f"{module.__file__} speaks layout {getattr(module, 'PROTOCOL_VERSION', '?')}"
    return module, why


SPIN_MODES = ("adaptive", "always", "never")


class WaitPolicy:
    """Pure-Python twin of tritium::wait::WaitPolicy (native/src/wait_core.h): poll before
    sleeping only when recent messages came within the window and a core is idle."""

    MAX_SCORE, SPIN_SCORE, MISS_PENALTY, LOAD_CHECK_S = 16, 4, 4, 0.02
    PROBE_EVERY, LONG_GAP = 16, 4

    def __init__(self, mode="adaptive", spin_us=50.0):
        if mode not in SPIN_MODES:
            raise ValueError(f"spin_mode must be one of {SPIN_MODES}, got {mode!r}")
        self.spin_s = max(float(spin_us), 0.0) / 1e6
        self.mode = "never" if self.spin_s == 0 else mode
        self.score = 0
        self._probe = 0
        self._next_check = 0.0
        self._spare = False
        try:
            self._cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            self._cpus = os.cpu_count() or 1

    def budget(self, now):
        if self.mode == "never":
            return 0.0
        if self.mode == "always":
            return self.spin_s
        if now >= self._next_check:
            self._next_check = now + self.LOAD_CHECK_S
            running = _runnable_tasks()  # includes us; two more idle cores (wait_core.h)
            self._spare = 0 < running and running + 2 <= self._cpus
        if not self._spare:
            return 0.0
        if self.score >= self.SPIN_SCORE:
            return self.spin_s
        self._probe += 1  # an occasional poll, to learn while sleeping (wait_core.h)
        if self._probe >= self.PROBE_EVERY:
            self._probe = 0
            return self.spin_s
        return 0.0

    def observe(self, gap, spun=True):
        if gap <= self.spin_s:
            self.score = min(self.score + 1, self.MAX_SCORE)
        elif spun or gap > self.LONG_GAP * self.spin_s:
            self.score = max(self.score - self.MISS_PENALTY, 0)


def _runnable_tasks():
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return -1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def futex_wait(addr: int, expected: int, timeout: float | None) -> int:
    """Sleeps while the u32 at addr == expected (ctypes releases the GIL). Returns 0 or errno."""
    ts = None
    if timeout is not None:
        t = max(timeout, 0.0)
        ts = ctypes.byref(_Timespec(int(t), int((t - int(t)) * 1e9)))
    r = _syscall(
        ctypes.c_long(SYS_FUTEX),
        ctypes.c_void_p(addr),
        ctypes.c_long(FUTEX_WAIT),
        ctypes.c_long(expected),
        ts,
        ctypes.c_void_p(None),
        ctypes.c_long(0),
    )
    return 0 if r == 0 else ctypes.get_errno()


def futex_wake(addr: int) -> int:
    return _syscall(
        ctypes.c_long(SYS_FUTEX),
        ctypes.c_void_p(addr),
        ctypes.c_long(FUTEX_WAKE),
        ctypes.c_long(0x7FFFFFFF),
        ctypes.c_void_p(None),
        ctypes.c_void_p(None),
        ctypes.c_long(0),
    )


_fence_lock = threading.Lock()


def _fence() -> None:
    # An uncontended lock acquire/release is a locked read-modify-write (full barrier on x86),
    # the cheapest store->load fence reachable from pure Python.
    _fence_lock.acquire()
    _fence_lock.release()


def _check_rings(cap: int, a: int, b: int, size: int) -> None:
    """The ring geometry of the header, checked as ring_core.h's Layout::Check does for the
    native path, so that a bad header fails here instead of steering reads outside the rings."""
    if cap < MIN_RING_BYTES or cap & (cap - 1) or cap > 1 << 32:
        raise RuntimeError(f"ring capacity {cap} is not a power of two in [4096, 2^32]")
    for off in (a, b):
        if off < HEADER_SIZE or off % RECORD_ALIGN or off > size or cap > size - off:
            raise RuntimeError("ring data offsets lie outside the segment")
    if a < b + cap and b < a + cap:
        raise RuntimeError("ring data areas overlap")


PAGE_SIZE = mmap.PAGESIZE
# Punches a hole in a shared mapping's file (Linux; absent elsewhere, where nothing is hollowed).
_MADV_REMOVE = getattr(mmap, "MADV_REMOVE", None)


def _shm_full_text(what: str, nbytes: int) -> str:
    """The "/dev/shm is full" text: how full, what holds the space, what helps."""
    st = os.statvfs(SHM_DIR)
    held = 0
    region_prefix = "tritium_"
    theirs = []
    for name in os.listdir(SHM_DIR):
        try:
            b = os.stat(os.path.join(SHM_DIR, name)).st_blocks * 512
        except OSError:
            continue
        if name.startswith(region_prefix):
            held += b
        else:
            theirs.append((b, name))
    theirs.sort(reverse=True)
    largest = ", ".join(f"{n} {b}" for b, n in theirs[:3])
    return (
        f"/dev/shm is full: cannot {what} for {nbytes} bytes of tensor data. "
        f"{st.f_bavail * st.f_frsize} of {st.f_blocks * st.f_frsize} bytes of {SHM_DIR} are free; "
        f"tritium's stubs and servers hold {held} bytes (n0 segments of shm-default-byte-size each, and tensors of requests in flight), "
        f"other files {sum(b for b, _ in theirs)} bytes{f' (largest: {largest})' if largest else ''}. "
        "Give /dev/shm more room (e.g. docker run --shm-size), send fewer large tensors at once, or lower "
        "--backend-config=python,shm-default-byte-size or the instance count when the n0 segments fill it."
    )


def _round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


class Arena:
    """First-fit allocator with coalescing over [base, base+size); metadata in this process."""

    def __init__(self, base: int, size: int, align: int = BLOCK_ALIGN):
        start = _round_up(base, align)
        self.align = align
        self._free: list[list[int]] = [[start, base + size - start]] if base + size > start else []
        self._used: dict[int, int] = {}

    def alloc(self, nbytes: int) -> int:
        need = _round_up(max(nbytes, 1), self.align)
        for i, ext in enumerate(self._free):
            if ext[1] < need:
                continue
            off = ext[0]
            if ext[1] == need:
                del self._free[i]
            else:
                ext[0] += need
                ext[1] -= need
            self._used[off] = need
            return off
        return -1

    def free(self, off: int) -> None:
        size = self._used.pop(off, None)
        if size is None:
            raise ValueError(f"arena: free of unknown block at offset {off}")
        fl = self._free
        lo, hi = 0, len(fl)
        while lo < hi:
            mid = (lo + hi) // 2
            if fl[mid][0] < off:
                lo = mid + 1
            else:
                hi = mid
        prev = fl[lo - 1] if lo > 0 else None
        nxt = fl[lo] if lo < len(fl) else None
        if prev is not None and prev[0] + prev[1] == off:
            prev[1] += size
            if nxt is not None and prev[0] + prev[1] == nxt[0]:
                prev[1] += nxt[1]
                del fl[lo]
        elif nxt is not None and off + size == nxt[0]:
            nxt[0] = off
            nxt[1] += size
        else:
            fl.insert(lo, [off, size])

    def blocks_in_use(self) -> int:
        return len(self._used)


class _Segment:
    __slots__ = ("name", "mm", "mv", "size", "arena", "hollow", "fd")

    def __init__(self, name: str, mm: mmap.mmap, fd: int = -1):
        self.name = name
        self.mm = mm
        self.mv = memoryview(mm)
        self.size = len(mm)
        self.arena: Arena | None = None
        # Its pages went back to tmpfs when its last block was freed (docs/ipc.md, "Segments"):
        # a block allocated in it reserves its pages first.
        self.hollow = False
        # The memfd of an output segment this stub created (kept to reserve pages); -1 otherwise.
        self.fd = fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        try:
            self.mv.release()
            self.mm.close()
        except BufferError:
            pass  # a tensor view is still alive; the mapping goes away with it


class Channel:
    """The stub's end of one region. recv() is for a single consumer thread; send() is thread-safe."""

    def __init__(
        self,
        region: str,
        growth_byte_size: int,
        spin_us: float = 50.0,
        spin_yield: bool = False,
        spin_mode: str = "adaptive",
        native="auto",
        wake_fd: int | None = None,
        machine: str | None = None,
        segment_fds: tuple[int, int] | None = None,
    ):
        """native: "auto" (the extension when loadable), False (pure Python), or a module.
        wake_fd: Node's wake eventfd (docs/ipc.md, "Waking Node"); None: ring B's consumer
        sleeps on its futex and is woken with FUTEX_WAKE (the test emulator of Node).
        machine: the architecture the pure-Python path checks (default: this one; for tests).
        segment_fds: (n0's memfd, the segment socket) inherited from Node (memfd.py); None: the
        region's segments are files in /dev/shm named after `region`."""
        if "/" in region or not region:
            raise ValueError(f"invalid region name {region!r}")
        self.region = region
        self.growth_byte_size = max(int(growth_byte_size), SEGMENT_ROUND)
        self.policy = WaitPolicy(spin_mode, spin_us)
        self.spin_yield = spin_yield
        self._wake_fd = -1 if wake_fd is None else int(wake_fd)
        self._segs: dict[str, _Segment] = {}
        self._outputs: list[_Segment] = []
        self._seg_lock = threading.Lock()  # alloc/free/lazy maps may run on model threads
        self._send_lock = threading.Lock()
        # Called (without the lock) when no output segment has room, before a new one is made:
        # the runtime sets it to take releases Node already sent (Inbox.poll).
        self.reclaim = None
        self._closed = False
        self._hb_stop = threading.Event()
        self._hb_thread: threading.Thread | None = None
        # packb() builds a Packer (and its buffer) per call; the main thread, which sends
        # almost everything, reuses one (3x cheaper). Other threads and re-entrant sends (a
        # finalizer running inside pack) fall back to packb.
        self._packer = msgpack.Packer(use_bin_type=True)
        self._packing = False
        self._main_ident = threading.get_ident()

        self._fdlink: memfd.FdLink | None = None
        # Output segments are memfds while memfd_create works here; a refusal (seccomp, an old
        # kernel) makes them /dev/shm files, which Node opens by name when no descriptor came.
        self._memfd_refused: str | None = None
        if segment_fds is not None:
            n0_fd = segment_fds[0]
            self._fdlink = memfd.FdLink(segment_fds[1])
        else:
            n0_fd = os.open(os.path.join(SHM_DIR, f"{region}.n0"), os.O_RDWR)
        try:
            n0 = self._map_fd(n0_fd, "n0")
            self._segs["n0"] = n0
            self._open_rings(n0, n0_fd, native, machine, spin_us, spin_yield, spin_mode)
        finally:
            os.close(n0_fd)
        self._a_head = self._u64[RING_A[0] // 8]
        self._frags: list[bytes] = []
        self._b_tail = self._u64[RING_B[1] // 8]
        self._u32[OFF_STUB_PID // 4] = os.getpid()
        self.send({"t": "hello", "pid": os.getpid()})

    def _open_rings(self, n0, n0_fd, native, machine, spin_us, spin_yield, spin_mode) -> None:
        """Checks n0's header and sets up the rings: the extension's Link, or the pure-Python path."""
        region = self.region
        hdr = n0.mv
        if bytes(hdr[0:8]) != MAGIC:
            raise RuntimeError(f"{region}.n0 has no tritium header")
        self._u32 = hdr[: len(hdr) // 4 * 4].cast("I")
        self._u64 = hdr[: len(hdr) // 8 * 8].cast("Q")
        if self._u32[OFF_VERSION // 4] != LAYOUT_VERSION:
            raise RuntimeError(f"shm layout version {self._u32[OFF_VERSION // 4]}, expected {LAYOUT_VERSION}")
        self.cap = self._u64[OFF_RING_CAPACITY // 8]
        self._a_data = self._u64[OFF_RING_A_DATA // 8]
        self._b_data = self._u64[OFF_RING_B_DATA // 8]
        if native == "auto":
            native, self.native_reason = load_native()
        else:
            self.native_reason = None if native else "pure-Python path requested"
        self._native = native or None
        if self._native is None:
            # Before any ring access: on a weakly ordered machine the plain path would corrupt.
            check_pure_python_machine(machine, self.native_reason)
            _check_rings(self.cap, self._a_data, self._b_data, n0.size)
        self._link = None
        self._arena_cls = Arena
        if self._native is not None:
            # The extension validates the header again and owns both rings from here on.
            # It maps n0 itself from the descriptor (a mapping of its own, which it unmaps on close).
            self._link = self._native.Link(
                n0_fd, spin_us=float(spin_us), spin_mode=spin_mode, spin_yield=bool(spin_yield), wake_fd=self._wake_fd
            )
            self._arena_cls = self._native.Arena
            self.recv = self._recv_native
            self.send = self._send_native
        # Keep the ctypes object alive: it pins the buffer whose address the futex calls use.
        self._anchor = ctypes.c_char.from_buffer(n0.mm)
        self._base = ctypes.addressof(self._anchor)

    @property
    def is_native(self) -> bool:
        return self._link is not None

    def describe(self) -> str:
        """One line for the verbose log: which hot path and wait policy this stub uses."""
        p = self.policy
        path = "native (_tritium_ipc)" if self._link is not None else f"pure Python ({self.native_reason})"
        segs = "memfd" if self._fdlink is not None else "/dev/shm files"
        return f"IPC path: {path}; spin-mode={p.mode}, spin-us={p.spin_s * 1e6:g}; segments: {segs}"

    # ---- native hot path (the extension does ring, doorbell and wait; msgpack stays here) ----
    def _recv_native(self, timeout: float | None = None) -> dict | None:
        data = self._link.recv(timeout)
        if data is None:
            return None
        return _unpackb(data, raw=False, strict_map_key=False)

    def _send_native(self, msg: dict) -> None:
        if self._closed:
            raise RuntimeError("channel is closed")
        self._link.send(self._encode(msg))

    def _encode(self, msg: dict) -> bytes:
        if self._packing or threading.get_ident() != self._main_ident:
            return _packb(msg, use_bin_type=True)
        self._packing = True
        try:
            return self._packer.pack(msg)
        finally:
            self._packing = False

    # ---- segments ----
    @staticmethod
    def _map(file: str) -> _Segment:
        fd = os.open(os.path.join(SHM_DIR, file), os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        return _Segment(file.rsplit(".", 1)[1], mm)

    @staticmethod
    def _map_fd(fd: int, name: str) -> _Segment:
        """Maps a memfd segment (the caller still owns `fd`)."""
        size = os.fstat(fd).st_size
        return _Segment(name, mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE))

    def _segment(self, seg: str) -> _Segment:
        s = self._segs.get(seg)
        if s is None:
            with self._seg_lock:
                s = self._segs.get(seg)
                if s is None:
                    if not (len(seg) > 1 and seg[0] in "ns" and seg[1:].isdigit()):
                        raise ValueError(f"invalid segment name {seg!r}")
                    if self._fdlink is not None and seg[0] == "n":
                        # Node passes its segments as descriptors (memfd.py), maybe just after the message.
                        fd = self._fdlink.take(seg)
                        try:
                            s = self._map_fd(fd, seg)
                        finally:
                            os.close(fd)
                    else:
                        s = self._map(f"{self.region}.{seg}")
                    self._segs[seg] = s
        return s

    def segment_buffer(self, seg: str) -> memoryview:
        """The whole segment (callers bound their own views, e.g. numpy's frombuffer)."""
        s = self._segs.get(seg)
        return (s if s is not None else self._segment(seg)).mv

    def tensor_view(self, seg: str, off: int, nbytes: int) -> memoryview:
        s = self._segment(seg)
        if off < 0 or nbytes < 0 or off + nbytes > s.size:
            raise ValueError(f"view {seg}[{off}, +{nbytes}) is outside the {s.size}-byte segment")
        return s.mv[off : off + nbytes]

    def _alloc_existing(self, nbytes: int):
        """A block in an output segment there is, or None. Lock held."""
        for s in self._outputs:
            off = s.arena.alloc(nbytes)
            if off >= 0:
                if s.hollow:
                    self._reserve(s, off, nbytes)
                return s.name, off, s.mv[off : off + nbytes]
        return None

    def alloc(self, nbytes: int) -> tuple[str, int, memoryview]:
        """A block in the stub's output arenas; a new s<k> segment is announced with {t:"seg"}.
        When none has room, blocks Node has released meanwhile are taken back first: a long
        decoupled execute would otherwise grow the arena by every response it sends."""
        with self._seg_lock:
            got = self._alloc_existing(nbytes)
        if got is not None:
            return got
        if self.reclaim is not None:
            self.reclaim()
        with self._seg_lock:
            got = self._alloc_existing(nbytes)
            if got is not None:
                return got
            name = f"s{len(self._outputs)}"
            size = max(self.growth_byte_size, _round_up(max(nbytes, 1), SEGMENT_ROUND))
            s = self._create(name, size, nbytes)
            s.arena = self._arena_cls(0, size, BLOCK_ALIGN)
            self._outputs.append(s)
            self._segs[name] = s
            off = s.arena.alloc(nbytes)
        # Before the block is referenced by any message, so Node learns of it in ring order.
        self.send({"t": "seg", "name": name, "size": size})
        return name, off, s.mv[off : off + nbytes]

    def _reserve(self, s: _Segment, off: int, nbytes: int) -> None:
        """Allocates the pages of a block in a hollowed segment, so a full /dev/shm is an error
        here rather than a SIGBUS on first write; on failure the block is freed again."""
        start = off & ~(PAGE_SIZE - 1)
        end = min(s.size, _round_up(off + max(nbytes, 1), PAGE_SIZE))
        if s.fd >= 0:
            self._reserve_memfd(s, start, end - start, nbytes, off)
            return
        path = os.path.join(SHM_DIR, f"{self.region}.{s.name}")
        try:
            fd = os.open(path, os.O_RDWR)
            try:
                os.posix_fallocate(fd, start, end - start)
            finally:
                os.close(fd)
        except OSError as e:
            s.arena.free(off)
            if e.errno == errno.ENOSPC:
                raise MemoryError(
                    _shm_full_text(f"reserve {end - start} bytes of output segment {path}", nbytes)
                ) from e
            raise

    def _reserve_memfd(self, s: _Segment, start: int, length: int, nbytes: int, off: int) -> None:
        what = f"reserve {length} bytes of output segment {self.region}.{s.name}"
        room, _ = memfd.headroom()
        try:
            if length > room:
                raise MemoryError(memfd.memory_full_text(what, nbytes, f"more than the {room} bytes available"))
            try:
                os.posix_fallocate(s.fd, start, length)
            except OSError as e:
                if e.errno in (errno.ENOMEM, errno.ENOSPC):
                    raise MemoryError(memfd.memory_full_text(what, nbytes, errno.errorcode[e.errno])) from e
                raise
        except BaseException:
            s.arena.free(off)
            raise

    def _hollow_if_empty(self, s: _Segment) -> None:
        """A segment grown for a large tensor hands its pages back once nothing is in it, so
        the space returns to /dev/shm after a large request; growth-sized segments stay."""
        if s.size <= self.growth_byte_size or s.arena.blocks_in_use() != 0 or _MADV_REMOVE is None:
            return
        s.mm.madvise(_MADV_REMOVE)
        s.hollow = True

    def _create(self, name: str, size: int, nbytes: int) -> _Segment:
        if self._fdlink is not None and self._memfd_refused is None:
            s = self._create_memfd(name, size, nbytes)
            if s is not None:
                return s
        path = os.path.join(SHM_DIR, f"{self.region}.{name}")
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(fd, size)
            # Reserve tmpfs pages now: a full /dev/shm becomes ENOSPC here, not SIGBUS later.
            os.posix_fallocate(fd, 0, size)
            mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as e:
            os.close(fd)
            os.unlink(path)
            if e.errno == errno.ENOSPC:
                raise MemoryError(_shm_full_text(f"create {size}-byte output segment {path}", nbytes)) from e
            raise
        os.close(fd)
        return _Segment(name, mm)

    def _create_memfd(self, name: str, size: int, nbytes: int) -> _Segment | None:
        """A memfd output segment, passed to Node before any message names it; None when this
        host refuses memfds (then, and from then on, a /dev/shm file)."""
        label = f"{self.region}.{name}"
        what = f"create {size}-byte output segment {label}"
        room, _ = memfd.headroom()
        if size > room:
            # Past the memory limit the kernel OOM-kills instead of failing (memfd.py).
            raise MemoryError(memfd.memory_full_text(what, nbytes, f"more than the {room} bytes available"))
        try:
            fd = memfd.create(label)
        except OSError as e:
            if e.errno in (errno.ENOMEM, errno.EMFILE, errno.ENFILE):
                raise
            self._memfd_refused = str(e)
            return None
        try:
            os.ftruncate(fd, size)
            os.posix_fallocate(fd, 0, size)
            mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            s = _Segment(name, mm, fd)
        except OSError as e:
            os.close(fd)  # the only reference: the pages go with it
            if e.errno in (errno.ENOMEM, errno.ENOSPC):
                raise MemoryError(memfd.memory_full_text(what, nbytes, errno.errorcode[e.errno])) from e
            raise
        try:
            self._fdlink.send(name, fd)
        except BaseException:
            s.close()
            raise
        return s

    def free_many(self, blocks) -> list:
        """Frees [[seg, off], ...] under one lock; returns the errors of blocks it could not free."""
        errors = []
        with self._seg_lock:
            segs = self._segs
            for seg, off in blocks:
                s = segs.get(seg)
                try:
                    if s is None or s.arena is None:
                        raise ValueError(f"free: {seg!r} is not an output segment of this stub")
                    s.arena.free(off)
                    self._hollow_if_empty(s)
                except (ValueError, TypeError) as e:
                    errors.append(e)
        return errors

    def free(self, seg: str, off: int) -> None:
        with self._seg_lock:
            s = self._segs.get(seg)
            if s is None or s.arena is None:
                raise ValueError(f"free: {seg!r} is not an output segment of this stub")
            s.arena.free(off)
            self._hollow_if_empty(s)

    # ---- ring A (Node -> stub), single consumer ----
    def _try_pop(self):
        """One complete message if available, else None (partial fragments are kept)."""
        u32, u64, cap, data = self._u32, self._u64, self.cap, self._a_data
        mv = self._segs["n0"].mv
        tail = u64[RING_A[1] // 8]
        head = self._a_head
        msg = None
        while head < tail:
            if tail - head > cap:
                raise RuntimeError("ring A is corrupt: tail is more than one capacity ahead of head")
            pos = head % cap
            word = u32[(data + pos) // 4]
            if word == WRAP_MARKER:
                if cap - pos > tail - head:
                    raise RuntimeError("ring A is corrupt: wrap marker beyond the published tail")
                head += cap - pos
                continue
            n = word & ~FRAG_MORE
            # Checked like ring_core.h's Consumer: a bad length must not read the arena behind.
            if 4 + n > cap - pos or _round_up(4 + n, RECORD_ALIGN) > tail - head or n > cap // 2:
                raise RuntimeError(f"ring A is corrupt: record length {n} runs past the ring or the published tail")
            start = data + pos + 4
            if word & FRAG_MORE or self._frags:
                self._frags.append(bytes(mv[start : start + n]))
                if not word & FRAG_MORE:
                    msg = msgpack.unpackb(b"".join(self._frags), raw=False, strict_map_key=False)
                    self._frags = []
            else:
                msg = msgpack.unpackb(mv[start : start + n], raw=False, strict_map_key=False)
            head += _round_up(4 + n, RECORD_ALIGN)
            if msg is not None:
                break
        if head != self._a_head:
            self._a_head = head
            u64[RING_A[0] // 8] = head
            # Node queued messages because ring A was full: tell it space was freed. The fence
            # orders our head store before the flag load (Node does the mirror with Atomics).
            _fence()
            if u32[RING_A[4] // 4]:
                u32[RING_A[4] // 4] = 0
                with self._send_lock:
                    self._ring_b_doorbell(force_wake=True)
        return msg

    def recv(self, timeout: float | None = None) -> dict | None:
        u32, u64 = self._u32, self._u64
        db, tail_i = RING_A[2] // 4, RING_A[1] // 8
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            v = u32[db]  # read before checking: any later push changes it, so the wait can't miss
            msg = self._try_pop()
            if msg is not None:
                return msg
            if u64[tail_i] != self._a_head:
                continue  # partial message or new data: keep draining
            # Poll a while only when the policy says it pays (WaitPolicy), then sleep.
            policy = self.policy
            idle_since = time.perf_counter()
            budget = policy.budget(idle_since)
            spin_end = idle_since + budget
            got = False
            relax = os.sched_yield if self.spin_yield else None
            while time.perf_counter() < spin_end:
                if u64[tail_i] != self._a_head:
                    got = True
                    break
                if relax is not None:
                    relax()
            if got:
                policy.observe(time.perf_counter() - idle_since, True)
                continue
            wait = None
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    return None
            if self._closed:
                return None
            u32[RING_A[3] // 4] = 1  # Node wakes us only when this is set (see RingProducer.publish)
            r = futex_wait(self._base + RING_A[2], v, 0.1 if wait is None else min(wait, 0.1))
            u32[RING_A[3] // 4] = 0
            if r != errno.ETIMEDOUT:
                policy.observe(time.perf_counter() - idle_since, budget > 0)

    # ---- ring B (stub -> Node), several producer threads ----
    def _ring_b_doorbell(self, force_wake: bool = False) -> None:
        """Publishes tail, bumps the doorbell, wakes Node if it asked for it. Lock held."""
        u32 = self._u32
        self._u64[RING_B[1] // 8] = self._b_tail
        db = RING_B[2] // 4
        u32[db] = (u32[db] + 1) & 0xFFFFFFFF
        if not force_wake:
            _fence()
            if not u32[RING_B[3] // 4]:
                return  # Node did not ask to be woken
        if self._wake_fd < 0:
            futex_wake(self._base + RING_B[2])  # the test emulator sleeps on the futex
            return
        # No atomic exchange here: a plain read then clear. Every clear is followed by a write,
        # and Node re-checks the ring after asking again, so no wake-up is lost.
        u32[RING_B[3] // 4] = 0
        try:
            os.write(self._wake_fd, _EVENTFD_ONE)
        except BlockingIOError:
            pass  # counter saturated: a wake-up is pending anyway

    def _try_write(self, payload, more: bool) -> bool:
        n = len(payload)
        cap = self.cap
        need = _round_up(4 + n, RECORD_ALIGN)
        free = cap - (self._b_tail - self._u64[RING_B[0] // 8])
        pos = self._b_tail % cap
        to_end = cap - pos
        if need > to_end:
            if to_end + need > free:
                return False
            self._u32[(self._b_data + pos) // 4] = WRAP_MARKER
            self._b_tail += to_end
            pos = 0
        elif need > free:
            return False
        start = self._b_data + pos
        self._u32[start // 4] = (FRAG_MORE if more else 0) | n
        self._segs["n0"].mv[start + 4 : start + 4 + n] = payload
        self._b_tail += need
        return True

    def send(self, msg: dict) -> None:
        data = self._encode(msg)
        max_rec = self.cap // 2 - RECORD_ALIGN  # half the ring always fits once drained
        total = len(data)
        with self._send_lock:
            if self._closed:
                raise RuntimeError("channel is closed")
            off = 0
            view = memoryview(data)
            pause = 0.0
            while True:
                end = min(total, off + max_rec)
                if self._try_write(view[off:end], end < total):
                    off = end
                    pause = 0.0
                    if off >= total:
                        break
                    continue
                # Ring B full: publish what we have so Node drains it, then back off gently.
                self._ring_b_doorbell(force_wake=True)
                if pause:
                    time.sleep(pause)
                pause = min(pause * 2 or 1e-5, 1e-3)
            self._ring_b_doorbell()

    # ---- heartbeat / lifecycle ----
    def start_heartbeat(self, period_s: float = 0.1) -> None:
        if self._hb_thread is not None:
            return
        hb = OFF_HEARTBEAT // 8

        def beat() -> None:
            # time.monotonic() is CLOCK_MONOTONIC, the clock behind Node's process.hrtime().
            while not self._hb_stop.is_set():
                self._u64[hb] = int(time.monotonic() * 1000)
                self._hb_stop.wait(period_s)

        self._u64[hb] = int(time.monotonic() * 1000)
        self._hb_thread = threading.Thread(target=beat, name="tritium-heartbeat", daemon=True)
        self._hb_thread.start()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._hb_stop.set()
        if self._hb_thread is not None:
            self._hb_thread.join(timeout=1.0)
        if self._link is not None:
            self._link.close()
        # Node owns the files and unlinks them; the stub only drops its mappings (a memfd goes
        # with its last descriptor and mapping).
        del self._anchor
        self._u32.release()
        self._u64.release()
        for s in self._segs.values():
            s.close()
        self._segs.clear()
        if self._fdlink is not None:
            self._fdlink.close()
