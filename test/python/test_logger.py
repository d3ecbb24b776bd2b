"""Logger records (caller's file/line, levels, VERBOSE gating), logging and thread bridges."""

import logging
import re
import threading

import pytest

import triton_python_backend_utils as pb_utils


def _logs(channel):
    return [(m["level"], m["msg"], m["file"]) for m in channel.of_type("log")]


def test_levels_and_caller_location(channel, fresh_state):
    L = pb_utils.Logger
    L.log_info("i")
    L.log_warn("w")
    L.log_error("e")
    L.log("x", L.WARNING)
    L.log("default level")
    records = channel.of_type("log")
    assert [(r["level"], r["msg"]) for r in records] == [
        ("INFO", "i"),
        ("WARNING", "w"),
        ("ERROR", "e"),
        ("WARNING", "x"),
        ("INFO", "default level"),
    ]
    assert {r["file"] for r in records} == {"test_logger.py"}
    assert records[1]["line"] == records[0]["line"] + 1


def test_verbose_needs_log_verbose(channel, fresh_state):
    fresh_state.log_verbose = 0
    pb_utils.Logger.log_verbose("hidden")
    pb_utils.Logger.log("hidden too", pb_utils.Logger.VERBOSE)
    fresh_state.log_verbose = 1
    pb_utils.Logger.log_verbose("shown")
    assert _logs(channel) == [("VERBOSE", "shown", "test_logger.py")]


def test_argument_types():
    with pytest.raises(TypeError):
        pb_utils.Logger.log("m", 0)
    with pytest.raises(TypeError):
        pb_utils.Logger.log("m", None)
    with pytest.raises(TypeError):
        pb_utils.Logger.log_info(None)


def test_stderr_before_the_channel_exists(capsys, fresh_state):
    fresh_state.channel = None
    pb_utils.Logger.log_warn("early")
    err = capsys.readouterr().err
    assert re.fullmatch(r"W\d{4} \d\d:\d\d:\d\d\.\d{6} \d+ test_logger\.py:\d+\] early\n", err)


def test_python_logging_without_handlers_reaches_node(channel, fresh_state):
    # pytest puts capture handlers on the root logger; a non-propagating logger sees none,
    # which is the situation of a model that configured no logging.
    logger = logging.getLogger("my.model")
    logger.propagate = False
    logger.warning("careful %s", "now")
    logger.setLevel(logging.DEBUG)
    try:
        logger.debug("fine detail")
        fresh_state.log_verbose = 1
        logger.debug("fine detail 2")
        logger.error("bad")
    finally:
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
    assert _logs(channel) == [
        ("WARNING", "my.model: careful now", "test_logger.py"),
        ("VERBOSE", "my.model: fine detail 2", "test_logger.py"),
        ("ERROR", "my.model: bad", "test_logger.py"),
    ]


def test_uncaught_thread_exception_is_logged(channel, monkeypatch):
    from tritium_stub import logging_bridge

    monkeypatch.setattr(threading, "excepthook", logging_bridge._thread_excepthook)  # pytest hooks it too

    def work():
        raise KeyError("lost")

    t = threading.Thread(target=work, name="worker-1")
    t.start()
    t.join()
    ((level, msg, file),) = _logs(channel)
    assert level == "ERROR" and file == "test_logger.py"
    assert msg.startswith("Exception in thread worker-1:\nTraceback") and "KeyError: 'lost'" in msg
