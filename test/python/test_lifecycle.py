"""initialize / auto_complete_config / finalize, and the example repository's models."""

import json
import os

import numpy as np

from tritium_stub.runtime import Runtime
from tritium_stub.state import STATE

REPO = os.path.join(os.path.dirname(__file__), "..", "..", "python_models")


def test_initialize_gets_args_and_sees_decoupled_policy(stub):
    reply = stub.load("""
import triton_python_backend_utils as pb_utils
class TritonPythonModel:
    def initialize(self, args):
        self.args = args
        self.config = pb_utils.ModelConfig  # pure-Python part is there at import
""")
    assert reply == {"t": "init_ok"}
    assert stub.rt.model.args == stub.args and len(stub.args) == 7
    assert STATE.initialized and not STATE.decoupled


def test_initialize_error_text(stub):
    reply = stub.load("""
class TritonPythonModel:
    def initialize(self, args):
        lorem_ipsum
""")
    assert reply == {
        "t": "init_err",
        "msg": f"NameError: name 'lorem_ipsum' is not defined\n\nAt:\n  {STATE.model_file}(4): initialize\n",
    }
    assert not STATE.initialized


def test_import_error_is_an_init_error(stub):
    reply = stub.load("import no_such_module_here\n")
    assert reply["t"] == "init_err"
    assert reply["msg"].startswith("ModuleNotFoundError: No module named 'no_such_module_here'")


def test_sys_argv_and_module_name(stub):
    stub.load("""
import sys
ARGV = list(sys.argv)
class TritonPythonModel:
    def execute(self, requests):
        return [None]
""")
    module = type(stub.rt.model).__module__
    assert module == "1.model"


def test_finalize_errors_are_logged_at_info(stub):
    stub.load("""
class TritonPythonModel:
    def execute(self, requests):
        return None
    def finalize(self):
        undefined_name
""")
    stub.fin()
    assert stub.ch.sent[-2] == {"t": "fin_done"}
    log = stub.ch.sent[-1]
    assert log["t"] == "log" and log["level"] == "INFO" and "NameError" in log["msg"]
    assert STATE.finalizing


def _autocomplete(channel, model_repo, source, config):
    path = model_repo("ac", source)
    rt = Runtime(path, "ac", "autocomplete", 0, channel)
    channel.inbox = [{"t": "autocomplete", "config": json.dumps(config)}]
    assert rt.serve() == 0
    return channel.sent[-1]


BASE = {"name": "ac", "max_batch_size": 0, "input": [], "output": []}


def test_autocomplete_adds_tensors(channel, model_repo, fresh_state):
    with open(os.path.join(REPO, "auto_complete", "1", "model.py")) as f:
        reply = _autocomplete(channel, model_repo, f.read(), BASE)
    assert reply["t"] == "autocomplete_ok"
    cfg = json.loads(reply["config"])
    assert cfg["max_batch_size"] == 8 and cfg["dynamic_batching"] == {}
    assert [i["name"] for i in cfg["input"]] == ["INPUT0"]
    assert [o["name"] for o in cfg["output"]] == ["OUTPUT0"]


def test_autocomplete_without_method_echoes_config(channel, model_repo, fresh_state):
    reply = _autocomplete(channel, model_repo, "class TritonPythonModel:\n    pass\n", BASE)
    assert reply == {"t": "autocomplete_ok", "config": json.dumps(BASE)}


def test_autocomplete_must_return_model_config(channel, model_repo, fresh_state):
    reply = _autocomplete(
        channel,
        model_repo,
        """
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        return None
""",
        BASE,
    )
    assert reply == {
        "t": "autocomplete_err",
        "msg": "auto_complete_config function in model 'ac' must return a valid pb.ModelConfig object.",
    }


def test_autocomplete_value_error(channel, model_repo, fresh_state):
    reply = _autocomplete(
        channel,
        model_repo,
        """
class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.set_max_batch_size(-1)
        return config
""",
        dict(BASE, max_batch_size=4),
    )
    assert reply["t"] == "autocomplete_err"
    assert reply["msg"].startswith(
        "ValueError: configuration specified max_batch_size 4, but in "
        "auto-complete-config function for model 'ac' specified "
        "max_batch_size -1\n\nAt:\n"
    )


# --- the example repository ----------------------------------------------------------------


def load_example(stub, name, outputs):
    src_dir = os.path.join(REPO, name, "1")
    extra = {
        f: open(os.path.join(src_dir, f)).read() for f in os.listdir(src_dir) if f.endswith(".py") and f != "model.py"
    }
    with open(os.path.join(src_dir, "model.py")) as f:
        assert stub.load(f.read(), outputs=outputs, extra_files=extra) == {"t": "init_ok"}


def test_example_add_sub(stub):
    load_example(stub, "add_sub", ("OUTPUT0", "OUTPUT1"))
    a, b = np.array([1, 2, 3, 4], np.float32), np.array([4, 3, 2, 1], np.float32)
    done = stub.exec(stub.request({"INPUT0": a, "INPUT1": b}, outs=["OUTPUT0", "OUTPUT1"]))
    out0, out1 = (stub.ch.read_output(d) for d in done["resps"][0]["outs"])
    assert out0.tolist() == [5, 5, 5, 5] and out1.tolist() == [-3, -1, 1, 3]


def test_example_string_identity(stub):
    load_example(stub, "string_identity", ("OUTPUT0", "UPPER"))
    words = np.array([["héllo".encode(), b"World"]], dtype=np.object_)
    done = stub.exec(stub.request({"INPUT0": words}, outs=["OUTPUT0", "UPPER"]))
    same, upper = (stub.ch.read_output(d) for d in done["resps"][0]["outs"])
    assert same.tolist() == words.tolist()
    assert upper.tolist() == [["HÉLLO".encode(), b"WORLD"]]


def test_example_error_model(stub):
    load_example(stub, "error_model", ("OUTPUT0",))
    done = stub.exec(
        stub.request({"INPUT0": np.array([-1], np.int32)}), stub.request({"INPUT0": np.array([5], np.int32)})
    )
    assert done["resps"][0] == {"outs": [], "err": [3, "INPUT0 must not be negative"]}
    assert stub.ch.read_output(done["resps"][1]["outs"][0]).tolist() == [5]
    done = stub.exec(stub.request({"INPUT0": np.array([1], np.int32)}, params='{"raise": true}'))
    assert done["err"].startswith(
        "Failed to process the request(s) for model 'm_0', message: TritonModelException: Intentional Error\n\nAt:\n"
    )


def test_example_multi_file(stub):
    load_example(stub, "multi_file", ("OUTPUT0",))
    done = stub.exec(stub.request({"INPUT0": np.array([1, 2], np.float32)}))
    assert stub.ch.read_output(done["resps"][0]["outs"][0]).tolist() == [3, 5]


def test_example_init_args(stub):
    load_example(stub, "init_args", ("ARGS",))
    done = stub.exec(stub.request({"IN": np.zeros(1, np.float32)}, outs=["ARGS"]))
    (value,) = stub.ch.read_output(done["resps"][0]["outs"][0]).tolist()
    assert json.loads(value) == stub.args
