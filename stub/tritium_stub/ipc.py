"""Stub side of the shared-memory link with the Node server (docs/ipc.md).

The rings, their waits and the output arenas are the native module `_tritium_ipc`
(native/src/python_ipc.cc over native/src/ring_core.h, wait_core.h and arena_core.h: the one
implementation of the protocol, which the Node addon compiles too). It is built once for
CPython's stable ABI and loads in every interpreter from 3.9 on; a stub that cannot load it
stops at start-up with the reason and how to build it. What stays here is what is not the ring
algorithm: the segments (memfds passed by Node, memfd.py, or files in /dev/shm), msgpack, the
header fields this side writes (pid, heartbeat) and the arena bookkeeping per segment.
"""

from __future__ import annotations

import errno
import functools
import mmap
import os
import sys
import threading
import time

import msgpack

from . import memfd
from .messages import HELLO, SEG

_packb = msgpack.packb
# Node's messages as msgpack decodes them: the fallback of the native decoder, and the decoder
# where the extension predates it.
_msgpack_unpack = functools.partial(msgpack.unpackb, raw=False, strict_map_key=False)

SHM_DIR = "/dev/shm"

# ---- native hot path ----
NATIVE_DIR_ENV = "TRITIUM_STUB_NATIVE_DIR"  # where _tritium_ipc*.so lives (tests, packaging)
_DEFAULT_NATIVE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "native", "build", "python")


_loaded: dict = {}  # path -> module, what load_extension imported


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
        # Imported once per file: the layout constants below and every Channel use the module.
        if path in _loaded:
            return _loaded[path], None
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except Exception as e:  # ImportError, or a symbol/ABI mismatch
            return None, f"cannot import {path}: {e}"
        _loaded[path] = module
        return module, None
    return None, (
        f"no {name} module for this interpreter in {folder} "
        f"(build it with `npm run build:native`, TRITIUM_PYTHON={sys.executable})"
    )


def load_native():
    """(module, None) when the native IPC module loads here, else (None, reason)."""
    module, why = load_extension("_tritium_ipc")
    if module is not None and not hasattr(module, "LAYOUT_VERSION"):
        return None, f"{module.__file__} predates native/src/layout.h's table: rebuild it with `npm run build:native`"
    return module, why


# ---- layout (native/src/layout.h) ----
# The header offsets and ring constants come from the extension, built from the same layout.h
# as Node's addon, so neither side spells them. Without the extension they are None: nothing
# runs then (Channel refuses to start and says why).
_LAYOUT = load_native()[0]


def _const(name: str):
    return getattr(_LAYOUT, name, None)


MAGIC = _const("MAGIC")
LAYOUT_VERSION = _const("LAYOUT_VERSION")
HEADER_SIZE = _const("HEADER_SIZE")
MIN_RING_BYTES = _const("MIN_RING_BYTES")
# Outputs up to this size travel inside a response message (tensor_codec.write_output); an
# extension built before the constant existed reads as 0: only empty outputs go inline then.
INLINE_OUTPUT_BYTES = _const("INLINE_OUTPUT_BYTES") or 0
OFF_VERSION = _const("OFF_VERSION")
OFF_HEADER_SIZE = _const("OFF_HEADER_SIZE")
OFF_RING_CAPACITY = _const("OFF_RING_CAPACITY")
OFF_RING_A_DATA = _const("OFF_RING_A_DATA")
OFF_RING_B_DATA = _const("OFF_RING_B_DATA")
OFF_HEARTBEAT = _const("OFF_HEARTBEAT")
OFF_STUB_PID = _const("OFF_STUB_PID")
# A ring's control words: head, tail, doorbell, sleeping, producer_waiting.
_RING_WORDS = ("HEAD", "TAIL", "DOORBELL", "SLEEPING", "PRODUCER_WAITING")
RING_A = tuple(_const(f"RING_A_{w}") for w in _RING_WORDS)  # Node -> stub
RING_B = tuple(_const(f"RING_B_{w}") for w in _RING_WORDS)  # stub -> Node
FRAG_MORE = _const("FRAG_MORE")
WRAP_MARKER = _const("WRAP_MARKER")
RECORD_ALIGN = _const("RECORD_ALIGN")
BLOCK_ALIGN = _const("BLOCK_ALIGN")
SEGMENT_ROUND = _const("SEGMENT_ROUND")


SPIN_MODES = ("adaptive", "always", "never")


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


