"""A model's own readiness check, `is_ready()` (docs/protocol-notes.md, "A model's own readiness check"): requests arrive on the
readiness pipe and a stub thread answers `ready_done` on ring B, also while execute runs."""

import os
import threading
import time

import pytest

from tritium_stub.runtime import Runtime
from tritium_stub.state import STATE

ANSWERING = """
import asyncio, threading
class TritonPythonModel:
    answer = True
    calls = 0
    def is_ready(self):
        self.calls += 1
        a = self.answer
        if a == "raise":
            raise ValueError("the database connection is gone")
        if a == "async":
            async def later():
                await asyncio.sleep(0)
                return False
            return later()
        return a
    def execute(self, requests):
        return [None for _ in requests]
"""


def _wait_for(pred, what, timeout=30.0):
    # A bounded wait for a message the readiness thread sends; not a timing assertion.
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = pred()
        if found:
            return found
        time.sleep(0.005)
    raise AssertionError(f"no {what} within {timeout} s")


@pytest.fixture(autouse=True)
def live_async_loop():
    # An earlier test's finalize stopped the stub's asyncio loop (a real stub exits then); an
    # async is_ready() needs a running one.
    from tritium_stub import async_loop

    if async_loop._loop is not None and not async_loop._loop.is_running():
        async_loop._loop = None
    yield


@pytest.fixture
def pipe():
    r, w = os.pipe()
    yield r, w
    # Writer first: a readiness thread still reading sees end-of-file and stops.
    for fd in (w, r):
        try:
            os.close(fd)
        except OSError:
            pass


def _load(model_repo, channel, source, ready_fd):
    path = model_repo("m", source)
    rt = Runtime(path, "m_0", "instance", 0, channel, ready_fd=ready_fd)
    args = {
        "model_config": '{"name": "m", "output": []}',
        "model_instance_kind": "CPU",
        "model_instance_name": "m_0",
        "model_instance_device_id": "0",
        "model_repository": os.path.dirname(os.path.dirname(path)),
        "model_version": "1",
        "model_name": "m",
    }
    assert rt._init(args)
    return rt


def _ask(w, channel, seq):
    os.write(w, seq.to_bytes(4, "little"))
    return _wait_for(
        lambda: next((m for m in channel.of_type("ready_done") if m["seq"] == seq), None), f"ready_done {seq}"
    )


def test_init_ok_says_is_ready_exists_and_each_request_calls_it_once(model_repo, channel, fresh_state, pipe):
    r, w = pipe
    rt = _load(model_repo, channel, ANSWERING, r)
    assert channel.sent[-1] == {"t": "init_ok", "ready_fn": True}
    model = rt.model
    assert _ask(w, channel, 1) == {"t": "ready_done", "seq": 1, "ready": True}
    model.answer = False
    assert _ask(w, channel, 2) == {"t": "ready_done", "seq": 2, "ready": False}
    assert model.calls == 2


def test_exception_non_bool_and_coroutine(model_repo, channel, fresh_state, pipe):
    r, w = pipe
    rt = _load(model_repo, channel, ANSWERING, r)
    rt.model.answer = "raise"
    done = _ask(w, channel, 1)
    assert done["ready"] is False
    assert done["err"] == (f"ValueError: the database connection is gone\n\nAt:\n  {STATE.model_file}(10): is_ready\n")
    for seq, value in ((2, "yes"), (3, 1), (4, None)):
        rt.model.answer = value
        assert _ask(w, channel, seq) == {
            "t": "ready_done",
            "seq": seq,
            "ready": False,
            "err": "is_ready() must return a boolean value",
        }
    rt.model.answer = "async"
    assert _ask(w, channel, 5) == {"t": "ready_done", "seq": 5, "ready": False}


def test_requests_waiting_together_get_one_call_answering_the_newest(model_repo, channel, fresh_state, pipe):
    r, w = pipe
    path = model_repo("m", ANSWERING)
    rt = Runtime(path, "m_0", "instance", 0, channel, ready_fd=r)
    # Written before the thread starts reading: all three are waiting at once.
    os.write(w, b"".join(s.to_bytes(4, "little") for s in (7, 8, 9)))
    assert rt._init(
        {
            "model_config": '{"name": "m", "output": []}',
            "model_repository": "",
            "model_name": "m",
            "model_version": "1",
            "model_instance_name": "m_0",
            "model_instance_kind": "CPU",
            "model_instance_device_id": "0",
        }
    )
    _wait_for(lambda: channel.of_type("ready_done"), "ready_done")
    assert _ask(w, channel, 10)["ready"] is True
    assert [m["seq"] for m in channel.of_type("ready_done")] == [9, 10]
    assert rt.model.calls == 2


def test_a_model_without_is_ready_gets_no_thread_and_no_message(model_repo, channel, fresh_state, pipe):
    r, w = pipe
    before = {t.name for t in threading.enumerate()}
    _load(
        model_repo,
        channel,
        """
class TritonPythonModel:
    def execute(self, requests):
        return [None for _ in requests]
""",
        r,
    )
    assert channel.sent[-1] == {"t": "init_ok"}
    assert "tritium-readiness" not in {t.name for t in threading.enumerate()} - before


def test_readiness_is_answered_while_execute_runs(model_repo, channel, fresh_state, pipe):
    r, w = pipe
    rt = _load(
        model_repo,
        channel,
        """
import time
class TritonPythonModel:
    calls = 0
    def is_ready(self):
        self.calls += 1
        return True
    def execute(self, requests):
        # Pure Python until is_ready was called (bounded, so a broken stub fails, not hangs).
        end = time.monotonic() + 60
        while self.calls == 0 and time.monotonic() < end:
            pass
        return [None for _ in requests]
""",
        r,
    )
    executing = threading.Thread(target=rt._exec, args=({"t": "exec", "id": 1, "reqs": []},))
    executing.start()
    done = _ask(w, channel, 1)
    executing.join(60)
    assert done == {"t": "ready_done", "seq": 1, "ready": True}
    kinds = [m["t"] for m in channel.sent]
    assert kinds.index("ready_done") < kinds.index("exec_done")


def test_the_thread_ends_when_node_closes_the_pipe(model_repo, channel, fresh_state, pipe):
    r, w = pipe
    before = set(threading.enumerate())
    rt = _load(model_repo, channel, ANSWERING, r)
    thread = next(t for t in set(threading.enumerate()) - before if t.name == "tritium-readiness")
    os.close(w)
    thread.join(30)
    assert not thread.is_alive()
    assert rt.model.calls == 0
