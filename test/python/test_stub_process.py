"""The real stub process (stub/main.py) over real shared memory, driven by NodeEmulator."""

import json
import os
import signal
import subprocess
import sys
import uuid

import numpy as np
import pytest

from node_emulator import NodeEmulator
from tritium_stub import ipc

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MAIN = os.path.join(ROOT, "stub", "main.py")
REPO = os.path.join(ROOT, "python_models")


NATIVE_BUILT = ipc.load_native()[0] is not None
pytestmark = pytest.mark.skipif(not NATIVE_BUILT, reason="_tritium_ipc is not built (npm run build:native)")


@pytest.fixture
def node():
    emulator = NodeEmulator(f"tritium_{os.getpid()}_{uuid.uuid4().hex[:8]}_test")
    emulator.seen = []
    procs = []

    def spawn(model, name, mode="instance", parent_pid=None, verbose=0, env=None):
        model_file = model if model.endswith(".py") else os.path.join(REPO, model, "1", "model.py")
        child_env = dict(os.environ)
        child_env.update(env or {})
        p = subprocess.Popen(
            [
                sys.executable,
                MAIN,
                model_file,
                emulator.region,
                str(1 << 20),
                str(parent_pid or os.getpid()),
                name,
                mode,
                str(verbose),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=child_env,
        )
        procs.append(p)
        return p

    emulator.spawn = spawn
    yield emulator
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
    emulator.close()


def init_args(model, instance):
    cfg = json.dumps(
        {
            "name": model,
            "max_batch_size": 0,
            "output": [{"name": n, "data_type": "TYPE_FP32", "dims": [4]} for n in ("OUTPUT0", "OUTPUT1")],
        }
    )
    return {
        "model_config": cfg,
        "model_instance_kind": "CPU",
        "model_instance_name": instance,
        "model_instance_device_id": "0",
        "model_repository": os.path.join(REPO, model),
        "model_version": "1",
        "model_name": model,
    }


def test_add_sub_end_to_end(node):
    proc = node.spawn("add_sub", "add_sub_0_0")
    hello = node.pop()
    assert hello == {"t": "hello", "pid": proc.pid}
    node.push({"t": "init", "args": init_args("add_sub", "add_sub_0_0")})
    assert node.pop_until("init_ok") == {"t": "init_ok"}
    proc.send_signal(signal.SIGTERM)  # ignored, like Triton's stub
    # 100 elements: 400 bytes per output, above INLINE_OUTPUT_BYTES, so the outputs take blocks.
    a, b = np.arange(100, dtype=np.float32), np.full(100, 0.5, np.float32)
    outs = add_sub_outputs(node, 1, a, b)
    assert [o[:3] + [len(o)] for o in outs] == [["OUTPUT0", "FP32", [100], 6], ["OUTPUT1", "FP32", [100], 6]]
    assert any(m["t"] == "seg" for m in node.seen)  # the output segment was announced first
    assert np.frombuffer(node.read(outs[0]), np.float32).tolist() == (a + b).tolist()
    assert np.frombuffer(node.read(outs[1]), np.float32).tolist() == (a - b).tolist()
    node.push({"t": "release", "blocks": [[o[3], o[4]] for o in outs]})
    node.push({"t": "fin"})
    assert node.pop_until("fin_done") == {"t": "fin_done"}
    assert proc.wait(timeout=10) == 0
    assert b"Cleaning up..." in proc.stdout.read()  # finalize's print() reached stdout


def add_sub_outputs(node, batch, a, b, rel=None):
    """The output descriptors of add_sub run by the stub on `a` and `b` (one request)."""
    msg = {
        "t": "exec",
        "id": batch,
        "reqs": [
            {
                "rid": batch,
                "id": "",
                "corr": 0,
                "flags": 0,
                "timeout": 0,
                "params": None,
                "outs": ["OUTPUT0", "OUTPUT1"],
                "inputs": [
                    node.put_input("INPUT0", "FP32", list(a.shape), a.tobytes()),
                    node.put_input("INPUT1", "FP32", list(b.shape), b.tobytes()),
                ],
                "cflag": None,
            }
        ],
    }
    if rel:
        msg["rel"] = rel
    node.push(msg)
    done = node.pop_until("exec_done")
    assert "err" not in done
    return done["resps"][0]["outs"]


def test_small_outputs_travel_inside_exec_done(node):
    """Outputs of at most INLINE_OUTPUT_BYTES come as `[name, datatype, shape, data]` in the
    message (docs/ipc.md): the stub allocates no output block, so it announces no segment and
    there is nothing to release."""
    node.spawn("add_sub", "add_sub_0_0")
    node.pop()
    node.push({"t": "init", "args": init_args("add_sub", "add_sub_0_0")})
    node.pop_until("init_ok")
    a, b = np.array([1, 2, 3, 4], np.float32), np.array([0.5, 0.5, 0.5, 0.5], np.float32)
    for batch in (1, 2, 3):
        outs = add_sub_outputs(node, batch, a, b)
        assert [o[:3] for o in outs] == [["OUTPUT0", "FP32", [4]], ["OUTPUT1", "FP32", [4]]]
        assert np.frombuffer(outs[0][3], np.float32).tolist() == [1.5, 2.5, 3.5, 4.5]
        assert np.frombuffer(outs[1][3], np.float32).tolist() == [0.5, 1.5, 2.5, 3.5]
    assert not any(m["t"] == "seg" for m in node.seen)
    # 64 float32 are exactly INLINE_OUTPUT_BYTES (256): still inline; 65 take a block.
    assert [len(o) for o in add_sub_outputs(node, 4, np.ones(64, np.float32), np.ones(64, np.float32))] == [4, 4]
    assert [len(o) for o in add_sub_outputs(node, 5, np.ones(65, np.float32), np.ones(65, np.float32))] == [6, 6]
    node.push({"t": "fin"})
    node.pop_until("fin_done")


def test_release_piggybacked_on_exec_frees_output_blocks(node):
    """Node sends output releases as `rel` on the next exec (docs/ipc.md): the stub frees
    them first, so the next batch's outputs land in the same blocks."""
    node.spawn("add_sub", "add_sub_0_0")
    node.pop()
    node.push({"t": "init", "args": init_args("add_sub", "add_sub_0_0")})
    node.pop_until("init_ok")
    a = np.ones(100, np.float32)  # above INLINE_OUTPUT_BYTES: the outputs take blocks

    first = add_sub_outputs(node, 1, a, a)
    second = add_sub_outputs(node, 2, a, a, rel=[[o[3], o[4]] for o in first])
    assert [(o[3], o[4]) for o in second] == [(o[3], o[4]) for o in first]
    node.push({"t": "fin"})
    node.pop_until("fin_done")


def test_stub_logs_its_ipc_path(node):
    node.spawn(
        "add_sub", "add_sub_0_0", verbose=1, env={"TRITIUM_STUB_SPIN_MODE": "never", "TRITIUM_STUB_SPIN_US": "20"}
    )
    node.pop()
    node.push({"t": "init", "args": init_args("add_sub", "add_sub_0_0")})
    node.pop_until("init_ok")
    logs = [m["msg"] for m in node.seen if m["t"] == "log" and "IPC path" in m["msg"]]
    assert len(logs) == 1
    assert "native (_tritium_ipc)" in logs[0] and "spin-mode=never, spin-us=20" in logs[0]
    node.push({"t": "fin"})
    node.pop_until("fin_done")


def test_stub_without_its_native_module_stops_saying_how_to_build_it(node, tmp_path):
    p = node.spawn("add_sub", "add_sub_0_0", env={"TRITIUM_STUB_NATIVE_DIR": str(tmp_path)})
    _, err = p.communicate(timeout=30)
    assert p.returncode != 0
    text = err.decode()
    assert "the stub needs its native IPC module _tritium_ipc" in text and "npm run build:native" in text


def test_autocomplete_process(node):
    proc = node.spawn("auto_complete", "auto_complete", mode="autocomplete")
    node.pop()
    node.push(
        {
            "t": "autocomplete",
            "config": json.dumps({"name": "auto_complete", "max_batch_size": 0, "input": [], "output": []}),
        }
    )
    reply = node.pop_until("autocomplete_ok")
    assert json.loads(reply["config"])["max_batch_size"] == 8
    assert proc.wait(timeout=10) == 0


def test_stub_exits_when_its_parent_dies(node):
    parent = subprocess.Popen(["sleep", "30"])
    proc = node.spawn("add_sub", "add_sub_0_0", parent_pid=parent.pid)
    node.pop()
    parent.kill()
    parent.wait()
    assert proc.wait(timeout=5) == 1
    assert b"Non-graceful termination detected." in proc.stderr.read()


def test_interpreter_is_prepared_like_triton(node, tmp_path):
    version_dir = tmp_path / "probe" / "3"
    version_dir.mkdir(parents=True)
    (version_dir / "model.py").write_text(
        "import json, sys\n"
        "import triton_python_backend_utils as pb_utils\n"
        "class TritonPythonModel:\n"
        "    def initialize(self, args):\n"
        "        raise Exception(json.dumps({'argv': sys.argv, 'path': sys.path,\n"
        "                                    'module': __name__, 'dir': pb_utils.get_model_dir()}))\n"
    )
    node.spawn(str(version_dir / "model.py"), "probe_0")
    node.pop()
    node.push({"t": "init", "args": init_args("probe", "probe_0")})
    reply = node.pop()
    while reply["t"] != "init_err":
        reply = node.pop()
    seen = json.loads(reply["msg"].split("\n")[0][len("Exception: ") :])
    stub_dir = os.path.join(ROOT, "stub")
    assert seen["argv"] == [""]
    assert seen["path"][-3:] == [str(version_dir), str(version_dir.parent), stub_dir]
    assert stub_dir not in seen["path"][:-1]
    assert seen["module"] == "3.model" and seen["dir"] == str(version_dir)
