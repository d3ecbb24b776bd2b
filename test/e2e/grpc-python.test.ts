/**
 * End-to-end conformance of the gRPC frontend with the real CLI, real Python stubs and the real
 * `tritonclient.grpc` from PyPI: health, metadata, config, statistics,
 * `infer` / `async_infer` with raw tensors of every datatype and BYTES, typed `contents`, a
 * message above gRPC's 4 MiB default, Triton's status codes, and client cancellation and
 * deadlines observed by the model through `request.is_cancelled()`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTritium, stopAndExpectNoShm, type Tritium, pythonResult } from '../helpers/server.js';
import { repoWithTwins, tempDir, waitForJson } from './twin-helpers.js';

let server: Tritium;
let url: string;
let markers: string;

beforeAll(async () => {
  const repo = repoWithTwins(['add_sub', 'identity_all', 'misbehave', 'error_model', 'square_int32'], ['cancel_loop']);
  markers = tempDir('tritium-grpc-');
  server = await startTritium({ repos: [repo] });
  url = `127.0.0.1:${server.grpcPort}`;
}, 120_000);

afterAll(() => stopAndExpectNoShm(server));

/** Runs a tritonclient.grpc script (prelude: client `c`, `err()`, numpy); returns its JSON. */
async function run(body: string): Promise<any> {
  return pythonResult(
    String.raw`
import json, queue, sys, time
import numpy as np
import grpc
import tritonclient.grpc as g
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException
URL = sys.argv[1] if len(sys.argv) > 1 else ${JSON.stringify(url)}
c = g.InferenceServerClient(URL)
def err(fn):
    try:
        fn()
    except InferenceServerException as e:
        return {"status": e.status(), "message": e.message()}
    return {"status": "no error"}
def tensor(name, data, dt=None):
    from tritonclient.utils import np_to_triton_dtype
    t = g.InferInput(name, list(data.shape), dt or np_to_triton_dtype(data.dtype))
    t.set_data_from_numpy(data)
    return t
`,
    body,
  );
}

