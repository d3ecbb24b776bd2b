"""pb_utils entry points raise what Triton's pybind layer raises: TypeError with pybind's text for
an argument its casters refuse, TritonModelException with Triton's text for a well-typed call
Triton refuses. Every expected text below was printed by Triton 2.51's c_python_backend_utils
(object addresses left out)."""

import re

import numpy as np
import pytest

import triton_python_backend_utils as pb_utils

M = "c_python_backend_utils"
TME = pb_utils.TritonModelException
NOT_DLPACK = (
    "Provided tensor is not supported. Tensor must be a DLPack capsule         or have "
    "`__dlpack__` and `__dlpack_device__` attributes"
)


def raised(fn):
    with pytest.raises(Exception) as e:
        fn()
    return type(e.value), re.sub(r" at 0x[0-9a-f]+", "", str(e.value))


def incompatible(name, signature, invoked, constructor=False):
    what = "constructor" if constructor else "function"
    return (
        f"{name}(): incompatible {what} arguments. The following argument types are "
        f"supported:\n    1. {signature}\n\nInvoked with: {invoked}"
    )


@pytest.mark.parametrize("obj", [None, 5, [1, 2], "abc", object()])
def test_from_dlpack_refuses_what_is_not_dlpack_with_tritons_exception(obj):
    assert raised(lambda: pb_utils.Tensor.from_dlpack("x", obj)) == (TME, NOT_DLPACK)


def test_from_dlpack_name_is_checked_by_the_binding():
    assert raised(lambda: pb_utils.Tensor.from_dlpack(3, np.zeros(2))) == (
        TypeError,
        incompatible("from_dlpack", f"(self: str, arg0: object) -> {M}.Tensor", "3, array([0., 0.])"),
    )


def test_tensor_constructor_takes_an_ndarray_only():
    assert raised(lambda: pb_utils.Tensor("x", [1, 2])) == (
        TypeError,
        incompatible("__init__", f"{M}.Tensor(arg0: str, arg1: numpy.ndarray)", "'x', [1, 2]", constructor=True),
    )
    assert raised(lambda: pb_utils.Tensor(None, np.zeros(2)))[0] is TypeError


def test_triton_error_code_must_be_one_of_its_codes():
    sig = f"{M}.TritonError(message: str, code: {M}.TritonError.__ErrorCode = <__ErrorCode.INTERNAL: 1>)"
    assert raised(lambda: pb_utils.TritonError("m", 3)) == (
        TypeError,
        incompatible("__init__", sig, "'m', 3", constructor=True),
    )
    assert raised(lambda: pb_utils.TritonError(None)) == (
        TypeError,
        incompatible("__init__", sig, "None", constructor=True),
    )
    error = pb_utils.TritonError("m", pb_utils.TritonError.INVALID_ARG)
    assert error.code() == pb_utils.TritonError.INVALID_ARG == 3


def test_request_constructor_types():
    def make(**kw):
        args = {"model_name": "m", "inputs": [], "requested_output_names": []}
        args.update(kw)
        return lambda: pb_utils.InferenceRequest(**args)

    for bad in (
        {"flags": -1},
        {"timeout": "1"},
        {"model_version": "1"},
        {"inputs": "ab"},
        {"requested_output_names": None},
        {"model_name": None},
    ):
        kind, text = raised(make(**bad))
        assert kind is TypeError and text.startswith(
            f"__init__(): incompatible constructor arguments. The following argument types are "
            f"supported:\n    1. {M}.InferenceRequest(request_id: str = '', correlation_id: "
            "object = 0, inputs: List[triton::backend::python::PbTensor], "
        ), bad
    assert raised(make(model_name=None))[1].endswith(
        "Invoked with: kwargs: model_name=None, inputs=[], requested_output_names=[]"
    )
    assert raised(make(parameters="{}")) == (TME, "Expect N8pybind114dictE, got <class 'str'>")
    assert raised(make(correlation_id=1.5)) == (TME, "Correlation ID must be integer or string")
    pb_utils.InferenceRequest(model_name="m", inputs=(), requested_output_names=[])


def test_request_methods():
    request = pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[])
    assert raised(lambda: request.set_flags("1")) == (
        TypeError,
        incompatible(
            "set_flags", f"(self: {M}.InferenceRequest, arg0: int) -> None", f"<{M}.InferenceRequest object>, '1'"
        ),
    )
    assert raised(lambda: request.exec(decoupled="x")) == (
        TypeError,
        incompatible(
            "exec",
            f"(self: {M}.InferenceRequest, decoupled: bool = False) -> object",
            f"<{M}.InferenceRequest object>; kwargs: decoupled='x'",
        ),
    )


def test_sender_flags_are_an_unsigned_int(channel, fresh_state):
    from conftest import make_request
    from tritium_stub.request import InferenceRequest

    fresh_state.decoupled = False
    fresh_state.config_outputs = frozenset()
    sender = InferenceRequest._received(make_request(channel, 1, outs=())).get_response_sender()
    # bool is an int to pybind: False is flags 0, which needs a response.
    assert raised(lambda: sender.send(None, False)) == (
        TME,
        "Inference Response object must be provided when the response flags is set to zero.",
    )
    kind, text = raised(lambda: sender.send(pb_utils.InferenceResponse(), -1))
    assert kind is TypeError and text.startswith(
        incompatible(
            "send",
            f"(self: {M}.InferenceResponseSender, response: {M}.InferenceResponse = None, flags: int = 0) -> None",
            f"<{M}.InferenceResponseSender object>, ",
        )
    )
    assert raised(lambda: sender.send("abc"))[0] is TypeError


def test_logger_arguments():
    assert raised(lambda: pb_utils.Logger.log("m", 1)) == (
        TypeError,
        incompatible("log", f"(message: str, level: {M}.Logger.LogLevel = <LogLevel.INFO: 0>) -> None", "'m', 1"),
    )
    assert raised(lambda: pb_utils.Logger.log_info(5)) == (
        TypeError,
        incompatible("log_info", "(message: str) -> None", "5"),
    )


def test_model_control_arguments():
    assert raised(lambda: pb_utils.is_model_ready(None)) == (
        TypeError,
        incompatible("is_model_ready", "(model_name: str, model_version: str = '') -> bool", "None"),
    )
    assert raised(lambda: pb_utils.load_model(None)) == (
        TypeError,
        incompatible("load_model", "(model_name: str, config: str = '', files: object = None) -> None", "None"),
    )


def test_metrics_arguments_and_texts():
    family = pb_utils.MetricFamily
    assert raised(lambda: family("n", "d", 5)) == (
        TypeError,
        incompatible(
            "__init__",
            f"{M}.MetricFamily(name: str, description: str, kind: {M}.MetricKind)",
            "'n', 'd', 5",
            constructor=True,
        ),
    )
    counter = family("pybind_args_counter", "d", family.COUNTER)
    assert raised(lambda: counter.Metric(labels="a")) == (TME, "Failed to create metric. Labels must be a dictionary.")
    histogram = family("pybind_args_histogram", "d", family.HISTOGRAM)
    assert raised(lambda: histogram.Metric()) == (TME, "Failed to create metric. Missing required buckets.")
    metric = counter.Metric()
    assert raised(lambda: metric.increment("1")) == (
        TypeError,
        incompatible("increment", f"(self: {M}.Metric, arg0: float) -> None", f"<{M}.Metric object>, '1'"),
    )
    metric.increment(2)
    assert metric.value() == 2.0
