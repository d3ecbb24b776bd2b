"""InferenceRequest (received and BLS-built), InferenceResponse, TritonError, misc shim."""

import asyncio
import json

import numpy as np
import pytest

import c_python_backend_utils as c_pb
import triton_python_backend_utils as pb_utils
from tritium_stub.request import InferenceRequest

TME = pb_utils.TritonModelException


def test_received_request_accessors(channel, fresh_state):
    from conftest import make_request

    m = make_request(
        channel,
        3,
        {"A": np.arange(3, dtype=np.int32), "S": np.array([b"x"], dtype=object)},
        outs=["O1", "O2"],
        params='{"k": 1}',
        id="req-7",
        corr="seq-1",
        flags=1,
        timeout=500,
    )
    r = InferenceRequest._received(m)
    assert [t.name() for t in r.inputs()] == ["A", "S"]
    assert r.inputs() is r.inputs()
    assert pb_utils.get_input_tensor_by_name(r, "A").as_numpy().tolist() == [0, 1, 2]
    assert pb_utils.get_input_tensor_by_name(r, "S").as_numpy().tolist() == [b"x"]
    assert pb_utils.get_input_tensor_by_name(r, "missing") is None
    assert r.requested_output_names() == {"O1", "O2"}
    assert (r.request_id(), r.correlation_id(), r.flags(), r.timeout()) == ("req-7", "seq-1", 1, 500)
    assert json.loads(r.parameters()) == {"k": 1}
    r.set_flags(3)
    assert r.flags() == 3
    assert r.trace().get_context() is None
    bare = InferenceRequest._received({"rid": 1, "outs": [], "inputs": []})
    assert (bare.parameters(), bare.request_id(), bare.correlation_id(), bare.is_cancelled()) == ("{}", "", 0, False)


def test_bls_constructor_validation():
    t = pb_utils.Tensor("x", np.zeros(1))
    ok = pb_utils.InferenceRequest(
        model_name=b"other", inputs=[t], requested_output_names=["y"], parameters={"a": 1}, correlation_id="c"
    )
    assert ok._model_name == "other" and ok.parameters() == '{"a": 1}'
    with pytest.raises(TypeError):
        pb_utils.InferenceRequest(inputs=[t], requested_output_names=[])
    with pytest.raises(TypeError):
        pb_utils.InferenceRequest(model_name="m", inputs=None, requested_output_names=[])
    with pytest.raises(TypeError):
        pb_utils.InferenceRequest(model_name="m", inputs=[t], requested_output_names=[], timeout=None)
    with pytest.raises(TME, match="^Input tensor for request with id 'r' and model name 'm' should not be empty.$"):
        pb_utils.InferenceRequest(request_id="r", model_name="m", inputs=[None], requested_output_names=[])
    with pytest.raises(TME, match="^Expect parameters keys to have type str, found type <class 'int'>$"):
        pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[], parameters={1: "x"})
    with pytest.raises(TME, match="^Expect parameters values to have type bool/int/str, found type <class 'float'>$"):
        pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[], parameters={"f": 0.5})
    with pytest.raises(TME, match=", got <class 'list'>$"):
        pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[], parameters=[])
    with pytest.raises(TME, match="^Correlation ID must be integer or string$"):
        pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[], correlation_id=1.5)


def test_bls_availability(fresh_state):
    r = pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[])
    fresh_state.initialized = False
    with pytest.raises(TME, match="^BLS is only supported during the 'execute' function.$"):
        r.exec()
    fresh_state.initialized = True
    response = r.exec()
    assert response.has_error() and response.error().code() == pb_utils.TritonError.UNSUPPORTED
    assert response.error().message() == "BLS is not supported by tritium yet"
    assert [x.has_error() for x in r.exec(decoupled=True)] == [True]
    with pytest.raises(RuntimeError):
        r.async_exec()  # needs a running loop

    async def call():
        return await r.async_exec()

    assert asyncio.run(call()).has_error()
    fresh_state.finalizing = True
    with pytest.raises(TME, match="only supported during the 'execute'"):
        r.exec()


