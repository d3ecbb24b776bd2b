"""Conformance check with the real tritonclient.http against a running tritium.

Usage: python tritonclient_http_check.py <host:port>. Prints one line per check and exits
non-zero on the first failure, so the vitest wrapper can show what broke.
"""
import sys

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

url = sys.argv[1]
client = httpclient.InferenceServerClient(url)


def check(name, cond):
    if not cond:
        print(f"FAIL {name}")
        sys.exit(1)
    print(f"ok {name}")


check("live", client.is_server_live())
check("ready", client.is_server_ready())
check("model ready", client.is_model_ready("add_sub"))
check("model not ready for unknown", not client.is_model_ready("nope"))
md = client.get_server_metadata()
check("server metadata", md["name"] == "triton" and "statistics" in md["extensions"])
mm = client.get_model_metadata("add_sub")
check("model metadata", mm["name"] == "add_sub" and mm["inputs"][0]["datatype"] == "FP32")
cfg = client.get_model_config("add_sub")
check("model config", cfg["name"] == "add_sub" and cfg["backend"] == "python")

a = np.arange(4, dtype=np.float32)
b = np.ones(4, dtype=np.float32)


def add_sub(binary):
    inputs = [httpclient.InferInput("INPUT0", [4], "FP32"), httpclient.InferInput("INPUT1", [4], "FP32")]
    inputs[0].set_data_from_numpy(a, binary_data=binary)
    inputs[1].set_data_from_numpy(b, binary_data=binary)
    outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary), httpclient.InferRequestedOutput("OUTPUT1", binary_data=binary)]
    return client.infer("add_sub", inputs, outputs=outputs, request_id="abc")


for binary in (True, False):
    r = add_sub(binary)
    check(f"infer binary={binary}", np.allclose(r.as_numpy("OUTPUT0"), a + b) and np.allclose(r.as_numpy("OUTPUT1"), a - b))
    check(f"response id binary={binary}", r.get_response()["id"] == "abc")

# Default infer (no outputs listed) is binary both ways.
inputs = [httpclient.InferInput("INPUT0", [4], "FP32"), httpclient.InferInput("INPUT1", [4], "FP32")]
inputs[0].set_data_from_numpy(a)
inputs[1].set_data_from_numpy(b)
r = client.infer("add_sub", inputs)
check("infer default outputs", np.allclose(r.as_numpy("OUTPUT0"), a + b))

# Every numeric datatype through the identity model, binary.
DTYPES = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "FP16": np.float16, "FP32": np.float32, "FP64": np.float64,
}
for tname, dt in DTYPES.items():
    arr = (np.arange(6) % 2).astype(dt) if dt == np.bool_ else np.arange(6).astype(dt)
    inp = httpclient.InferInput(f"IN_{tname}", [6], tname)
    inp.set_data_from_numpy(arr)
    r = client.infer("identity_all", [inp], outputs=[httpclient.InferRequestedOutput(f"OUT_{tname}")])
    check(f"identity {tname}", np.array_equal(r.as_numpy(f"OUT_{tname}"), arr))

# BYTES, binary and JSON.
strings = np.array([b"alpha", b"", "gr\u00fc\u00df".encode()], dtype=np.object_)
for binary in (True, False):
    inp = httpclient.InferInput("IN_STRING", [3], "BYTES")
    inp.set_data_from_numpy(strings, binary_data=binary)
    r = client.infer("identity_all", [inp], outputs=[httpclient.InferRequestedOutput("OUT_STRING", binary_data=binary)])
    out = r.as_numpy("OUT_STRING")
    check(f"bytes binary={binary}", [x if isinstance(x, bytes) else x.encode() for x in out] == list(strings))

# Error codes surface as InferenceServerException with Triton's texts.
try:
    client.infer("nope", inputs)
    check("unknown model raises", False)
except InferenceServerException as e:
    check("unknown model raises", "Request for unknown model: 'nope' is not found" in e.message())

mode = httpclient.InferInput("MODE", [1], "BYTES")
mode.set_data_from_numpy(np.array([b"raise"], dtype=np.object_))
try:
    client.infer("misbehave", [mode])
    check("execute exception raises", False)
except InferenceServerException as e:
    check("execute exception raises", "Failed to process the request(s) for model" in e.message() and "intentional failure" in e.message())

bad = [httpclient.InferInput("INPUT0", [4], "FP32")]
bad[0].set_data_from_numpy(a)
try:
    client.infer("add_sub", bad)
    check("validation error raises", False)
except InferenceServerException as e:
    check("validation error raises", "expected 2 inputs but got 1 inputs" in e.message())

stats = client.get_inference_statistics("add_sub")
s = stats["model_stats"][0]
check("statistics", s["name"] == "add_sub" and int(s["inference_stats"]["success"]["count"]) >= 3)
print("all ok")
