"""What execute returns or raises -> exec_done (docs/protocol-notes.md, "What execute returns"), texts verbatim."""

import time

import numpy as np
import pytest

import triton_python_backend_utils as pb_utils
from tritium_stub.state import STATE

PREFIX = "Failed to process the request(s) for model 'm_0', message: "

ECHO = """
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([
                    pb_utils.Tensor("OUTPUT0", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()),
                    pb_utils.Tensor("OUTPUT1", np.zeros(1, np.float32)),
                    pb_utils.Tensor("NOT_IN_CONFIG", np.zeros(1, np.float32))])
                for r in requests]
"""


def returning(expr, decoupled=False, prelude=""):
    return f"""
import numpy as np
import triton_python_backend_utils as pb_utils
{prelude}
class TritonPythonModel:
    def execute(self, requests):
        return {expr}
"""


def test_responses_are_pruned_to_requested_outputs(stub):
    assert stub.load(ECHO, outputs=("OUTPUT0", "OUTPUT1")) == {"t": "init_ok"}
    done = stub.exec(
        stub.request({"IN": np.arange(3, dtype=np.float32)}, outs=["OUTPUT0"]),
        stub.request({"IN": np.ones(2, dtype=np.float32)}, outs=["OUTPUT0", "OUTPUT1"]),
    )
    assert "err" not in done
    first, second = done["resps"]
    assert [d[0] for d in first["outs"]] == ["OUTPUT0"]
    assert stub.ch.read_output(first["outs"][0]).tolist() == [0, 1, 2]
    assert [d[0] for d in second["outs"]] == ["OUTPUT0", "OUTPUT1"]


def test_release_frees_output_blocks(stub):
    stub.load(ECHO, outputs=("OUTPUT0", "OUTPUT1"))
    # OUTPUT0 (100 float32) is above INLINE_OUTPUT_BYTES and takes a block; OUTPUT1 (one) is inline.
    done = stub.exec(stub.request({"IN": np.arange(100, dtype=np.float32)}, outs=["OUTPUT0", "OUTPUT1"]))
    outs = done["resps"][0]["outs"]
    assert [len(d) for d in outs] == [6, 4]
    blocks = [[d[3], d[4]] for d in outs if len(d) == 6]
    assert len(stub.ch.blocks) == 1
    stub.ch.inbox = [{"t": "release", "blocks": blocks}, {"t": "fin"}]
    assert stub.rt._serve_instance(stub.ch) == 0
    assert stub.ch.blocks == {}


def test_error_response_none_slot_and_parameters(stub):
    stub.load(
        returning(
            "[pb_utils.InferenceResponse(error=pb_utils.TritonError('bad', pb_utils.TritonError.INVALID_ARG)),"
            " None, pb_utils.InferenceResponse(parameters={'p': 1, 'q': 'x', 'b': True})]"
        )
    )
    done = stub.exec(stub.request(), stub.request(), stub.request())
    assert done["resps"] == [
        {"outs": [], "err": [3, "bad"]},
        None,
        {"outs": [], "params": '{"p": 1, "q": "x", "b": true}'},
    ]


def test_returning_none_answers_nothing(stub):
    stub.load(returning("None"))
    assert stub.exec(stub.request(), stub.request())["resps"] == [None, None]


LATE_SENDER = """
import threading
import triton_python_backend_utils as pb_utils
FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL

class TritonPythonModel:
    def initialize(self, args):
        self.go = threading.Event()
        self.kept = []

    def execute(self, requests):
        mode = requests[0].parameters()
        sender = requests[0].get_response_sender()
        if mode == '{"late": 1}':
            def later():
                self.go.wait()
                sender.send(pb_utils.InferenceResponse(parameters={"late": True}), flags=FINAL)
            self.thread = threading.Thread(target=later)
            self.thread.start()
        elif mode == '{"keep": 1}':
            sender.send(pb_utils.InferenceResponse(parameters={"held": True}))
            self.kept.append(sender)
        elif mode == '{"keep_silent": 1}':
            self.kept.append(sender)
        return RETURN
"""


@pytest.mark.parametrize("returned", ["None", "[None]"])
def test_non_decoupled_sender_answers_after_execute_returned(stub, returned):
    stub.load(LATE_SENDER.replace("RETURN", returned))
    done = stub.exec(stub.request(params='{"late": 1}'))
    assert "err" not in done and done["resps"] == [None]
    assert stub.ch.of_type("send") == []  # the request is still open, nothing said yet
    stub.rt.model.go.set()
    stub.rt.model.thread.join()
    assert [(m["rid"], m["flags"], m["resp"]) for m in stub.ch.of_type("send")] == [
        (1, 1, {"outs": [], "params": '{"late": true}'})
    ]


