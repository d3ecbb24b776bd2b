"""Tensors <-> shared memory.

A descriptor is `[name, datatype, shape, segment, offset, nbytes]` (docs/ipc.md). Inputs
become numpy views over Node's block (no copy); BYTES inputs are parsed into an object array
of `bytes`, which copies by nature. Outputs are written once into a block the stub
allocates; BYTES straight into the block as 4-byte-LE length-prefixed elements. A response's
output of at most INLINE_OUTPUT_BYTES travels in the message instead, as the inline
descriptor `[name, datatype, shape, data]`: no block to allocate, for Node to hand back, or
for the stub to free.
"""

import struct

import numpy as np

from .dtypes import FIXED
from .ipc import INLINE_OUTPUT_BYTES
from .objects import NATIVE, register
from .tensor import Tensor

_U32 = struct.Struct("<I")
_unpack_u32 = _U32.unpack_from
_pack_u32 = _U32.pack_into


def parse_bytes(buf, shape):
    """Object array of `bytes` from a length-prefixed BYTES buffer."""
    count = 1
    for d in shape:
        count *= d
    items = [None] * count
    pos = 0
    for i in range(count):
        (n,) = _unpack_u32(buf, pos)
        pos += 4
        items[i] = buf[pos : pos + n]
        pos += n
    out = np.empty(count, dtype=np.object_)
    out[:] = items
    return out.reshape(shape)


def block_array(channel, dtype, shape, segment, offset, nbytes):
    """(array, owner) for a tensor in a block: a numpy view of shared memory for fixed-size
    types, with `owner` the array that holds the view (views of `array` keep it alive); a parsed
    copy for BYTES and an empty array for zero bytes, with `owner` None (the block is not used)."""
    if nbytes == 0:
        # Zero elements: no block to map (BYTES elements take at least 4 bytes each).
        return np.empty(shape, dtype=np.object_ if dtype == "BYTES" else FIXED[dtype]), None
    if dtype == "BYTES":
        return parse_bytes(bytes(channel.tensor_view(segment, offset, nbytes)), shape), None
    # One numpy call over the whole segment: no intermediate memoryview slice. numpy
    # checks offset + count against the segment, so a bad descriptor raises ValueError.
    dt = FIXED[dtype]
    count = nbytes // dt.itemsize
    owner = np.frombuffer(channel.segment_buffer(segment), dtype=dt, count=count, offset=offset)
    if len(shape) != 1 or shape[0] != count:
        return owner.reshape(shape), owner
    return owner, owner


def decode_input(channel, desc):
    name, dtype, shape, segment, offset, nbytes = desc
    return Tensor._wrap(name, dtype, block_array(channel, dtype, shape, segment, offset, nbytes)[0])


def bytes_items(array):
    """The elements of a BYTES array as `bytes`, in C order (Triton's conversion rules)."""
    items = array.reshape(-1).tolist()
    if array.dtype.kind == "S":
        return items  # numpy already gives bytes with trailing NULs stripped
    return [x if isinstance(x, bytes) else str(x).encode("utf-8") for x in items]


def _bytes_size(items):
    nbytes = 4 * len(items)
    for b in items:
        nbytes += len(b)
    return nbytes


def _pack_items(view, items):
    """BYTES elements into `view` as 4-byte-LE length-prefixed bytes."""
    pos = 0
    for b in items:
        n = len(b)
        _pack_u32(view, pos, n)
        pos += 4
        view[pos : pos + n] = b
        pos += n


def write_tensor(channel, tensor, blocks, items=None):
    """Copy one tensor into a new output block; returns its descriptor.

    The block is appended to `blocks` so a caller failing half-way can free what it took.
    `items`: a BYTES tensor's elements when the caller has them already (bytes_items).
    """
    array = tensor._array
    if tensor._dtype == "BYTES":
        if items is None:
            items = bytes_items(array)
        nbytes = _bytes_size(items)
        segment, offset, view = channel.alloc(nbytes)  # a real block even for 0 bytes
        blocks.append((segment, offset))
        _pack_items(view, items)
    else:
        nbytes = array.nbytes
        segment, offset, view = channel.alloc(nbytes)
        blocks.append((segment, offset))
        if nbytes:
            if array.flags.c_contiguous:
                view[:] = array.data.cast("B")  # one memcpy, ~4x cheaper than numpy's copyto
            else:
                np.frombuffer(view, dtype=array.dtype).reshape(array.shape)[...] = array
    return [tensor._name, tensor._dtype, list(array.shape), segment, offset, nbytes]


def write_output(channel, tensor, blocks):
    """One output of a response: its inline descriptor `[name, datatype, shape, data]` when it
    has at most INLINE_OUTPUT_BYTES, else write_tensor's block."""
    array = tensor._array
    if tensor._dtype == "BYTES":
        items = bytes_items(array)
        nbytes = _bytes_size(items)
        if nbytes > INLINE_OUTPUT_BYTES:
            return write_tensor(channel, tensor, blocks, items)
        data = bytearray(nbytes)
        _pack_items(data, items)
        return [tensor._name, "BYTES", list(array.shape), bytes(data)]
    if array.nbytes > INLINE_OUTPUT_BYTES:
        return write_tensor(channel, tensor, blocks)
    return [tensor._name, tensor._dtype, list(array.shape), array.tobytes()]


def encode_response(channel, response, requested, blocks):
    """The `{outs, err?, params?}` map of one response, outputs pruned to `requested`."""
    error = response._error
    if error is not None:
        out = {"outs": [], "err": [int(error._code), error._message]}
    elif _encode_outputs is not None:
        out = {"outs": _encode_outputs(channel, response._outputs, requested, blocks)}
    else:
        out = {"outs": [write_output(channel, t, blocks) for t in response._outputs if t._name in requested]}
    if response._params is not None:
        out["params"] = response._params
    return out


# With the C objects: the same loop as above in C, write_output's common case (a fixed-size,
# C-contiguous array: inline, or one memcpy into a block) included; it calls write_output for
# every other tensor.
_encode_outputs = None if NATIVE is None else NATIVE.encode_outputs
register(decode_input=decode_input, write_output=write_output)


def free_blocks(channel, blocks):
    for segment, offset in blocks:
        try:
            channel.free(segment, offset)
        except Exception:  # freeing is best effort on an error path already being reported
            pass
