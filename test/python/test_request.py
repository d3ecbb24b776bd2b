"""InferenceRequest (received and BLS-built), InferenceResponse, TritonError, misc shim."""

import asyncio
import json

import numpy as np
import pytest

import c_python_backend_utils as c_pb
import triton_python_backend_utils as pb_utils
from conftest import FakeChannel
from tritium_stub import bls, runtime
from tritium_stub.inbox import Inbox
from tritium_stub.request import InferenceRequest
from tritium_stub.state import STATE

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


class NodeAnswers(FakeChannel):
    """A FakeChannel whose `bls` / `model_ctl` messages are answered by `answer(msg)`, as Node
    would: the answers wait on ring A (the inbox) for whichever thread reads next."""

    def __init__(self, answer):
        super().__init__()
        self.answer = answer

    def send(self, msg):
        super().send(msg)
        if msg["t"] in ("bls", "model_ctl"):
            self.inbox.extend(self.answer(self.sent[-1]))


def _node_output(ch, name, values):
    """An output Node copied into its own arena (n0) for a BLS answer."""
    return ch.put_input(name, np.array(values, dtype=np.float32))


@pytest.fixture
def node(fresh_state):
    """Installs a NodeAnswers channel and an inbox over it; yields a setter for the answerer."""
    saved = STATE.channel
    holder = {}
    ch = NodeAnswers(lambda msg: holder["answer"](ch, msg))
    STATE.channel = ch
    STATE.initialized = True
    STATE.inbox = Inbox(ch.recv, runtime.Runtime._route)

    def set_answer(fn):
        holder["answer"] = fn
        return ch

    yield set_answer
    STATE.channel = saved


def test_bls_availability(fresh_state):
    r = pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[])
    fresh_state.initialized = False
    with pytest.raises(TME, match="^BLS is only supported during the 'execute' function.$"):
        r.exec()
    fresh_state.initialized = True
    fresh_state.finalizing = True
    with pytest.raises(TME, match="only supported during the 'execute'"):
        r.exec()
    with pytest.raises(RuntimeError):
        r.async_exec()  # needs a running loop


def test_bls_exec_round_trip(node):
    given = []

    def answer(ch, msg):
        given.append(_node_output(ch, "OUT", [1.0, 2.0]))
        return [{"t": "bls_r", "bid": msg["bid"], "resp": {"outs": given, "params": '{"k": 1}'}, "final": True}]

    ch = node(answer)
    x = pb_utils.Tensor("IN", np.array([5, 6], dtype=np.int32))
    r = pb_utils.InferenceRequest(
        model_name="t", inputs=[x], requested_output_names=[b"OUT"], request_id="q", correlation_id=9, timeout=7
    )
    response = r.exec()
    sent = ch.of_type("bls")[0]
    assert (sent["model"], sent["ver"], sent["id"], sent["corr"], sent["timeout"], sent["dec"]) == (
        "t",
        -1,
        "q",
        9,
        7,
        False,
    )
    assert sent["outs"] == ["OUT"] and sent["inputs"][0][:3] == ["IN", "INT32", [2]]
    assert ch.blocks == {}  # the input block is freed once the final answer arrived
    assert not response.has_error() and response.parameters() == '{"k": 1}'
    out = pb_utils.get_output_tensor_by_name(response, "OUT").as_numpy()
    assert out.tolist() == [1.0, 2.0]
    view = out[1:]
    del response, out
    bls.flush_freed()
    assert ch.of_type("bls_free") == []  # a view still references the block
    del view
    bls.flush_freed()
    assert ch.of_type("bls_free")[0]["blocks"] == [given[0][3:5]]


def test_bls_call_carries_the_trace_of_a_traced_request(node):
    ch = node(lambda ch, msg: [{"t": "bls_r", "bid": msg["bid"], "resp": {"outs": []}, "final": True}])
    traced = InferenceRequest._received({"rid": 41, "tr": 1, "outs": [], "inputs": []})
    untraced = InferenceRequest._received({"rid": 42, "outs": [], "inputs": []})
    assert traced.trace().get_context() is None  # Triton mode: no OpenTelemetry context
    for caller in (traced, untraced):
        pb_utils.InferenceRequest(model_name="t", inputs=[], requested_output_names=[], trace=caller.trace()).exec()
    pb_utils.InferenceRequest(model_name="t", inputs=[], requested_output_names=[]).exec()
    # Node traces the call as a child of request 41; the others are not traced.
    assert [m.get("tr") for m in ch.of_type("bls")] == [41, None, None]


def test_bls_request_arguments_of_every_accepted_form(node):
    """The constructor checks plain lists of Tensors and str names without the generic sequence
    check; every other form pybind accepts (tuples, subclasses, bytes names, any sequence,
    positional arguments) takes the full check and reaches Node the same way."""

    class MyTensor(pb_utils.Tensor):
        pass

    class Seq:
        def __init__(self, items):
            self.items = items

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            return self.items[i]

    ch = node(lambda ch, msg: [{"t": "bls_r", "bid": msg["bid"], "resp": {"outs": []}, "final": True}])
    x = pb_utils.Tensor("X", np.array([1], dtype=np.int32))
    y = MyTensor("Y", np.array([2], dtype=np.int32))
    forms = [
        {"inputs": [x, y], "requested_output_names": ["A", b"B"]},
        {"inputs": (x,), "requested_output_names": (b"A",)},
        {"inputs": Seq([y]), "requested_output_names": Seq(["A"])},
    ]
    for kw in forms:
        assert not pb_utils.InferenceRequest(model_name=b"t", **kw).exec().has_error()
    assert not pb_utils.InferenceRequest("q", 3, [x], ["A"], "t", 2).exec().has_error()
    sent = ch.of_type("bls")
    assert [[d[0] for d in m["inputs"]] for m in sent] == [["X", "Y"], ["X"], ["Y"], ["X"]]
    assert [m["outs"] for m in sent] == [["A", "B"], ["A"], ["A"], ["A"]]
    assert [(m["model"], m["id"], m["corr"], m["ver"]) for m in sent] == [
        ("t", "", 0, -1),
        ("t", "", 0, -1),
        ("t", "", 0, -1),
        ("t", "q", 3, 2),
    ]
    for bad in ({"inputs": [x, 1]}, {"requested_output_names": ["A", 1]}, {"unknown": 1}):
        kw = {"model_name": "t", "inputs": [x], "requested_output_names": ["A"], **bad}
        with pytest.raises(TypeError, match="incompatible constructor arguments"):
            pb_utils.InferenceRequest(**kw)