describe('tritonclient.grpc against real Python models', () => {
  it('health, server/model metadata, config and statistics', async () => {
    const r = await run(String.raw`
res["live"] = c.is_server_live()
res["ready"] = c.is_server_ready()
res["model_ready"] = c.is_model_ready("add_sub")
res["version_ready"] = c.is_model_ready("add_sub", "1")
res["unknown_ready"] = c.is_model_ready("nope")
res["server"] = c.get_server_metadata(as_json=True)
res["model"] = c.get_model_metadata("add_sub", as_json=True)
res["unknown_model"] = err(lambda: c.get_model_metadata("nope"))
res["config"] = c.get_model_config("add_sub", as_json=True)["config"]
res["decoupled"] = c.get_model_config("square_int32").config.model_transaction_policy.decoupled
a = np.arange(4, dtype=np.float32)
for _ in range(3):
    c.infer("add_sub", [tensor("INPUT0", a), tensor("INPUT1", a)])
s = c.get_inference_statistics("add_sub", as_json=True)["model_stats"][0]
res["stats"] = {"name": s["name"], "version": s["version"], "success": int(s["inference_stats"]["success"]["count"]),
                "queue": int(s["inference_stats"]["queue"]["count"]), "exec": int(s.get("execution_count", 0))}
res["all_stats"] = sorted(m["name"] for m in c.get_inference_statistics(as_json=True)["model_stats"])
`);
    expect(r.live).toBe(true);
    expect(r.ready).toBe(true);
    expect(r.model_ready).toBe(true);
    expect(r.version_ready).toBe(true);
    // Triton 2.51 answers ModelReady for a model it does not serve with ready=false, not an error.
    expect(r.unknown_ready).toBe(false);
    expect(r.server.name).toBe('triton');
    expect(r.server.extensions).toContain('statistics');
    expect(r.model).toMatchObject({ name: 'add_sub', versions: ['1'], platform: 'python' });
    expect(r.model.inputs[0]).toEqual({ name: 'INPUT0', datatype: 'FP32', shape: ['4'] });
    expect(r.unknown_model).toEqual({ status: 'StatusCode.NOT_FOUND', message: "Request for unknown model: 'nope' is not found" });
    expect(r.config).toMatchObject({ name: 'add_sub', backend: 'python' });
    expect(r.config.input[0]).toMatchObject({ name: 'INPUT0', data_type: 'TYPE_FP32', dims: ['4'] });
    expect(r.decoupled).toBe(true);
    expect(r.stats.name).toBe('add_sub');
    expect(r.stats.version).toBe('1');
    expect(r.stats.success).toBeGreaterThanOrEqual(3);
    expect(r.stats.queue).toBe(r.stats.success);
    expect(r.all_stats).toContain('add_sub');
  });

  it('infer and async_infer with raw tensors of every datatype, BYTES included', async () => {
    const r = await run(String.raw`
def make(dt, n=6):
    if dt == "BYTES":
        return np.array([b"", "é".encode(), b"\x00\xff", b"plain", b"x" * 300, b"z"][:n], dtype=np.object_)
    if dt == "BOOL":
        return np.arange(n) % 2 == 0
    if dt == "BF16":
        import ml_dtypes  # tritonclient >= 2.67 wants real bfloat16 arrays
        return np.array([1.0, -2.0, 0.5, 3.0, 0.0, -0.25][:n], dtype=ml_dtypes.bfloat16)
    t = {"UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64, "INT8": np.int8,
         "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "FP16": np.float16, "FP32": np.float32,
         "FP64": np.float64}[dt]
    a = (np.arange(n) * 7).astype(t)
    if dt == "UINT64": a[0] = np.uint64(2**64 - 1)
    if dt == "INT64": a[0] = np.int64(-(2**63))
    if dt.startswith("FP"): a = a / t(3)
    return a
types = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES"]
def io(dt):  # identity_all names its BYTES tensors IN_STRING / OUT_STRING
    return ("IN_STRING", "OUT_STRING") if dt == "BYTES" else ("IN_" + dt, "OUT_" + dt)
sync = {}
for dt in types:
    data = make(dt)
    r = c.infer("identity_all", [tensor(io(dt)[0], data, dt)], request_id="id-" + dt)
    got = r.as_numpy(io(dt)[1])
    resp = r.get_response()
    sync[dt] = {"equal": bool(np.array_equal(got, data)) and got.dtype == data.dtype, "id": resp.id,
                "version": resp.model_version, "raw": len(resp.raw_output_contents), "outputs": len(resp.outputs)}
res["sync"] = sync
# Every datatype in one request, answered through async_infer.
q = queue.Queue()
inputs = [tensor(io(dt)[0], make(dt), dt) for dt in types]
c.async_infer("identity_all", inputs, callback=lambda result, error: q.put((result, error)), request_id="all")
result, error = q.get(timeout=30)
res["async_error"] = None if error is None else str(error)
res["async"] = {dt: bool(np.array_equal(result.as_numpy(io(dt)[1]), make(dt))) for dt in types}
res["async_id"] = result.get_response().id
# BF16 travels raw; numpy has no bfloat16, so the model reports Triton's as_numpy() error.
res["bf16"] = err(lambda: c.infer("identity_all", [tensor("IN_BF16", make("BF16"), "BF16")]))
a = np.array([1, 2, 3, 4], dtype=np.float32)
b = np.array([10, 20, 30, 40], dtype=np.float32)
r = c.infer("add_sub", [tensor("INPUT0", a), tensor("INPUT1", b)], outputs=[g.InferRequestedOutput("OUTPUT1")])
res["add_sub"] = {"names": [o.name for o in r.get_response().outputs], "out1": r.as_numpy("OUTPUT1").tolist()}
`);
    for (const [dt, v] of Object.entries(r.sync as Record<string, any>)) {
      expect({ dt, ...v }).toEqual({ dt, equal: true, id: `id-${dt}`, version: '1', raw: 1, outputs: 1 });
    }
    expect(r.async_error).toBeNull();
    expect(Object.values(r.async).every(Boolean)).toBe(true);
    expect(r.async_id).toBe('all');
    expect(r.bf16.status).toBe('StatusCode.INVALID_ARGUMENT');
    expect(r.bf16.message).toContain('BF16');
    expect(r.add_sub).toEqual({ names: ['OUTPUT1'], out1: [-9, -18, -27, -36] });
  });

  it('the same request with new tensor bytes, again and again: each answer is its own', async () => {
    // From the third message of a form the server decodes from the model's kept message
    // (src/frontends/grpc/repeated-request.ts); each answer must still be computed from its own
    // bytes, over ModelInfer and on a stream, and BYTES of other lengths must not be taken for
    // the kept form.
    const r = await run(String.raw`
sums = []
for i in range(8):
    a = np.full(4, i, dtype=np.float32)
    b = np.arange(4, dtype=np.float32) * i
    out = c.infer("add_sub", [tensor("INPUT0", a), tensor("INPUT1", b)])
    sums.append(bool(np.array_equal(out.as_numpy("OUTPUT0"), a + b)) and bool(np.array_equal(out.as_numpy("OUTPUT1"), a - b)))
res["unary"] = sums
words = [b"abc", b"abc", b"abc", b"abcd", b"abcd", b"x", b"abc", b"", b"abcd"]
echoed = []
for w in words:
    data = np.array([w], dtype=np.object_)
    out = c.infer("identity_all", [tensor("IN_STRING", data, "BYTES")])
    echoed.append(out.as_numpy("OUT_STRING").tolist() == [w])
res["bytes"] = echoed
q = queue.Queue()
c.start_stream(callback=lambda result, error: q.put((result, error)))
for i in range(6):
    a = np.full(4, i + 1, dtype=np.float32)
    c.async_stream_infer("add_sub", [tensor("INPUT0", a), tensor("INPUT1", a)])
streamed = []
for i in range(6):
    result, error = q.get(timeout=30)
    streamed.append(None if error is not None else result.as_numpy("OUTPUT0").tolist()[0])
c.stop_stream()
res["stream"] = sorted(streamed)
`);
    expect(r.unary).toEqual(Array(8).fill(true));
    expect(r.bytes).toEqual(Array(9).fill(true));
    expect(r.stream).toEqual([2, 4, 6, 8, 10, 12]);
  });

  it('typed contents, a message above 4 MiB, and Triton status codes', async () => {
    const r = await run(String.raw`
stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(URL, options=[
    ("grpc.max_send_message_length", 2**31 - 1), ("grpc.max_receive_message_length", 2**31 - 1)]))
req = service_pb2.ModelInferRequest(model_name="identity_all", id="typed")
t = req.inputs.add(name="IN_INT32", datatype="INT32", shape=[3])
t.contents.int_contents.extend([-7, 0, 2**31 - 1])
t = req.inputs.add(name="IN_STRING", datatype="BYTES", shape=[2])
t.contents.bytes_contents.extend([b"ab", b""])
resp = stub.ModelInfer(req)
res["typed"] = {"names": [o.name for o in resp.outputs], "contents_used": any(o.HasField("contents") for o in resp.outputs),
                "int32": np.frombuffer(resp.raw_output_contents[0], dtype=np.int32).tolist(),
                "bytes_raw": resp.raw_output_contents[1].hex()}
mixed = service_pb2.ModelInferRequest(model_name="identity_all")
t = mixed.inputs.add(name="IN_INT32", datatype="INT32", shape=[1])
t.contents.int_contents.append(1)
mixed.raw_input_contents.append(np.array([1], dtype=np.int32).tobytes())
try:
    stub.ModelInfer(mixed)
    res["mixed"] = "no error"
except grpc.RpcError as e:
    res["mixed"] = {"code": str(e.code()), "details": e.details()}
big = (np.arange(6 * 1024 * 1024) % 251).astype(np.uint8)
r = c.infer("identity_all", [tensor("IN_UINT8", big)])
res["big"] = {"bytes": int(big.nbytes), "equal": bool(np.array_equal(r.as_numpy("OUT_UINT8"), big))}
f = np.zeros(4, dtype=np.float32)
res["unknown_model"] = err(lambda: c.infer("nope", [tensor("INPUT0", f)]))
res["wrong_shape"] = err(lambda: c.infer("add_sub", [tensor("INPUT0", np.zeros(3, dtype=np.float32)), tensor("INPUT1", f)]))
res["model_error"] = err(lambda: c.infer("error_model", [tensor("INPUT0", np.array([-1], dtype=np.float32))]))
res["raised"] = err(lambda: c.infer("misbehave", [tensor("MODE", np.array([b"raise"], dtype=np.object_))]))
res["decoupled"] = err(lambda: c.infer("square_int32", [tensor("IN", np.array([1], dtype=np.int32))]))
res["still_ready"] = c.is_model_ready("misbehave")
`);
    expect(r.typed).toEqual({ names: ['OUT_INT32', 'OUT_STRING'], contents_used: false, int32: [-7, 0, 2 ** 31 - 1], bytes_raw: '020000006162' + '00000000' });
    expect(r.mixed.code).toBe('StatusCode.INVALID_ARGUMENT');
    expect(r.mixed.details).toContain('contents field must not be specified when using raw_input_contents');
    expect(r.big).toEqual({ bytes: 6 * 1024 * 1024, equal: true });
    expect(r.unknown_model.status).toBe('StatusCode.NOT_FOUND');
    expect(r.unknown_model.message).toContain("'nope'");
    expect(r.wrong_shape.status).toBe('StatusCode.INVALID_ARGUMENT');
    expect(r.model_error.status).toBe('StatusCode.INVALID_ARGUMENT');
    expect(r.raised.status).toBe('StatusCode.INTERNAL');
    expect(r.raised.message).toMatch(/^Failed to process the request\(s\) for model '.*', message: ValueError: intentional failure/);
    expect(r.decoupled).toEqual({
      status: 'StatusCode.UNIMPLEMENTED',
      message: "ModelInfer RPC doesn't support models with decoupled transaction policy",
    });
    expect(r.still_ready).toBe(true);
  });

  it("--grpc-max-message-size bounds requests (RESOURCE_EXHAUSTED), beyond gRPC's 4 MiB default", async () => {
    const small = await startTritium({ repos: [repoWithTwins(['identity_all'])], args: ['--grpc-max-message-size=1048576'] });
    try {
      const r = await run(String.raw`
c = g.InferenceServerClient("127.0.0.1:${small.grpcPort}")
ok = np.zeros(512 * 1024, dtype=np.uint8)
res["ok"] = int(c.infer("identity_all", [tensor("IN_UINT8", ok)]).as_numpy("OUT_UINT8").size)
res["big"] = err(lambda: c.infer("identity_all", [tensor("IN_UINT8", np.zeros(2 * 1024 * 1024, dtype=np.uint8))]))
`);
      expect(r.ok).toBe(512 * 1024);
      expect(r.big.status).toBe('StatusCode.RESOURCE_EXHAUSTED');
    } finally {
      await small.stop();
    }
  });

  it('async_infer(...).cancel() and an expired deadline cancel the request; the model sees it', async () => {
    const r = await run(String.raw`
n = np.array([20000], dtype=np.int32)
q = queue.Queue()
ctx = c.async_infer("cancel_loop_sync", [tensor("N", n)], callback=lambda result, error: q.put((result, error)),
                    parameters={"marker_dir": ${JSON.stringify(markers)}, "tag": "async-cancel"})
time.sleep(0.5)
ctx.cancel()
result, error = q.get(timeout=30)
res["cancel"] = {"result": result is not None, "status": None if error is None else error.status()}
res["deadline"] = err(lambda: c.infer("cancel_loop_sync", [tensor("N", n)], client_timeout=0.5,
                                      parameters={"marker_dir": ${JSON.stringify(markers)}, "tag": "deadline"}))
`);
    expect(r.cancel).toEqual({ result: false, status: 'StatusCode.CANCELLED' });
    expect(r.deadline.status).toBe('StatusCode.DEADLINE_EXCEEDED');
    for (const tag of ['async-cancel', 'deadline']) {
      const seen = await waitForJson(path.join(markers, tag));
      expect({ tag, ...seen }).toMatchObject({ tag, request: true, sender: true });
    }
    // The instance is free again: a short request completes.
    const after = await run(String.raw`
r = c.infer("cancel_loop_sync", [tensor("N", np.array([20], dtype=np.int32))])
res["out"] = int(r.as_numpy("OUT")[0])
`);
    expect(after.out).toBeGreaterThan(0);
    expect(fs.readdirSync(markers).sort()).toEqual(['async-cancel', 'deadline']);
  });
});