def test_inference_response_validation():
    t = pb_utils.Tensor("x", np.zeros(1))
    assert pb_utils.InferenceResponse().output_tensors() == []
    assert pb_utils.InferenceResponse([t]).output_tensors() == [t]
    assert pb_utils.InferenceResponse().parameters() == "{}"
    with pytest.raises(TypeError):
        pb_utils.InferenceResponse(None)
    with pytest.raises(TypeError):
        pb_utils.InferenceResponse([t], "plain string error")
    with pytest.raises(TME, match="^Output tensor for inference response should not be empty.$"):
        pb_utils.InferenceResponse([None])
    with pytest.raises(TME, match="found type <class 'float'>"):
        pb_utils.InferenceResponse(parameters={"f": 1.0})
    err = pb_utils.TritonError("oops")
    r = pb_utils.InferenceResponse([t], err)
    assert r.has_error() and r.error() is err and err.code() == pb_utils.TritonError.INTERNAL


def test_triton_error_codes():
    E = pb_utils.TritonError
    assert [
        E.UNKNOWN,
        E.INTERNAL,
        E.NOT_FOUND,
        E.INVALID_ARG,
        E.UNAVAILABLE,
        E.UNSUPPORTED,
        E.ALREADY_EXISTS,
        E.CANCELLED,
    ] == list(range(8))
    assert E("m", E.NOT_FOUND).code() == E.NOT_FOUND
    with pytest.raises(TypeError):
        E(None)
    with pytest.raises(TypeError):
        E("m", 99)
    assert issubclass(pb_utils.TritonModelException, Exception)
    assert str(pb_utils.TritonModelException("text")) == "text"


def test_model_control_and_misc(fresh_state):
    for call in (
        lambda: pb_utils.load_model("x"),
        lambda: pb_utils.unload_model("x"),
        lambda: pb_utils.is_model_ready("x"),
    ):
        with pytest.raises(TME, match="not supported by tritium yet"):
            call()
    with pytest.raises(TypeError):
        pb_utils.load_model(None)
    fresh_state.version_dir = "/models/m/1"
    assert pb_utils.get_model_dir() == "/models/m/1"
    pm = pb_utils.PreferredMemory(pb_utils.TRITONSERVER_MEMORY_CPU)
    assert pm.preferred_device_id == 0
    with pytest.raises(TypeError):
        pb_utils.PreferredMemory(1)
    assert c_pb.InferenceResponseSender and c_pb.ResponseIterator and c_pb.InferenceTrace


def test_metrics():
    MF = pb_utils.MetricFamily
    fam = MF("requests_total", "Requests", MF.COUNTER)
    m1, m2 = fam.Metric(labels={"a": "1"}), fam.Metric(labels={"a": "1"})
    m1.increment(2)
    assert m2.value() == 2.0  # same labels share the value
    with pytest.raises(TME):
        m1.increment(-1)
    with pytest.raises(TME):
        m1.set(3)
    with pytest.raises(TME):
        fam.Metric(buckets=[1.0])
    with pytest.raises(TME):
        MF("requests_total", "other kind", MF.GAUGE)
    gauge_family = MF("g", "G", MF.GAUGE)  # a family must outlive its metrics
    gauge = gauge_family.Metric()
    gauge.set(5)
    gauge.increment(-2)
    assert gauge.value() == 3.0
    hist_family = MF("h", "H", MF.HISTOGRAM)
    with pytest.raises(TME):
        hist_family.Metric()
    h = hist_family.Metric(buckets=[1, 2])
    h.observe(1.5)
    with pytest.raises(TME):
        h.value()
    del fam
    with pytest.raises(TME, match="Invalid metric operation as the corresponding 'MetricFamily' has been deleted."):
        m1.increment(1)