def test_non_decoupled_request_dropped_without_final_is_closed_with_an_error(stub):
    stub.load(LATE_SENDER.replace("RETURN", "None"))
    stub.exec(stub.request())  # no send, sender not kept: dropped when execute's batch ends
    assert [(m["rid"], m["flags"], m["resp"]) for m in stub.ch.of_type("send")] == [
        (
            1,
            1,
            {
                "outs": [],
                "err": [1, "Python model 'm_0' released the request without sending a response with the FINAL flag."],
            },
        )
    ]


def test_non_decoupled_kept_sender_closes_when_dropped(stub):
    stub.load(LATE_SENDER.replace("RETURN", "None"))
    stub.exec(stub.request(params='{"keep": 1}'))
    stub.exec(stub.request(params='{"keep_silent": 1}'))
    assert [m["flags"] for m in stub.ch.of_type("send")] == [0]
    stub.rt.model.kept.clear()
    # The held response is delivered by a flags-only FINAL; the silent request gets the error.
    sends = sorted(((m["rid"], m["flags"], m["resp"]) for m in stub.ch.of_type("send")[1:]), key=lambda s: s[0])
    assert sends == [
        (1, 1, None),
        (
            2,
            1,
            {
                "outs": [],
                "err": [1, "Python model 'm_0' released the request without sending a response with the FINAL flag."],
            },
        ),
    ]


@pytest.mark.parametrize(
    "expr, text",
    [
        ("(pb_utils.InferenceResponse(),)", "Expected a list in the execute return, found type '<class 'tuple'>'."),
        (
            "[pb_utils.InferenceResponse()] * 3",
            "Number of InferenceResponse objects do not match the number of InferenceRequest objects. "
            "InferenceRequest(s) size is:2, and InferenceResponse(s) size is:3\n",
        ),
        (
            "[pb_utils.InferenceResponse(), 'x']",
            "Expected an 'InferenceResponse' object in the execute function return list, found type '<class 'str'>'.",
        ),
    ],
)
def test_bad_return_values_fail_the_batch(stub, expr, text):
    stub.load(returning(expr))
    done = stub.exec(stub.request(), stub.request())
    assert done["err"] == PREFIX + text and done["resps"] == []
    log = stub.ch.of_type("log")[-1]
    assert log["level"] == "ERROR" and log["msg"] == PREFIX + text
    assert stub.ch.blocks == {}


def test_reschedule(stub):
    stub.load("""
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        requests[0].set_release_flags(pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
        if requests[0].parameters() == '{"keep": true}':
            return [pb_utils.InferenceResponse()]
        return [None]
""")
    assert stub.exec(stub.request())["resched"] == [0]
    done = stub.exec(stub.request(params='{"keep": true}'))
    assert done["err"] == PREFIX + (
        "Expected a None object in the execute function return list "
        "for reschduled request, found type "
        "'<class 'c_python_backend_utils.InferenceResponse'>'."
    )
    assert "resched" not in done


def test_response_for_request_closed_by_its_sender(stub):
    stub.load("""
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        requests[0].get_response_sender().send(pb_utils.InferenceResponse(),
            flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return [pb_utils.InferenceResponse(), pb_utils.InferenceResponse()]
""")
    done = stub.exec(stub.request(), stub.request())
    assert [m["rid"] for m in stub.ch.of_type("send")] == [1]
    # Triton 2.51 checks the non-decoupled rule before the closed state (compared on it).
    assert done["err"] == PREFIX + ("Unable to send response. Non-decoupled model cannot send more than one response.")


def test_sender_response_with_none_in_the_list(stub):
    stub.load("""
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            r.get_response_sender().send(pb_utils.InferenceResponse(),
                                         flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return [None] * len(requests)
""")
    done = stub.exec(stub.request(), stub.request())
    assert done["resps"] == [None, None]
    assert [(m["rid"], m["flags"], m["resp"]) for m in stub.ch.of_type("send")] == [
        (1, 1, {"outs": []}),
        (2, 1, {"outs": []}),
    ]


def test_raising_execute(stub):
    stub.load("""
import triton_python_backend_utils as pb_utils

def helper():
    raise ValueError("boom")

class TritonPythonModel:
    def execute(self, requests):
        self.sender = requests[0].get_response_sender()
        if requests[0].parameters() == "{}":
            helper()
        return [pb_utils.InferenceResponse()]
""")
    done = stub.exec(stub.request())
    model_file = STATE.model_file
    assert done["err"] == (
        PREFIX + f"ValueError: boom\n\nAt:\n  {model_file}(5): helper\n  {model_file}(11): execute\n"
    )
    # Node closes every request of a failed batch: the stub's senders are closed too.
    with pytest.raises(Exception, match="Response sender has been closed."):
        stub.rt.model.sender.send(pb_utils.InferenceResponse(), flags=1)
    # The model stays usable.
    assert "err" not in stub.exec(stub.request(params='{"ok": 1}'))


def test_missing_execute(stub):
    stub.load("class TritonPythonModel:\n    pass\n")
    done = stub.exec(stub.request())
    assert done["err"] == PREFIX + (f"Python model {STATE.model_file} does not implement `execute` method.")


