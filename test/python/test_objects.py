"""The two implementations of the stub's hot objects (tritium_stub/objects.py): the C types of
_tritium_ipc (native/src/py_objects.cc) and the pure-Python classes.

This file runs in the implementation the environment selects (TRITIUM_STUB_OBJECTS; the C one
by default where the extension has it). `test_conformance_suites_with_the_other_objects` runs the
stub's conformance suites, this file included, again in a pytest subprocess with the other one,
so `pytest test/python` checks both.
"""

import os
import subprocess
import sys
import weakref

import numpy as np
import pytest

import triton_python_backend_utils as pb_utils
from conftest import make_request
from tritium_stub import objects
from tritium_stub.dtypes import FIXED
from tritium_stub.ipc import INLINE_OUTPUT_BYTES
from tritium_stub.request import InferenceRequest, received
from tritium_stub.response import InferenceResponse, PyInferenceResponse
from tritium_stub.result import build_resps
from tritium_stub.tensor import PyTensor, Tensor
from tritium_stub.tensor_codec import decode_input, encode_response

TME = pb_utils.TritonModelException
HERE = os.path.dirname(os.path.abspath(__file__))

# The suites that exercise Tensor, InferenceRequest, InferenceResponse, the sender, execute's
# results and whole stubs (test_stub_process starts real stub processes, which inherit the choice).
CONFORMANCE = (
    "test_objects.py",
    "test_tensor.py",
    "test_request.py",
    "test_execute_results.py",
    "test_pb_utils.py",
    "test_sender.py",
    "test_lifecycle.py",
    "test_stub_process.py",
    "test_readiness.py",
    "test_dlpack_gpu.py",
)


def test_the_choice_follows_the_environment():
    assert objects.IMPL in ("c", "python")
    assert (objects.NATIVE is None) == (objects.IMPL == "python")
    want = os.environ.get(objects.OBJECTS_ENV, "c").strip().lower()
    if want == "python":
        assert objects.IMPL == "python" and objects.WHY_NOT == "TRITIUM_STUB_OBJECTS=python"
        assert Tensor is PyTensor and InferenceResponse is PyInferenceResponse
    elif objects.IMPL == "c":
        assert issubclass(Tensor, objects.NATIVE.TensorBase)
        assert issubclass(InferenceRequest, objects.NATIVE.RequestBase)
        assert issubclass(InferenceResponse, objects.NATIVE.ResponseBase)
    assert objects.choose({objects.OBJECTS_ENV: "python"}) == (None, "TRITIUM_STUB_OBJECTS=python")
    # The classes are the ones pb_utils hands to models, under Triton's module name.
    assert pb_utils.Tensor is Tensor and pb_utils.InferenceResponse is InferenceResponse
    assert pb_utils.InferenceRequest is InferenceRequest
    for cls in (Tensor, InferenceRequest, InferenceResponse):
        assert cls.__module__ == "c_python_backend_utils"
    assert Tensor.__name__ == "Tensor" and InferenceResponse.__name__ == "InferenceResponse"


@pytest.mark.skipif(os.environ.get("TRITIUM_OBJECTS_SUBRUN") == "1", reason="already the second run")
def test_conformance_suites_with_the_other_objects():
    other = "python" if objects.IMPL == "c" else "c"
    if other == "c":
        native, why = objects.choose({objects.OBJECTS_ENV: "c"})
        if native is None:
            pytest.skip(f"no C objects here: {why}")
    env = dict(os.environ, TRITIUM_STUB_OBJECTS=other, TRITIUM_OBJECTS_SUBRUN="1")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *CONFORMANCE],
        cwd=HERE,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, f"with TRITIUM_STUB_OBJECTS={other}:\n{r.stdout[-6000:]}\n{r.stderr[-2000:]}"


@pytest.mark.parametrize("datatype", sorted(FIXED))
@pytest.mark.parametrize("shape", [[6], [2, 3], [1, 2, 3], []])
def test_received_inputs_match_the_python_decode(channel, fresh_state, datatype, shape):
    count = int(np.prod(shape)) if shape else 1
    value = (np.arange(count) % 2).astype(FIXED[datatype]).reshape(shape)
    m = make_request(channel, 1, outs=("OUTPUT0",))
    desc = channel.put_input("IN", value, datatype)
    desc[2] = list(shape)
    m["inputs"] = [desc, channel.put_input("B", np.array([b"ab", b""], dtype=np.object_))]
    (request,) = received([m])
    request._slot.closed = True
    got, text = request.inputs()
    assert request.inputs() is request.inputs()
    want = decode_input(channel, desc)
    assert type(got) is Tensor and got.name() == "IN" and got._dtype == datatype
    a, b = got._array, want._array
    assert a.dtype == b.dtype and a.shape == b.shape and (a == b).all()
    assert a.flags.c_contiguous and a.flags.writeable == b.flags.writeable and a.flags.aligned == b.flags.aligned
    assert got.shape() == list(shape)
    # A view over Node's block, not a copy.
    off = desc[4]
    channel.segments["n0"][off : off + a.itemsize] = b"\x01" * a.itemsize
    assert a.reshape(-1)[:1].tobytes() == b"\x01" * a.itemsize
    assert text.as_numpy().tolist() == [b"ab", b""]
    if datatype == "BF16":
        with pytest.raises(TME, match="^Tensor dtype is BF16 and cannot be converted to NumPy"):
            got.as_numpy()