def test_bls_call_that_cannot_be_sent_frees_its_inputs(node):
    ch = node(lambda ch, msg: [])

    def refuse(msg):
        raise RuntimeError("channel is closed")

    ch.send = refuse
    x = pb_utils.Tensor("X", np.array([1], dtype=np.int32))
    with pytest.raises(RuntimeError, match="channel is closed"):
        pb_utils.InferenceRequest(model_name="t", inputs=[x], requested_output_names=[]).exec()
    assert ch.blocks == {} and bls._calls == {}


def test_bls_errors_and_decoupled_stream(node):
    def answer(ch, msg):
        if msg["model"] == "bad":
            return [{"t": "bls_r", "bid": msg["bid"], "resp": {"outs": [], "err": [1, "nope"]}, "final": True}]
        items = [
            {"t": "bls_r", "bid": msg["bid"], "resp": {"outs": [_node_output(ch, "OUT", [float(i)])]}, "final": False}
            for i in range(2)
        ]
        return items + [{"t": "bls_r", "bid": msg["bid"], "resp": None, "final": True}]

    node(answer)
    err = pb_utils.InferenceRequest(model_name="bad", inputs=[], requested_output_names=[]).exec()
    assert err.has_error() and err.error().message() == "nope" and err.error().code() == pb_utils.TritonError.INTERNAL
    it = pb_utils.InferenceRequest(model_name="s", inputs=[], requested_output_names=[]).exec(decoupled=True)
    got = [[t.as_numpy().tolist() for t in r.output_tensors()] for r in it]
    assert got == [[[0.0]], [[1.0]], []]  # the flags-only FINAL is an empty response
    assert [len(r.output_tensors()) for r in it] == [1, 1, 0]  # iterating again replays

    async def gathered():
        calls = [
            pb_utils.InferenceRequest(model_name="bad", inputs=[], requested_output_names=[]).async_exec()
            for _ in range(3)
        ]
        return await asyncio.gather(*calls)

    assert [r.error().message() for r in asyncio.run(gathered())] == ["nope"] * 3


def test_bls_decoupled_exec_returns_with_the_first_response_and_cancel_is_sent_once(node):
    """Triton's iterator is built from the first response, so exec(decoupled=True) returns once
    that arrived (async_exec waits for it in an executor thread, not in the coroutine). cancel()
    sends one bls_cancel however often it is called, and none once the stream ended; the
    target's CANCELLED error reaches the model with that code (qa decoupled_bls_cancel)."""

    def answer(ch, msg):
        outs = [_node_output(ch, "OUT", [float(i)]) for i in range(2)]
        return [{"t": "bls_r", "bid": msg["bid"], "resp": {"outs": [o]}, "final": False} for o in outs]

    ch = node(answer)
    it = pb_utils.InferenceRequest(model_name="s", inputs=[], requested_output_names=[]).exec(decoupled=True)
    assert len(ch.inbox) == 1  # the first response was read before exec returned, the second waits
    assert next(it).output_tensors()[0].as_numpy().tolist() == [0.0]
    it.cancel()
    it.cancel()
    bid = ch.of_type("bls")[0]["bid"]
    assert ch.of_type("bls_cancel") == [{"t": "bls_cancel", "bid": bid}]
    ch.inbox.append({"t": "bls_r", "bid": bid, "resp": {"outs": [], "err": [7, "cancelled"]}, "final": True})
    rest = list(it)
    assert [r.has_error() for r in rest] == [False, True]
    assert rest[1].error().code() == pb_utils.TritonError.CANCELLED and rest[1].error().message() == "cancelled"
    it.cancel()  # the stream is over: nothing is sent
    assert len(ch.of_type("bls_cancel")) == 1


def test_model_control(node):
    def answer(ch, msg):
        if msg["op"] == "ready":
            return [{"t": "model_ctl_r", "cid": msg["cid"], "ready": msg["model"] == "up"}]
        return [{"t": "model_ctl_r", "cid": msg["cid"], "err": f"Failed to {msg['op']} model: no"}]

    ch = node(answer)
    assert pb_utils.is_model_ready("up") is True
    assert pb_utils.is_model_ready("down", "2") is False
    assert ch.of_type("model_ctl")[1]["ver"] == "2"
    with pytest.raises(TME, match="^Failed to load model: no$"):
        pb_utils.load_model("x", config="{}", files={"file:1/model.py": b"abc"})
    assert ch.of_type("model_ctl")[2]["files"] == {"file:1/model.py": "YWJj"}
    with pytest.raises(TME, match="^Failed to unload model: no$"):
        pb_utils.unload_model("x", unload_dependents=True)
    assert ch.of_type("model_ctl")[3]["dependents"] is True


def test_errors_and_exceptions():
    with pytest.raises(TypeError):
        pb_utils.TritonError("m", 99)
    assert issubclass(pb_utils.TritonModelException, Exception)
    assert str(pb_utils.TritonModelException("text")) == "text"


def test_model_control_and_misc(fresh_state):
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