def test_async_execute_is_awaited(stub):
    stub.load("""
import asyncio
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    async def execute(self, requests):
        await asyncio.sleep(0)
        return [pb_utils.InferenceResponse(parameters={"async": True}) for _ in requests]
""")
    assert stub.exec(stub.request())["resps"] == [{"outs": [], "params": '{"async": true}'}]


# --- decoupled ---------------------------------------------------------------------------

DECOUPLED = """
import threading
import numpy as np
import triton_python_backend_utils as pb_utils
FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL

class TritonPythonModel:
    def execute(self, requests):
        self.senders = [r.get_response_sender() for r in requests]
        for r in requests:
            s = r.get_response_sender()
            for i in range(2):
                s.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", np.full(1, i, np.float32))]))
            s.send(flags=FINAL)
        return RETURN
"""


def test_decoupled_streams_through_senders(stub):
    stub.load(DECOUPLED.replace("RETURN", "None"), decoupled=True)
    done = stub.exec(stub.request())
    assert done["resps"] == [None]
    sends = stub.ch.of_type("send")
    assert [m["flags"] for m in sends] == [0, 0, 1]
    assert [stub.ch.read_output(m["resp"]["outs"][0]).tolist() for m in sends[:2]] == [[0], [1]]
    assert sends[2]["resp"] is None


def test_decoupled_must_return_none(stub):
    stub.load(DECOUPLED.replace("s.send(flags=FINAL)", "pass").replace("RETURN", "[]"), decoupled=True)
    done = stub.exec(stub.request())
    assert done["err"] == PREFIX + (
        "Python model 'm_0' is using the decoupled mode and the execute function must return None."
    )
    with pytest.raises(Exception, match="^Unable to send response. Response sender has been closed.$"):
        stub.rt.model.senders[0].send(flags=1)


def test_decoupled_async_execute_runs_in_background(stub):
    stub.load(
        """
import asyncio
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    async def execute(self, requests):
        await asyncio.sleep(0.01)
        if requests[0].parameters() == "{}":
            requests[0].get_response_sender().send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        else:
            raise RuntimeError("async failure")
""",
        decoupled=True,
    )
    assert stub.exec(stub.request())["resps"] == [None]
    assert stub.exec(stub.request(params='{"x": 1}'))["resps"] == [None]
    deadline = time.time() + 2
    while time.time() < deadline and not any("async failure" in m["msg"] for m in stub.ch.of_type("log")):
        time.sleep(0.01)
    assert [m["flags"] for m in stub.ch.of_type("send")][:1] == [1]
    errors = [m for m in stub.ch.of_type("log") if "async failure" in m["msg"]]
    assert errors and errors[0]["level"] == "ERROR" and "Traceback" in errors[0]["msg"]


def test_dropped_decoupled_request_is_closed_with_an_error(stub):
    stub.load("class TritonPythonModel:\n    def execute(self, requests):\n        return None\n", decoupled=True)
    stub.exec(stub.request())
    import gc

    gc.collect()
    sends = stub.ch.of_type("send")
    assert len(sends) == 1 and sends[0]["flags"] == 1 and sends[0]["resp"]["err"][0] == 1


HELD = """
import asyncio
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.in_flight = self.most = 0
        self.release = False

    async def execute(self, requests):
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        while not self.release:  # held until the test lets every coroutine go
            await asyncio.sleep(0.005)
        self.in_flight -= 1
        requests[0].get_response_sender().send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
"""


def test_decoupled_async_executes_are_bounded_by_the_init_limit(stub):
    """`init` carries max-async-executes: at the limit the main thread waits for a coroutine to
    finish before it schedules the next batch's, so that batch's exec_done waits too."""
    import threading

    from tritium_stub import async_loop

    if async_loop._loop is not None and not async_loop._loop.is_running():
        async_loop._loop = None  # an earlier test's finalize stopped it (a real stub exits then)
    try:
        stub.load(HELD, decoupled=True, async_limit=2)
        model = stub.rt.model
        assert [stub.exec(stub.request())["resps"] for _ in range(2)] == [[None], [None]]
        third = threading.Thread(target=stub.exec, args=(stub.request(),))
        third.start()
        _wait_until(lambda: model.most == 2)
        # Held at the limit: the thread stays in exec (a grace for an unbounded stub to show itself
        # by finishing; a bounded one never does, so this cannot fail spuriously).
        third.join(0.3)
        assert third.is_alive() and len(stub.ch.of_type("exec_done")) == 2
        model.release = True
        third.join(30)
        assert not third.is_alive()
        _wait_until(lambda: len(stub.ch.of_type("send")) == 3)
        assert model.most == 2  # the third coroutine started only once one of the two had ended
    finally:
        async_loop.configure(async_loop.DEFAULT_LIMIT)


def _wait_until(pred, timeout=30.0):
    # A bounded wait for the coroutines on the stub's loop; not a timing assertion.
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.005)
