"""The stub's native msgpack decoder (_tritium_ipc.unpack, native/src/py_unpack.h) against
msgpack.unpackb(raw=False, strict_map_key=False): the same objects for every value it decodes,
and for everything else an error, after which Channel.recv hands the bytes to msgpack (that
fallback: test_ipc_channel.py)."""

import random

import msgpack
import pytest

from tritium_stub import ipc

NATIVE, WHY_NOT = ipc.load_native()
pytestmark = pytest.mark.skipif(NATIVE is None, reason=f"_tritium_ipc unavailable: {WHY_NOT}")


def reference(data):
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def same(a, b):
    """Equal, and of the same types all the way down (1 == 1.0 == True would hide a wrong type)."""
    return repr(a) == repr(b) and type(a) is type(b)


def random_value(rng, depth=0):
    kind = rng.randrange(11 if depth < 4 else 8)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:  # every integer width, signed and unsigned, and their edges
        return rng.choice(
            [
                rng.randint(-(2**63), 2**64 - 1),
                rng.randint(-40, 300),
                rng.choice([0, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1]),
                rng.choice([-1, -32, -33, -128, -129, -32768, -32769, -(2**31), -(2**31) - 1, -(2**63)]),
            ]
        )
    if kind == 2:
        return rng.choice([rng.random() * 10 ** rng.randint(-30, 30), float("inf"), -0.0, 1e308])
    if kind == 3:  # str of each header width, ASCII and not
        unit = rng.choice(["x", "é", "€", "出", "\x00"])
        return unit * rng.choice([0, 1, 31, 32, 255, 256] + ([70000] if depth == 0 else []))
    if kind == 4:
        return rng.randbytes(rng.choice([0, 1, 255, 256, 300] + ([70000] if depth == 0 else [])))
    if kind == 5:
        return "".join(rng.choice("abcé€\x00z") for _ in range(rng.randrange(30)))
    if kind == 6:
        return rng.choice(["t", "exec", "id", "reqs", "rel", "n0", "FP32"])
    if kind == 7:
        return rng.randrange(1000)
    # Up to 16 elements (array16 and map16 headers) near the top, few below.
    sizes = [0, 1, 15, 16, 17] if depth < 2 else [0, 1, 3]
    if kind in (8, 9):
        return [random_value(rng, depth + 1) for _ in range(rng.choice(sizes))]
    keys = [
        "t",
        "id",
        "reqs",
        "k" * rng.randrange(40),  # past the key table's length limit too
        "é" * rng.randrange(12),
        rng.randint(-5, 5),
        b"raw",
        None,
        1.5,
        True,
    ]
    return {rng.choice(keys): random_value(rng, depth + 1) for _ in range(rng.choice(sizes))}


def test_decodes_what_msgpack_decodes_to_the_same_objects():
    rng = random.Random(20261201)
    for _ in range(3000):
        value = random_value(rng)
        for single_float in (False, True):
            try:
                data = msgpack.packb(value, use_bin_type=True, use_single_float=single_float)
            except OverflowError:  # a double beyond float32's range
                continue
            got, want = NATIVE.unpack(data), reference(data)
            assert same(got, want), (value, got, want)


def test_short_values_that_repeat_or_never_repeat():
    # Short str values come from a cache replaced on collisions: a stream of unique ids among
    # repeated datatypes must decode each one as sent.
    for i in range(5000):
        value = {"t": "exec", "id": f"r{i}", "inputs": [["INPUT0", "FP32", [i], "n0", i, 4]], "x": "é" * (i % 9)}
        data = msgpack.packb(value, use_bin_type=True)
        assert same(NATIVE.unpack(data), value)


def test_32_bit_array_and_map_headers():
    for value in (list(range(70000)), {i: -i for i in range(70000)}):
        data = msgpack.packb(value, use_bin_type=True)
        assert same(NATIVE.unpack(data), reference(data))


def test_more_keys_than_the_table_holds_still_decode():
    # 2000 distinct keys: the table fills, later keys are made as msgpack makes them.
    for i in range(20):
        value = {f"key{i}-{j}": j for j in range(100)}
        data = msgpack.packb(value, use_bin_type=True)
        assert same(NATIVE.unpack(data), reference(data))
    data = msgpack.packb({"t": "exec", "id": 1}, use_bin_type=True)
    assert same(NATIVE.unpack(data), reference(data))


@pytest.mark.parametrize(
    "data",
    [
        b"",  # nothing
        b"\x92\x01",  # an array missing an element
        b"\xa5abc",  # a str shorter than its header
        b"\xdb\xff\xff\xff\xff",  # a str32 claiming 4 GiB
        b"\xdd\xff\xff\xff\xff",  # an array32 claiming 4 G elements
        b"\x01\x02",  # bytes after the object
        b"\xc1",  # the reserved byte
        b"\xd4\x01\x02",  # ext types are left to msgpack
        b"\xc7\x01\x05x",
        b"\xa2\xff\xfe",  # invalid UTF-8
        b"\x81\x91\x01\x02",  # an unhashable (list) key
        b"\x91" * 40 + b"\x90",  # nested deeper than the decoder goes
    ],
)
def test_leaves_the_rest_to_msgpack_with_an_error(data):
    with pytest.raises((ValueError, TypeError)):
        NATIVE.unpack(data)


def test_unpack_takes_bytes_only():
    with pytest.raises(TypeError):
        NATIVE.unpack(bytearray(b"\x90"))
