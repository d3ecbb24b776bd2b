"""The stub's floor: the least a Python process must do per request on tritium's shared-memory link.

Usage: stub_floor.py <region> <add_sub|identity_fp32>     (started by bench/floor/ipc-driver.mjs)

Speaks the stub's protocol (docs/ipc.md) through the same native extension the stub uses
(`_tritium_ipc`, loaded by tritium_stub.ipc.load_native: ring A receive with its doorbell wait,
ring B send with its wake of Node's eventfd, the C++ output arena) and the same msgpack, and does
the model's numpy work as the vs-triton model.py files write it. What it leaves out is the stub's
Python object layer: no InferenceRequest, Tensor or InferenceResponse objects, no response
sender, no inbox, no BLS or cancellation bookkeeping, no heartbeat thread. Per `exec`: free the
released output blocks, view each input in Node's segment with numpy, compute, put each output
in the message when it has at most INLINE_OUTPUT_BYTES (as tensor_codec.write_output), else copy
it into a block of its own arena (one memcpy, as tensor_codec.write_tensor), answer `exec_done`.
"""

import mmap
import os
import sys

import msgpack
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "stub"))

from tritium_stub.ipc import BLOCK_ALIGN, INLINE_OUTPUT_BYTES, SHM_DIR, load_native  # noqa: E402

# The size of each output segment the stub creates (shm-growth-byte-size, default 1 MiB).
OUTPUT_SEGMENT = 1 << 20


def map_segment(path, create_size=0):
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create_size else 0)
    fd = os.open(path, flags, 0o600)
    try:
        if create_size:
            os.ftruncate(fd, create_size)
            os.posix_fallocate(fd, 0, create_size)
        return mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)


def compute(model, inputs):
    """(name, array) of each output from the input arrays, as the model.py of bench/models/vs-triton."""
    if model == "add_sub":
        in0, in1 = inputs
        return (("OUTPUT0", (in0 + in1).astype(np.float32)), ("OUTPUT1", (in0 - in1).astype(np.float32)))
    return (("OUTPUT0", inputs[0]),)


def main():
    region, model = sys.argv[1], sys.argv[2]
    native, why_not = load_native()
    if native is None:
        raise SystemExit(f"stub_floor: the native extension is needed: {why_not}")
    n0_path = os.path.join(SHM_DIR, f"{region}.n0")
    n0 = map_segment(n0_path)
    n0_fd = os.open(n0_path, os.O_RDWR)
    try:  # the Link maps n0 itself from the descriptor
        link = native.Link(
            n0_fd, spin_us=50.0, spin_mode="adaptive", spin_yield=False, wake_fd=int(os.environ["TRITIUM_STUB_WAKE_FD"])
        )
    finally:
        os.close(n0_fd)
    s0 = map_segment(os.path.join(SHM_DIR, f"{region}.s0"), OUTPUT_SEGMENT)
    arena = native.Arena(0, OUTPUT_SEGMENT, BLOCK_ALIGN)
    segments = {"n0": memoryview(n0), "s0": memoryview(s0)}
    out_view = segments["s0"]
    pack = msgpack.Packer(use_bin_type=True).pack
    unpackb = msgpack.unpackb
    frombuffer, f32 = np.frombuffer, np.float32
    recv, send, alloc, free = link.recv, link.send, arena.alloc, arena.free
    send(pack({"t": "hello", "pid": os.getpid()}))
    send(pack({"t": "seg", "name": "s0", "size": OUTPUT_SEGMENT}))
    parent = os.getppid()
    while True:
        data = recv(1.0)
        if data is None:
            if os.getppid() != parent:
                break
            continue
        msg = unpackb(data, raw=False, strict_map_key=False)
        kind = msg["t"]
        if kind == "exec":
            for _seg, off in msg.get("rel") or ():
                free(off)
            resps = []
            for req in msg["reqs"]:
                inputs = [frombuffer(segments[d[3]], dtype=f32, count=d[5] // 4, offset=d[4]) for d in req["inputs"]]
                outs = []
                for name, array in compute(model, inputs):
                    nbytes = array.nbytes
                    if nbytes <= INLINE_OUTPUT_BYTES:
                        outs.append([name, "FP32", list(array.shape), array.tobytes()])
                        continue
                    off = alloc(nbytes)
                    out_view[off : off + nbytes] = array.data.cast("B")
                    outs.append([name, "FP32", list(array.shape), "s0", off, nbytes])
                resps.append({"outs": outs})
            inputs = None
            send(pack({"t": "exec_done", "id": msg["id"], "resps": resps}))
        elif kind == "release":
            for _seg, off in msg["blocks"]:
                free(off)
        elif kind == "fin":
            send(pack({"t": "fin_done"}))
            break
    link.close()


if __name__ == "__main__":
    main()