def test_input_arrays_hold_the_segment(channel, fresh_state):
    m = make_request(channel, 1, inputs={"IN": np.arange(4, dtype=np.float32)})
    (request,) = received([m])
    request._slot.closed = True
    mv = memoryview(channel.segments["n0"])
    channel.segment_buffer = lambda seg: mv
    array = request.inputs()[0].as_numpy()
    mv.release()
    if objects.IMPL == "c":
        # The array holds a view of the segment's buffer (its mmap in a real Channel), so
        # Channel.close() cannot unmap it under the array: mmap.close() raises BufferError,
        # which _Segment.close expects, as resizing this bytearray does.
        with pytest.raises(BufferError):
            channel.segments["n0"].extend(b"x")
    assert array.tolist() == [0, 1, 2, 3]
    del array, request
    channel.segments["n0"].extend(b"x")


@pytest.mark.parametrize(
    "bad",
    [
        lambda d: d.__setitem__(5, d[5] + 4),  # nbytes does not match the shape
        lambda d: d.__setitem__(4, 1 << 40),  # past the segment
        lambda d: d.__setitem__(3, "n9"),  # a segment that does not exist
        lambda d: d.__setitem__(1, "FP77"),  # no such datatype
        lambda d: d.__setitem__(2, [2, "x"]),  # a shape that is not numbers
    ],
)
def test_bad_descriptors_fail_as_in_python(channel, fresh_state, bad):
    m = make_request(channel, 1, inputs={"IN": np.arange(4, dtype=np.float32)})
    bad(m["inputs"][0])
    with pytest.raises(Exception) as python_error:
        decode_input(channel, m["inputs"][0])
    (request,) = received([m])
    request._slot.closed = True
    with pytest.raises(type(python_error.value)) as error:
        request.inputs()
    assert str(error.value) == str(python_error.value)


def test_received_request_fields(channel, fresh_state):
    fresh_state.name = "m_0"
    fresh_state.config_outputs = frozenset({"A", "B"})
    m = make_request(channel, 7, id="r", corr="c", flags=3, timeout=9, params='{"k":1}', tr=1)
    m["outs"] = None
    (request,) = received([m])
    assert (request.request_id(), request.correlation_id(), request.flags(), request.timeout()) == ("r", "c", 3, 9)
    assert request.requested_output_names() == {"A", "B"} and sorted(request._requested) == ["A", "B"]
    assert request.parameters() == '{"k":1}' and request.trace()._rid == 7
    assert request._model_name == "m_0" and request._model_version == -1 and request._release_flags == 1
    assert request._slot.rid == 7 and request._slot.cflag == m["cflag"] and request.inputs() == []
    assert weakref.ref(request)() is request
    request.set_flags(5)
    assert request.flags() == 5
    request._slot.closed = True
    with pytest.raises(KeyError):
        received([{"rid": 1, "outs": []}])  # no "inputs"


def test_tensor_constructor_paths():
    f = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert Tensor("x", f).as_numpy() is f
    t = Tensor("x", f.T)  # not contiguous: a contiguous copy, as in Python
    assert t.as_numpy().flags.c_contiguous and (t.as_numpy() == f.T).all()

    class Name(str):
        pass

    assert Tensor(Name("n"), f).name() == "n"
    assert Tensor(b"n", f).name() == "n"
    assert Tensor("s", np.array([b"a", b"bc"]))._dtype == "BYTES"
    assert Tensor("o", np.array(["a", 1], dtype=np.object_))._dtype == "BYTES"
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        Tensor("x", array=f)
    with pytest.raises(TME, match="^NumPy dtype is not supported.$"):
        Tensor("x", np.zeros(2, dtype=">i4"))
    with pytest.raises(TME, match="^NumPy dtype is not supported.$"):
        Tensor("x", np.zeros(2, dtype=np.longdouble))
    with pytest.raises(TME, match="^Tensor name cannot be an empty string.$"):
        Tensor("", f)
    for dt, name in [(np.intc, "INT32"), (np.longlong, "INT64"), (np.uint64, "UINT64"), (np.float16, "FP16")]:
        assert Tensor("x", np.zeros(1, dtype=dt))._dtype == name
    assert weakref.ref(t)() is t
    t._name = "renamed"
    assert t.name() == "renamed"


