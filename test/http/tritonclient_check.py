"""Drives the HTTP frontend with the real tritonclient.http client (protocol-layer check).

Usage: python tritonclient_check.py <host:port>. Prints one line per check; exits non-zero on
the first failure. The server behind the URL is the fake core of test/http/protocol-core.ts.
"""
import sys

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

url = sys.argv[1]
client = httpclient.InferenceServerClient(url=url)


def check(name, cond):
    if not cond:
        print(f"FAIL {name}", flush=True)
        sys.exit(1)
    print(f"ok {name}", flush=True)


check("server live", client.is_server_live())
check("server ready", client.is_server_ready())
check("model ready", client.is_model_ready("identity"))
check("broken model not ready", not client.is_model_ready("broken"))
meta = client.get_server_metadata()
check("server metadata", meta["name"] == "triton" and "statistics" in meta["extensions"])
md = client.get_model_metadata("identity")
check("model metadata", md["name"] == "identity" and md["inputs"][0]["name"] == "INPUT0")
cfg = client.get_model_config("identity")
check("model config", cfg["backend"] == "python")
stats = client.get_inference_statistics("identity")
check("statistics", stats["model_stats"][0]["inference_stats"]["success"]["ns"] == 2**60 + 7)
check("repository index", any(e["name"] == "identity" for e in client.get_model_repository_index()))

x = np.arange(6, dtype=np.float32).reshape(2, 3)
s = np.array([b"hello", "wörld".encode(), b""], dtype=np.object_)

for binary_in in (True, False):
    for binary_out in (True, False):
        i0 = httpclient.InferInput("INPUT0", list(x.shape), "FP32")
        i0.set_data_from_numpy(x, binary_data=binary_in)
        i1 = httpclient.InferInput("INPUT1", list(s.shape), "BYTES")
        i1.set_data_from_numpy(s, binary_data=binary_in)
        outs = [
            httpclient.InferRequestedOutput("OUTPUT0", binary_data=binary_out),
            httpclient.InferRequestedOutput("OUTPUT1", binary_data=binary_out),
        ]
        res = client.infer("identity", [i0, i1], outputs=outs, request_id="r7")
        tag = f"in={'bin' if binary_in else 'json'} out={'bin' if binary_out else 'json'}"
        check(f"infer FP32 {tag}", np.array_equal(res.as_numpy("OUTPUT0"), x))
        # JSON BYTES outputs come back as str (same as with Triton), binary ones as bytes.
        got = [v.encode() if isinstance(v, str) else v for v in res.as_numpy("OUTPUT1").reshape(-1)]
        check(f"infer BYTES {tag}", got == list(s))
        check(f"response id {tag}", res.get_response()["id"] == "r7")

# Default path: no outputs listed => binary_data_output true.
i0 = httpclient.InferInput("INPUT0", [3], "INT64")
big = np.array([2**62 + 1, -(2**63), 5], dtype=np.int64)
i0.set_data_from_numpy(big)
res = client.infer("identity", [i0])
check("infer INT64 default outputs", np.array_equal(res.as_numpy("OUTPUT0"), big))
i0.set_data_from_numpy(big, binary_data=False)
res = client.infer("identity", [i0], outputs=[httpclient.InferRequestedOutput("OUTPUT0", binary_data=False)])
check("infer INT64 JSON exact", np.array_equal(res.as_numpy("OUTPUT0"), big))

# FP16 binary both ways.
h = np.array([1.5, -2.0], dtype=np.float16)
i0 = httpclient.InferInput("INPUT0", [2], "FP16")
i0.set_data_from_numpy(h)
res = client.infer("identity", [i0])
check("infer FP16 binary", np.array_equal(res.as_numpy("OUTPUT0"), h))

# Compression both ways.
i0 = httpclient.InferInput("INPUT0", list(x.shape), "FP32")
i0.set_data_from_numpy(x)
for algo in ("gzip", "deflate"):
    res = client.infer(
        "identity", [i0], request_compression_algorithm=algo, response_compression_algorithm=algo
    )
    check(f"infer {algo} both ways", np.array_equal(res.as_numpy("OUTPUT0"), x))

# Custom parameters pass through (the fake model echoes them back).
res = client.infer("identity", [i0], parameters={"echo_params": True, "mode": "fast", "n": 3})
check("custom parameters", res.get_response()["parameters"] == {"mode": "fast", "n": 3, "binary_data_output": True})

# Errors keep their status code and message.
try:
    client.get_model_metadata("missing")
    check("unknown model raises", False)
except InferenceServerException as e:
    check("unknown model 404", e.status() == "404" and "'missing' is not found" in e.message())

try:
    client.infer("identity", [i0], parameters={"fail": "model exploded"})
    check("model error raises", False)
except InferenceServerException as e:
    check("model error 500", e.status() == "500" and e.message() == "model exploded")

try:
    d = httpclient.InferInput("IN", [1], "INT32")
    d.set_data_from_numpy(np.array([1], dtype=np.int32))
    client.infer("decoupled", [d])
    check("decoupled raises", False)
except InferenceServerException as e:
    check("decoupled 501", e.status() == "501" and "decoupled" in e.message())

try:
    client.load_model("identity")
    check("load raises", False)
except InferenceServerException as e:
    check("load refused", "polling is enabled" in e.message())

client.unregister_system_shared_memory()
client.unregister_cuda_shared_memory()
check("shm unregister-all", client.get_system_shared_memory_status() == [])
client.close()
print("ALL OK", flush=True)
