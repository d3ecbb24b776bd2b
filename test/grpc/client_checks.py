"""Drives tritium's gRPC frontend with the real tritonclient.grpc (protocol-layer test).

Usage: client_checks.py <host:port>
Prints one JSON object: check name -> result (or {"exception": ...} when a check raised).
The vitest file test/grpc/server.test.ts starts the server against a fake core and asserts
on this output; the expectations live there, this script only observes.
"""

import json
import queue
import sys
import time
import traceback

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

URL = sys.argv[1]
results = {}


def check(name):
    def wrap(fn):
        try:
            results[name] = fn()
        except InferenceServerException as e:
            results[name] = {"exception": e.message(), "status": e.status()}
        except Exception as e:  # noqa: BLE001 - reported to the test
            results[name] = {"exception": repr(e), "trace": traceback.format_exc()}
        return fn

    return wrap


def err(fn):
    """Runs fn expecting an InferenceServerException; returns its status and message."""
    try:
        fn()
    except InferenceServerException as e:
        return {"status": e.status(), "message": e.message()}
    return {"status": "no error"}


client = grpcclient.InferenceServerClient(URL)


@check("health")
def _():
    return {
        "live": client.is_server_live(),
        "ready": client.is_server_ready(),
        "model_ready": client.is_model_ready("identity"),
        "unknown_model": client.is_model_ready("nope"),
    }


@check("server_metadata")
def _():
    return client.get_server_metadata(as_json=True)


@check("model_metadata")
def _():
    proto = client.get_model_metadata("identity")
    return {
        "json": client.get_model_metadata("identity", as_json=True),
        "shape": list(proto.inputs[0].shape),
        "versioned": client.get_model_metadata("identity", "1", as_json=True)["versions"],
    }


@check("model_config")
def _():
    proto = client.get_model_config("identity")
    return {
        "json": client.get_model_config("identity", as_json=True),
        "max_batch_size": proto.config.max_batch_size,
        "dims": list(proto.config.input[0].dims),
        "decoupled": client.get_model_config("decoupled").config.model_transaction_policy.decoupled,
    }


@check("statistics")
def _():
    proto = client.get_inference_statistics("identity")
    s = proto.model_stats[0]
    return {
        "json": client.get_inference_statistics(as_json=True),
        "success_ns": str(s.inference_stats.success.ns),
        "queue_count": s.inference_stats.queue.count,
        "batch_sizes": [b.batch_size for b in s.batch_stats],
        "response_stats_keys": sorted(s.response_stats.keys()),
        "unknown": err(lambda: client.get_inference_statistics("nope")),
    }


def make(dt, shape=(2, 3)):
    n = int(np.prod(shape))
    if dt == "BYTES":
        return np.array([f"s{i}-é".encode() if i % 2 else b"" for i in range(n)], dtype=np.object_).reshape(shape)
    if dt == "BOOL":
        return (np.arange(n) % 2 == 0).reshape(shape)
    np_dt = {
        "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
        "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
        "FP16": np.float16, "FP32": np.float32, "FP64": np.float64,
    }[dt]
    a = np.arange(n).reshape(shape).astype(np_dt)
    if dt.startswith("INT"):
        a = a - 3
    if dt == "UINT64":
        a[0, 0] = np.uint64(2**64 - 1)
    if dt == "INT64":
        a[0, 0] = np.int64(-(2**63))
    if dt.startswith("FP"):
        a = a / np_dt(3)
    return a


DATATYPES = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64",
             "FP16", "FP32", "FP64", "BYTES"]


@check("infer_raw")
def _():
    out = {}
    for dt in DATATYPES:
        data = make(dt)
        inp = grpcclient.InferInput("INPUT0", list(data.shape), dt)
        inp.set_data_from_numpy(data)
        r = client.infer("identity", [inp], request_id=f"id-{dt}")
        got = r.as_numpy("OUTPUT0")
        resp = r.get_response()
        out[dt] = {
            "equal": bool(np.array_equal(got, data)) and got.dtype == data.dtype,
            "shape": list(got.shape),
            "id": resp.id,
            "model_version": resp.model_version,
            "raw_count": len(resp.raw_output_contents),
            "outputs": len(resp.outputs),
        }
    return out


@check("infer_multi")
def _():
    a = make("FP32")
    b = make("BYTES", (3,))
    c = np.zeros((0, 4), dtype=np.int32)
    inputs = []
    for name, data in (("INPUT0", a), ("INPUT1", b), ("INPUT2", c)):
        i = grpcclient.InferInput(name, list(data.shape), np_to_triton_dtype(data.dtype))
        i.set_data_from_numpy(data)
        inputs.append(i)
    outputs = [grpcclient.InferRequestedOutput("OUTPUT2"), grpcclient.InferRequestedOutput("OUTPUT0")]
    r = client.infer("identity", inputs, outputs=outputs, parameters={"custom": "x", "n": 7, "f": 0.5, "flag": True},
                     priority=2, timeout=1000000, sequence_id=42, sequence_start=True)
    resp = r.get_response()
    return {
        "names": [o.name for o in resp.outputs],
        "raw_sizes": [len(x) for x in resp.raw_output_contents],
        "out0": bool(np.array_equal(r.as_numpy("OUTPUT0"), a)),
        "out2_shape": list(r.as_numpy("OUTPUT2").shape),
        "echo_params": {k: str(v).strip() for k, v in resp.parameters.items()},
    }