class _Segment:
    __slots__ = ("name", "mm", "mv", "size", "arena", "hollow", "fd")

    def __init__(self, name: str, mm: mmap.mmap, fd: int = -1):
        self.name = name
        self.mm = mm
        self.mv = memoryview(mm)
        self.size = len(mm)
        self.arena = None  # _tritium_ipc.Arena of an output segment
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
        wake_fd: int | None = None,
        segment_fds: tuple[int, int] | None = None,
        native=None,
    ):
        """wake_fd: Node's wake eventfd (docs/ipc.md, "Waking Node"); None: ring B's consumer
        sleeps on its futex and is woken with FUTEX_WAKE (the test stand-in for Node).
        segment_fds: (n0's memfd, the segment socket) inherited from Node (memfd.py); None: the
        region's segments are files in /dev/shm named after `region`.
        native: the _tritium_ipc module to use (default: load_native(); for tests)."""
        if "/" in region or not region:
            raise ValueError(f"invalid region name {region!r}")
        if spin_mode not in SPIN_MODES:
            raise ValueError(f"spin_mode must be one of {SPIN_MODES}, got {spin_mode!r}")
        if native is None:
            native, why = load_native()
            if native is None:
                raise RuntimeError(f"the stub needs its native IPC module _tritium_ipc: {why}")
        self.region = region
        self.growth_byte_size = max(int(growth_byte_size), SEGMENT_ROUND)
        self._segs: dict[str, _Segment] = {}
        self._outputs: list[_Segment] = []
        self._seg_lock = threading.Lock()  # alloc/free/lazy maps may run on model threads
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
        self._arena_cls = native.Arena
        # Node's messages are mostly map keys, which the native decoder does not make anew for
        # every message (py_unpack.h); a module built before it existed leaves them to msgpack.
        self._unpack = getattr(native, "unpack", None) or _msgpack_unpack

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
            hdr = n0.mv
            if bytes(hdr[0:8]) != MAGIC:
                raise RuntimeError(f"{region}.n0 has no tritium header")
            # The header words this side writes (pid, heartbeat); the rings are the Link's.
            self._u32 = hdr[: len(hdr) // 4 * 4].cast("I")
            self._u64 = hdr[: len(hdr) // 8 * 8].cast("Q")
            # The Link checks the header (magic, version, ring geometry) and owns both rings. It
            # maps n0 itself from the descriptor (a mapping of its own, unmapped on close).
            self._link = native.Link(
                n0_fd,
                spin_us=float(spin_us),
                spin_mode=spin_mode,
                spin_yield=bool(spin_yield),
                wake_fd=-1 if wake_fd is None else int(wake_fd),
            )
        finally:
            os.close(n0_fd)
        self._u32[OFF_STUB_PID // 4] = os.getpid()
        self.send({"t": HELLO, "pid": os.getpid()})

    def describe(self) -> str:
        """One line for the verbose log: the wait policy and where the segments live."""
        mode, spin_us, _ = self._link.policy()
        segs = "memfd" if self._fdlink is not None else "/dev/shm files"
        return f"IPC path: native (_tritium_ipc); spin-mode={mode}, spin-us={spin_us:g}; segments: {segs}"

    def recv(self, timeout: float | None = None) -> dict | None:
        """The next message of ring A, or None after `timeout` seconds (None: wait)."""
        data = self._link.recv(timeout)
        if data is None:
            return None
        try:
            return self._unpack(data)
        except Exception:  # what the native decoder leaves to msgpack: it decodes it or says why
            return _msgpack_unpack(data)

    def send(self, msg: dict) -> None:
        """One message onto ring B (thread-safe; waits while the ring is full)."""
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
        self.send({"t": SEG, "name": name, "size": size})
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

    # ---- heartbeat / lifecycle ----
    def start_heartbeat(self, period_s: float = 0.1, on_beat=None) -> None:
        """Writes the heartbeat word every `period_s` from a thread of its own (it needs the GIL,
        so a stub frozen in native code stops beating); `on_beat()` runs on it after each beat."""
        if self._hb_thread is not None:
            return
        hb = OFF_HEARTBEAT // 8

        def beat() -> None:
            # time.monotonic() is CLOCK_MONOTONIC, the clock behind Node's process.hrtime().
            while not self._hb_stop.is_set():
                self._u64[hb] = int(time.monotonic() * 1000)
                if on_beat is not None:
                    on_beat()
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
        self._link.close()
        # Node owns the files and unlinks them; the stub only drops its mappings (a memfd goes
        # with its last descriptor and mapping).
        self._u32.release()
        self._u64.release()
        for s in self._segs.values():
            s.close()
        self._segs.clear()
        if self._fdlink is not None:
            self._fdlink.close()
