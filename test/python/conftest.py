"""Shared fixtures: the shim on sys.path, an in-memory channel, and a model-file factory."""

import json
import os
import struct
import sys
import textwrap

import msgpack
import numpy as np
import pytest

STUB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "stub")
sys.path.insert(0, os.path.abspath(STUB_DIR))

from tritium_stub import runtime  # noqa: E402
from tritium_stub.state import STATE  # noqa: E402

runtime.install_shim()


class FakeChannel:
    """In-memory stand-in for ipc.Channel: byte arenas, a message inbox, a sent list."""

    def __init__(self):
        self.segments = {"n0": bytearray(1 << 20), "s0": bytearray(1 << 20)}
        self._in_pos = 64
        self._out_pos = 0
        self.blocks = {}  # (segment, offset) -> nbytes of live output blocks
        self.inbox = []
        self.sent = []

    # --- the Channel API the stub uses ---
    def tensor_view(self, seg, off, nbytes):
        return memoryview(self.segments[seg])[off : off + nbytes]

    def segment_buffer(self, seg):
        return memoryview(self.segments[seg])

    def alloc(self, nbytes):
        off = self._out_pos
        self._out_pos += max(nbytes, 1) + 63 & ~63
        self.blocks[("s0", off)] = nbytes
        return "s0", off, memoryview(self.segments["s0"])[off : off + nbytes]

    def free(self, seg, off):
        del self.blocks[(seg, off)]

    def send(self, msg):
        # Round-trip through msgpack: whatever the stub sends must be encodable.
        self.sent.append(msgpack.unpackb(msgpack.packb(msg, use_bin_type=True), raw=False))

    def recv(self, timeout=None):
        if not self.inbox:
            raise EOFError("no more messages")
        return self.inbox.pop(0)

    # --- test helpers ---
    def put_input(self, name, value, datatype=None):
        """Copy a tensor into the input arena; returns its descriptor."""
        array = np.asarray(value)
        if array.dtype == np.object_ or array.dtype.kind == "S":
            datatype = "BYTES"
            data = b"".join(
                struct.pack("<I", len(x)) + x
                for x in (v if isinstance(v, bytes) else str(v).encode() for v in array.reshape(-1).tolist())
            )
        else:
            datatype = datatype or {"f": "FP", "i": "INT", "u": "UINT", "b": "BOOL"}[array.dtype.kind]
            if datatype in ("FP", "INT", "UINT"):
                datatype += str(array.dtype.itemsize * 8)
            data = array.tobytes()
        off = self._in_pos
        self.segments["n0"][off : off + len(data)] = data
        self._in_pos += len(data) + 63 & ~63
        return [name, datatype, list(array.shape), "n0", off, len(data)]

    def cancel_word(self):
        off = self._in_pos
        self._in_pos += 64
        return ["n0", off]

    def read_output(self, desc):
        """An output's array, from its block or, for a small one, from the message itself."""
        if len(desc) == 4:
            name, datatype, shape, raw = desc
        else:
            name, datatype, shape, seg, off, nbytes = desc
            raw = bytes(self.segments[seg][off : off + nbytes])
        if datatype == "BYTES":
            from triton_python_backend_utils import deserialize_bytes_tensor

            return deserialize_bytes_tensor(raw).reshape(shape)
        from tritium_stub.dtypes import FIXED

        return np.frombuffer(raw, dtype=FIXED[datatype]).reshape(shape)

    def of_type(self, t):
        return [m for m in self.sent if m["t"] == t]


@pytest.fixture
def channel():
    ch = FakeChannel()
    saved = STATE.channel
    STATE.channel = ch
    yield ch
    STATE.channel = saved


def make_request(ch, rid, inputs=None, outs=("OUTPUT0",), params=None, cflag=True, **extra):
    m = {
        "rid": rid,
        "id": extra.pop("id", ""),
        "corr": extra.pop("corr", 0),
        "flags": extra.pop("flags", 0),
        "timeout": extra.pop("timeout", 0),
        "params": params,
        "outs": list(outs),
        "inputs": [ch.put_input(k, v) for k, v in (inputs or {}).items()],
    }
    if cflag:
        m["cflag"] = ch.cancel_word()
    m.update(extra)
    return m


@pytest.fixture
def model_repo(tmp_path):
    """write(name, source, version="1") -> path of <tmp>/<name>/<version>/model.py.

    Cleans sys.path and sys.modules afterwards: every test imports a module named `1.model`.
    """
    saved_path = list(sys.path)
    written = []

    def write(name, source, version="1", file="model.py", extra_files=None):
        vdir = tmp_path / name / version
        vdir.mkdir(parents=True, exist_ok=True)
        path = vdir / file
        path.write_text(textwrap.dedent(source))
        for fname, text in (extra_files or {}).items():
            (vdir / fname).write_text(textwrap.dedent(text))
        sys.path.extend([str(vdir), str(vdir.parent)])
        written.append(version)
        return str(path)

    yield write
    sys.path[:] = saved_path
    for key in list(sys.modules):
        if any(key == v or key.startswith(v + ".") for v in written) or key in ("helper", "helper2", "model"):
            del sys.modules[key]


@pytest.fixture
def fresh_state():
    """Reset the process-wide stub state a Runtime sets up."""
    saved = {k: getattr(STATE, k) for k in STATE.__slots__}
    yield STATE
    for k, v in saved.items():
        setattr(STATE, k, v)


class StubHarness:
    """Drives a Runtime message by message over a FakeChannel."""

    def __init__(self, write, channel):
        self.write = write
        self.ch = channel
        self.rt = None
        self._batch = 0
        self._rid = 0

    def load(
        self, source, outputs=("OUTPUT0",), decoupled=False, name="m_0", log_verbose=0, async_limit=None, **write_kwargs
    ):
        from tritium_stub.runtime import Runtime

        path = self.write("m", source, **write_kwargs)
        config = {
            "name": "m",
            "max_batch_size": 0,
            "output": [{"name": o, "data_type": "TYPE_FP32", "dims": [-1]} for o in outputs],
        }
        if decoupled:
            config["model_transaction_policy"] = {"decoupled": True}
        self.args = {
            "model_config": json.dumps(config),
            "model_instance_kind": "CPU",
            "model_instance_name": name,
            "model_instance_device_id": "0",
            "model_repository": os.path.dirname(os.path.dirname(path)),
            "model_version": "1",
            "model_name": "m",
        }
        self.rt = Runtime(path, name, "instance", log_verbose, self.ch)
        self.rt._init(self.args, async_limit)  # async_limit: what Node's init says (max-async-executes)
        return self.ch.sent[-1]

    def request(self, inputs=None, **kw):
        self._rid += 1
        return make_request(self.ch, self._rid, inputs, **kw)

    def exec(self, *requests):
        self._batch += 1
        self.rt._exec({"t": "exec", "id": self._batch, "reqs": list(requests)})
        done = self.ch.of_type("exec_done")[-1]
        assert done["id"] == self._batch
        return done

    def fin(self):
        self.rt._fin()


@pytest.fixture
def stub(model_repo, channel, fresh_state):
    return StubHarness(model_repo, channel)
