"""pb_utils.Tensor: construction rules, shared-memory codec, DLPack, BF16."""

import numpy as np
import pytest

import triton_python_backend_utils as pb_utils
from tritium_stub.tensor_codec import decode_input, write_tensor

TME = pb_utils.TritonModelException


def test_constructor_validation():
    with pytest.raises(TypeError):
        pb_utils.Tensor(None, np.zeros(1))
    with pytest.raises(TypeError):
        pb_utils.Tensor("x", None)
    with pytest.raises(TME, match="^Tensor name cannot be an empty string.$"):
        pb_utils.Tensor("", np.zeros(1))
    with pytest.raises(TME, match="^NumPy dtype is not supported.$"):
        pb_utils.Tensor("x", np.array(["unicode"]))
    with pytest.raises(TME, match="^NumPy dtype is not supported.$"):
        pb_utils.Tensor("x", np.zeros(2, dtype=">f4"))


def test_numpy_round_trip_and_contiguity():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = pb_utils.Tensor("x", a.T)
    assert t.as_numpy().flags.c_contiguous and (t.as_numpy() == a.T).all()
    assert t.shape() == [4, 3] and t.name() == "x" and t.is_cpu()
    same = np.arange(3, dtype=np.int64)
    assert pb_utils.Tensor("y", same).as_numpy() is same
    with pytest.raises(TypeError):  # Triton 2.51's binding takes numpy.ndarray only
        pb_utils.Tensor("l", [1, 2])


@pytest.mark.parametrize(
    "dtype",
    [
        np.bool_,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.float16,
        np.float32,
        np.float64,
    ],
)
def test_fixed_dtypes_through_shared_memory(channel, dtype):
    a = (np.arange(6) % 2 if dtype is np.bool_ else np.arange(6)).astype(dtype).reshape(2, 3)
    blocks = []
    desc = write_tensor(channel, pb_utils.Tensor("t", a), blocks)
    assert desc[1:3] == [pb_utils.Tensor("t", a)._dtype, [2, 3]] and desc[5] == a.nbytes
    back = decode_input(channel, desc)
    assert back.as_numpy().dtype == a.dtype and (back.as_numpy() == a).all()


def test_inputs_are_views_over_shared_memory(channel):
    desc = channel.put_input("x", np.arange(4, dtype=np.float32))
    arr = decode_input(channel, desc).as_numpy()
    channel.segments["n0"][desc[4] : desc[4] + 4] = np.float32(42).tobytes()
    assert arr[0] == 42  # no copy was made


def test_bytes_round_trip(channel):
    values = np.array([["héllo".encode(), "str"], [7, b""]], dtype=np.object_)
    blocks = []
    desc = write_tensor(channel, pb_utils.Tensor("s", values), blocks)
    assert desc[1] == "BYTES" and desc[2] == [2, 2] and desc[5] == 4 * 4 + 6 + 3 + 1 + 0
    back = decode_input(channel, desc).as_numpy()
    assert back.dtype == np.object_ and back.shape == (2, 2)
    assert back.tolist() == [["héllo".encode(), b"str"], [b"7", b""]]
    fixed = np.array([b"a\x00", b"bc"], dtype="S3")  # numpy strips trailing NULs
    assert decode_input(channel, write_tensor(channel, pb_utils.Tensor("s", fixed), blocks)).as_numpy().tolist() == [
        b"a",
        b"bc",
    ]


def test_empty_tensors(channel):
    blocks = []
    desc = write_tensor(channel, pb_utils.Tensor("e", np.zeros((0, 3), np.float32)), blocks)
    assert desc[5] == 0 and len(blocks) == 1
    assert decode_input(channel, desc).as_numpy().shape == (0, 3)
    desc = write_tensor(channel, pb_utils.Tensor("e", np.array([], dtype=np.object_)), blocks)
    assert desc[5] == 0 and decode_input(channel, desc).as_numpy().shape == (0,)


def test_dlpack_round_trip():
    t = pb_utils.Tensor("x", np.arange(6, dtype=np.float32).reshape(2, 3))
    assert (np.from_dlpack(t) == t.as_numpy()).all()
    assert t.__dlpack_device__() == (1, 0)
    back = pb_utils.Tensor.from_dlpack("y", t.to_dlpack())
    assert back.name() == "y" and (back.as_numpy() == t.as_numpy()).all()
    from_obj = pb_utils.Tensor.from_dlpack("z", np.arange(3))
    assert from_obj.as_numpy().tolist() == [0, 1, 2]


def test_dlpack_errors():
    with pytest.raises(TME, match="^DLPack does not have support for string tensors.$"):
        pb_utils.Tensor("s", np.array([b"a"], dtype=np.object_)).to_dlpack()
    not_dlpack = (
        "Provided tensor is not supported. Tensor must be a DLPack capsule         or "
        "have `__dlpack__` and `__dlpack_device__` attributes"
    )
    for obj in ([1, 2], None, 5, "abc"):
        with pytest.raises(TME) as e:
            pb_utils.Tensor.from_dlpack("x", obj)
        assert str(e.value) == not_dlpack
    with pytest.raises(TME, match="^DLPack tensor is not contiguous"):
        pb_utils.Tensor.from_dlpack("x", np.arange(10)[::2])
    with pytest.raises(TypeError):
        pb_utils.Tensor.from_dlpack(None, np.arange(2))


def test_bf16_is_raw_and_travels_by_dlpack(channel):
    from tritium_stub.tensor import Tensor

    words = np.array([[0x3F80, 0x4000]], dtype=np.uint16)  # 1.0, 2.0 in bfloat16
    bf = Tensor._wrap("b", "BF16", words)
    with pytest.raises(
        TME,
        match="^Tensor dtype is BF16 and cannot be converted to NumPy. Use "
        "to_dlpack\\(\\) and from_dlpack\\(\\) instead.$",
    ):
        bf.as_numpy()
    again = pb_utils.Tensor.from_dlpack("c", bf.to_dlpack())
    assert again._dtype == "BF16" and again.shape() == [1, 2] and (again._array == words).all()
    blocks = []
    desc = write_tensor(channel, again, blocks)
    assert desc[1] == "BF16" and desc[5] == 4
    assert (decode_input(channel, desc)._array == words).all()


def test_reexport_of_an_imported_tensor():
    # numpy marks from_dlpack arrays read-only; exporting them again must still work.
    imported = pb_utils.Tensor.from_dlpack("a", np.zeros(2))
    again = pb_utils.Tensor.from_dlpack("b", imported.to_dlpack())
    assert again.as_numpy().tolist() == [0.0, 0.0]