@check("classification")
def _():
    data = np.array([[0.1, 0.7, 0.2]], dtype=np.float32)
    i = grpcclient.InferInput("INPUT0", [1, 3], "FP32")
    i.set_data_from_numpy(data)
    r = client.infer("identity", [i], outputs=[grpcclient.InferRequestedOutput("OUTPUT0", class_count=2)])
    return [x.decode() for x in r.as_numpy("OUTPUT0").reshape(-1)]


def typed_request(dt, field, values, shape):
    req = service_pb2.ModelInferRequest(model_name="identity", id="typed")
    t = req.inputs.add(name="INPUT0", datatype=dt, shape=shape)
    getattr(t.contents, field).extend(values)
    return req


@check("infer_typed")
def _():
    stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(URL))
    out = {}
    cases = [
        ("BOOL", "bool_contents", [True, False, True], np.bool_),
        ("INT8", "int_contents", [-128, 5, 127], np.int8),
        ("INT16", "int_contents", [-300, 5, 300], np.int16),
        ("INT32", "int_contents", [-7, 0, 2**31 - 1], np.int32),
        ("INT64", "int64_contents", [-(2**63), 0, 2**63 - 1], np.int64),
        ("UINT8", "uint_contents", [0, 255, 7], np.uint8),
        ("UINT16", "uint_contents", [0, 65535, 7], np.uint16),
        ("UINT32", "uint_contents", [0, 2**32 - 1, 7], np.uint32),
        ("UINT64", "uint64_contents", [0, 2**64 - 1, 7], np.uint64),
        ("FP32", "fp32_contents", [0.5, -1.25, 3.0], np.float32),
        ("FP64", "fp64_contents", [0.1, -1e300, 3.0], np.float64),
    ]
    for dt, field, values, np_dt in cases:
        resp = stub.ModelInfer(typed_request(dt, field, values, [3]))
        got = np.frombuffer(resp.raw_output_contents[0], dtype=np_dt)
        out[dt] = bool(np.array_equal(got, np.array(values, dtype=np_dt)))
    resp = stub.ModelInfer(typed_request("BYTES", "bytes_contents", [b"ab", b"", b"xyz"], [3]))
    raw = resp.raw_output_contents[0]
    out["BYTES_raw"] = raw.hex()

    def rpc_error(req):
        try:
            stub.ModelInfer(req)
        except grpc.RpcError as e:
            return {"status": str(e.code()), "message": e.details()}
        return {"status": "no error"}

    both = typed_request("INT32", "int_contents", [1, 2, 3], [3])
    both.raw_input_contents.append(np.array([1, 2, 3], dtype=np.int32).tobytes())
    out["both"] = rpc_error(both)
    out["wrong_field"] = rpc_error(typed_request("INT32", "fp32_contents", [1.0, 2.0, 3.0], [3]))
    out["count"] = rpc_error(typed_request("INT32", "int_contents", [1, 2], [3]))
    out["fp16_typed"] = rpc_error(typed_request("FP16", "fp32_contents", [1.0], [1]))
    bad = typed_request("INT32", "int_contents", [1], [1])
    bad.parameters["triton_bogus"].bool_param = True
    out["reserved_param"] = rpc_error(bad)
    u = typed_request("INT32", "int_contents", [1], [1])
    u.parameters["custom"].uint64_param = 5
    out["uint64_custom"] = rpc_error(u)
    return out


@check("errors")
def _():
    i = grpcclient.InferInput("INPUT0", [4], "FP32")
    i.set_data_from_numpy(np.zeros(4, dtype=np.float32))
    short = grpcclient.InferInput("INPUT0", [4], "FP32")
    short.set_data_from_numpy(np.zeros(4, dtype=np.float32))
    short._raw_content = np.zeros(3, dtype=np.float32).tobytes()
    return {
        "unknown_model": err(lambda: client.infer("nope", [i])),
        "unknown_version": err(lambda: client.infer("identity", [i], model_version="9")),
        "decoupled_infer": err(lambda: client.infer("decoupled", [i])),
        "failing": err(lambda: client.infer("failing", [i])),
        "raw_size": err(lambda: client.infer("identity", [short])),
        "load": err(lambda: client.load_model("identity")),
        "unload": err(lambda: client.unload_model("identity")),
        "shm_register": err(lambda: client.register_system_shared_memory("r", "/k", 16)),
        "cuda_register": err(lambda: client.register_cuda_shared_memory("r", b"\0" * 64, 0, 16)),
        "shm_status": client.get_system_shared_memory_status(as_json=True),
        "shm_status_named": err(lambda: client.get_system_shared_memory_status("r")),
        "shm_unregister": err(lambda: (client.unregister_system_shared_memory(), client.unregister_cuda_shared_memory())),
        "cuda_status": client.get_cuda_shared_memory_status(as_json=True),
    }