def test_response_constructor_paths():
    t = Tensor("OUTPUT0", np.zeros(2, dtype=np.float32))
    outs = [t]
    r = InferenceResponse(output_tensors=outs)
    assert r.output_tensors() == [t] and r.output_tensors() is not outs and not r.has_error()
    assert r.error() is None and r.parameters() == "{}"
    assert InferenceResponse([t]).output_tensors() == [t]
    assert InferenceResponse((t,)).output_tensors() == [t]
    assert InferenceResponse().output_tensors() == []
    e = pb_utils.TritonError("bad")
    assert InferenceResponse(error=e).error() is e and InferenceResponse([], e).has_error()
    assert InferenceResponse([t], parameters={"a": 1}).parameters() == '{"a": 1}'
    with pytest.raises(TME, match="^Output tensor for inference response should not be empty.$"):
        InferenceResponse([t, None])
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        InferenceResponse(output_tensors=[np.zeros(1)])
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        InferenceResponse(output_tensors=None)
    with pytest.raises(TypeError):
        InferenceResponse(outputs=[t])
    assert weakref.ref(r)() is r
    w = InferenceResponse._wrap([t], None, '{"x": 1}')
    assert type(w) is InferenceResponse and w.parameters() == '{"x": 1}'


def test_encode_writes_the_requested_outputs(channel, fresh_state):
    """Outputs above INLINE_OUTPUT_BYTES go into blocks (their descriptor names the block)."""
    a = np.arange(600, dtype=np.float32).reshape(200, 3)
    tensors = [
        Tensor("A", a),
        Tensor("S", np.array([b"x" * 200, b"z" * 100], dtype=np.object_)),
        Tensor("SKIP", a),
        Tensor("BF", np.arange(200, dtype=np.uint16)),
        Tensor("T", a.T),  # not C-contiguous: the Python path
    ]
    tensors[3]._dtype = "BF16"
    blocks = []
    out = encode_response(channel, InferenceResponse(tensors), ["A", "S", "BF", "T"], blocks)
    assert [d[0] for d in out["outs"]] == ["A", "S", "BF", "T"] and len(blocks) == 4
    assert [d[1] for d in out["outs"]] == ["FP32", "BYTES", "BF16", "FP32"]
    assert all(len(d) == 6 for d in out["outs"])
    assert out["outs"][0][2] == [200, 3] and out["outs"][0][5] == 2400
    assert (channel.read_output(out["outs"][0]) == a).all()
    assert channel.read_output(out["outs"][1]).tolist() == [b"x" * 200, b"z" * 100]
    assert channel.read_output(out["outs"][2]).tolist() == list(range(200))
    assert (channel.read_output(out["outs"][3]) == a.T).all()
    assert [tuple(b) for b in blocks] == [(d[3], d[4]) for d in out["outs"]]


def test_encode_puts_small_outputs_inline(channel, fresh_state):
    """Outputs of at most INLINE_OUTPUT_BYTES: `[name, datatype, shape, data]`, no block."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    edge = np.arange(INLINE_OUTPUT_BYTES // 4, dtype=np.float32)
    tensors = [
        Tensor("A", a),
        Tensor("S", np.array([b"xy", b"z"], dtype=np.object_)),
        Tensor("N", np.zeros(0, dtype=np.int64)),
        Tensor("SKIP", a),
        Tensor("BF", np.array([1, 2], dtype=np.uint16)),
        Tensor("T", a.T),  # not C-contiguous: the Python path
        Tensor("EDGE", edge),
        Tensor("OVER", np.append(edge, 1.0).astype(np.float32)),
    ]
    tensors[4]._dtype = "BF16"
    blocks = []
    out = encode_response(channel, InferenceResponse(tensors), ["A", "S", "N", "BF", "T", "EDGE", "OVER"], blocks)
    outs = out["outs"]
    assert [d[0] for d in outs] == ["A", "S", "N", "BF", "T", "EDGE", "OVER"]
    assert [len(d) for d in outs] == [4, 4, 4, 4, 4, 4, 6] and len(blocks) == 1
    assert [d[1] for d in outs[:5]] == ["FP32", "BYTES", "INT64", "BF16", "FP32"]
    assert outs[0][2] == [2, 3] and outs[0][3] == a.tobytes() and outs[2][3] == b""
    assert outs[1][3] == b"\x02\x00\x00\x00xy\x01\x00\x00\x00z"
    assert all(type(d[3]) is bytes for d in outs[:6])
    assert (channel.read_output(outs[0]) == a).all()
    assert channel.read_output(outs[1]).tolist() == [b"xy", b"z"]
    assert channel.read_output(outs[3]).tolist() == [1, 2]
    assert outs[4][2] == [3, 2] and (channel.read_output(outs[4]) == a.T).all()
    assert (channel.read_output(outs[5]) == edge).all()


def test_build_resps_of_received_requests(channel, fresh_state):
    reqs = [make_request(channel, i, inputs={"IN": np.arange(3, dtype=np.int32) + i}) for i in (1, 2)]
    requests = received(reqs)
    returned = [
        InferenceResponse([Tensor("OUTPUT0", r.inputs()[0].as_numpy() * 2)]) if i == 0 else None
        for i, r in enumerate(requests)
    ]
    resps, again = build_resps(channel, requests, returned)
    assert again is None
    assert channel.read_output(resps[0]["outs"][0]).tolist() == [2, 4, 6] and resps[1] is None
    for r in requests:
        r._slot.closed = True