@check("settings")
def _():
    return {
        "repository_index": client.get_model_repository_index(as_json=True),
        "trace": client.get_trace_settings(as_json=True),
        "log": client.get_log_settings(as_json=True),
        "log_update": client.update_log_settings({"log_verbose_level": 2, "log_info": False}, as_json=True),
        "log_bad": err(lambda: client.update_log_settings({"log_format": "weird"})),
        "log_file": err(lambda: client.update_log_settings({"log_file": "/tmp/x.log"})),
        "trace_file": err(lambda: client.update_trace_settings(settings={"trace_file": "/tmp/t"})),
        "trace_on": err(lambda: client.update_trace_settings(settings={"trace_level": ["TIMESTAMPS"]})),
        "trace_unknown": err(lambda: client.get_trace_settings(model_name="nomodel")),
    }


@check("async_infer")
def _():
    q = queue.Queue()
    for k in range(4):
        data = np.full((2,), k, dtype=np.int32)
        i = grpcclient.InferInput("INPUT0", [2], "INT32")
        i.set_data_from_numpy(data)
        client.async_infer("identity", [i], lambda result, error, k=k: q.put((k, result, error)), request_id=str(k))
    got = {}
    for _ in range(4):
        k, result, error = q.get(timeout=10)
        got[k] = None if error else result.as_numpy("OUTPUT0").tolist()
    return got


def final_flag(result):
    p = result.get_response().parameters
    return p["triton_final_response"].bool_param if "triton_final_response" in p else None


@check("stream")
def _():
    q = queue.Queue()
    client.start_stream(callback=lambda result, error: q.put((result, error)))
    n = np.array([4], dtype=np.int32)
    i = grpcclient.InferInput("IN", [1], "INT32")
    i.set_data_from_numpy(n)
    client.async_stream_infer("decoupled", [i], request_id="d-empty", enable_empty_final_response=True)
    client.async_stream_infer("decoupled", [i], request_id="d-plain")
    x = grpcclient.InferInput("INPUT0", [2], "FP32")
    x.set_data_from_numpy(np.array([1.5, 2.5], dtype=np.float32))
    client.async_stream_infer("identity", [x], request_id="ident")
    client.async_stream_infer("failing", [x], request_id="fail")
    client.async_stream_infer("nope", [x], request_id="unknown")
    client.async_stream_infer("identity", [x], request_id="after-errors")
    # 5 + 4 responses from the decoupled requests, 1 identity, 2 errors, 1 identity.
    events = []
    for _ in range(13):
        result, error = q.get(timeout=10)
        if error is not None:
            events.append({"error": error.message()})
        else:
            resp = result.get_response()
            out = result.as_numpy("OUT") if any(o.name == "OUT" for o in resp.outputs) else None
            events.append({
                "id": resp.id,
                "final": final_flag(result),
                "value": None if out is None else int(out[0]),
                "outputs": len(resp.outputs),
            })
    client.stop_stream()
    extra = q.qsize()
    return {"events": events, "extra": extra}


@check("stream_grpc_error")
def _():
    q = queue.Queue()
    client.start_stream(callback=lambda result, error: q.put((result, error)), headers={"triton_grpc_error": "true"})
    x = grpcclient.InferInput("INPUT0", [2], "FP32")
    x.set_data_from_numpy(np.array([1.5, 2.5], dtype=np.float32))
    client.async_stream_infer("identity", [x], request_id="ok")
    client.async_stream_infer("failing", [x], request_id="fail")
    events = []
    for _ in range(2):
        result, error = q.get(timeout=10)
        events.append({"status": error.status(), "message": error.message()} if error else {"id": result.get_response().id})
    client.stop_stream()
    return events


@check("cancellation")
def _():
    i = grpcclient.InferInput("INPUT0", [1], "FP32")
    i.set_data_from_numpy(np.zeros(1, dtype=np.float32))
    e = err(lambda: client.infer("slow", [i], client_timeout=0.3))
    time.sleep(0.3)
    return e


@check("health_service")
def _():
    ch = grpc.insecure_channel(URL)
    check_rpc = ch.unary_unary("/grpc.health.v1.Health/Check", request_serializer=lambda x: x,
                               response_deserializer=lambda x: x)
    return check_rpc(b"").hex()


@check("large")
def _():
    data = np.random.default_rng(0).random((5 * 1024 * 1024,), dtype=np.float32)  # 20 MiB
    i = grpcclient.InferInput("INPUT0", list(data.shape), "FP32")
    i.set_data_from_numpy(data)
    r = client.infer("identity", [i])
    return bool(np.array_equal(r.as_numpy("OUTPUT0"), data))


client.close()
print(json.dumps(results))
