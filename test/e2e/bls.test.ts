/**
 * BLS end to end (docs/ipc.md, "Calls from the model"): real CLI, real stubs, tritonclient.
 * `exec()` to Python and ONNX targets, `async_exec()` gathered, `exec(decoupled=True)` and a
 * decoupled relay (the shapes of Triton's `bls` and `bls_decoupled` examples), errors from the
 * target and from the core with tritonserver 2.51's texts, the queue timeout, `is_model_ready`,
 * `load_model` / `unload_model` outside explicit mode, the target's statistics, cancellation
 * (iterator, caller request, caller stub death) and shared memory given back on every path.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, pythonResult, shmFilesOf, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { waitFor } from './infer-helpers.js';
import { tempDir, waitForJson } from './twin-helpers.js';

let server: Tritium;
let markers: string;

beforeAll(async () => {
  const repo = makeRepo([
    'add_sub',
    'bls_add_sub',
    'square_int32',
    'simple_onnx',
    'error_model',
    'identity_all',
    'cancel_loop',
    'bls_probe',
    'bls_async_gather',
    'bls_square_stream',
    'bls_slow_queue',
  ]);
  markers = tempDir('tritium-bls-');
  server = await startTritium({ repos: [repo] });
}, 120_000);

afterAll(() => stopAndExpectNoShm(server));

const PRELUDE = () => String.raw`
import json, threading, time
import numpy as np
import tritonclient.http as h
c = h.InferenceServerClient("127.0.0.1:${server.httpPort}", network_timeout=120)
def probe(cmd):
    if isinstance(cmd, str):
        cmd = json.loads(cmd)
    t = h.InferInput("CMD", [1], "BYTES")
    t.set_data_from_numpy(np.array([json.dumps(cmd).encode()], dtype=np.object_))
    return json.loads(c.infer("bls_probe", [t]).as_numpy("RESULT")[0])
def f32(name, values):
    t = h.InferInput(name, [len(values)], "FP32")
    t.set_data_from_numpy(np.array(values, dtype=np.float32))
    return t
def stats(model):
    s = c.get_inference_statistics(model)["model_stats"][0]["inference_stats"]
    return {"success": s["success"]["count"], "fail": s["fail"]["count"]}
`;

const run = (body: string) => pythonResult(PRELUDE(), body);
const call = (model: string, inputs: Record<string, unknown>, extra: Record<string, unknown> = {}) => JSON.stringify({ op: 'call', model, inputs, ...extra });

describe('BLS exec() to a Python target', () => {
  it("bls_add_sub answers with add_sub's outputs, and add_sub's statistics count the BLS requests", async () => {
    const r = await run(String.raw`
before = stats("add_sub")
outs = []
for k in range(5):
    x = c.infer("bls_add_sub", [f32("INPUT0", [k, 1, 2, 3]), f32("INPUT1", [1, 1, 1, 1])])
    outs.append([x.as_numpy("OUTPUT0").tolist(), x.as_numpy("OUTPUT1").tolist()])
res["outs"] = outs
res["before"] = before
res["after"] = stats("add_sub")
res["caller"] = stats("bls_add_sub")
`);
    expect(r.outs[3]).toEqual([
      [4, 2, 3, 4],
      [2, 0, 1, 2],
    ]);
    expect(r.after.success - r.before.success).toBe(5);
    expect(r.after.fail).toBe(r.before.fail);
    expect(r.caller.success).toBeGreaterThanOrEqual(5);
  });

  it('passes request id, parameters and requested outputs; empty requested outputs means all', async () => {
    const r = await run(String.raw`
res["one"] = probe(${JSON.stringify(call('add_sub', { INPUT0: ['FP32', [4], [1, 2, 3, 4]], INPUT1: ['FP32', [4], [1, 1, 1, 1]] }, { outputs: ['OUTPUT1'], kw: { request_id: 'r7', parameters: { a: 1 } } }))})
res["all"] = probe(${JSON.stringify(call('add_sub', { INPUT0: ['FP32', [4], [1, 2, 3, 4]], INPUT1: ['FP32', [4], [1, 1, 1, 1]] }))})
`);
    expect(r.one.responses).toEqual([{ outputs: { OUTPUT1: ['float32', [4], [0, 1, 2, 3]] }, params: '{}' }]);
    expect(Object.keys(r.all.responses[0].outputs).sort()).toEqual(['OUTPUT0', 'OUTPUT1']);
  });

  it('a thread of the model calls after execute returned (the main loop routes the answer)', async () => {
    const file = path.join(markers, 'thread.json');
    const cmd = {
      op: 'thread',
      file,
      model: 'add_sub',
      inputs: { INPUT0: ['FP32', [4], [1, 2, 3, 4]], INPUT1: ['FP32', [4], [1, 1, 1, 1]] },
      outputs: ['OUTPUT0'],
    };
    const r = await run(`res["r"] = probe(${JSON.stringify(JSON.stringify(cmd))})`);
    expect(r.r).toEqual({ started: true });
    expect(await waitForJson(file, 30_000)).toEqual({ responses: [{ outputs: { OUTPUT0: ['float32', [4], [2, 3, 4, 5]] }, params: '{}' }] });
  });

  it('async_exec: several calls awaited together with asyncio.gather', async () => {
    const r = await run(String.raw`
n = h.InferInput("N", [1], "INT32"); n.set_data_from_numpy(np.array([4], dtype=np.int32))
x = c.infer("bls_async_gather", [f32("INPUT0", [0, 1, 2, 3]), f32("INPUT1", [10, 10, 10, 10]), n])
res["out"] = x.as_numpy("OUTPUT0").tolist()
`);
    expect(r.out).toEqual([
      [10, 11, 12, 13],
      [11, 12, 13, 14],
      [12, 13, 14, 15],
      [13, 14, 15, 16],
    ]);
  });
});

describe('BLS to a decoupled target', () => {
  it('exec(decoupled=True) yields every response, then an empty one for the flags-only FINAL', async () => {
    const r = await run(String.raw`
res["three"] = probe(${JSON.stringify(call('square_int32', { IN: ['INT32', [1], [3]] }, { decoupled: true }))})
res["zero"] = probe(${JSON.stringify(call('square_int32', { IN: ['INT32', [1], [0]] }, { decoupled: true }))})
res["nondec"] = probe(${JSON.stringify(call('add_sub', { INPUT0: ['FP32', [4], [1, 1, 1, 1]], INPUT1: ['FP32', [4], [1, 1, 1, 1]] }, { decoupled: true, outputs: ['OUTPUT0'] }))})
`);
    const three = { outputs: { OUT: ['int32', [1], [3]] }, params: '{}' };
    const empty = { outputs: {}, params: '{}' };
    expect(r.three.responses).toEqual([three, three, three, empty]);
    expect(r.zero.responses).toEqual([empty]);
    // A non-decoupled target gives exactly one response.
    expect(r.nondec.responses).toEqual([{ outputs: { OUTPUT0: ['float32', [4], [2, 2, 2, 2]] }, params: '{}' }]);
  });

  it('a decoupled model relays the stream of another one (the bls_decoupled shape), over gRPC', async () => {
    const r = await pythonResult(
      String.raw`
import json, queue
import numpy as np
import tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${server.grpcPort}")
q = queue.Queue()
c.start_stream(callback=lambda result, error: q.put(error.message() if error else result.as_numpy("OUT").tolist() if result.as_numpy("OUT") is not None else None))
`,
      String.raw`
t = g.InferInput("IN", [1], "INT32"); t.set_data_from_numpy(np.array([4], dtype=np.int32))
c.async_stream_infer("bls_square_stream", [t], enable_empty_final_response=True)
res["items"] = [q.get(timeout=60) for _ in range(5)]
c.stop_stream()
`,
    );
    expect(r.items).toEqual([[4], [4], [4], [4], null]);
  });
});

describe('BLS to an ONNX target', () => {
  it('simple_onnx answers the BLS call as it answers the client', async () => {
    const features = Array.from({ length: 16 }, (_, i) => (i % 5) / 4);
    const r = await run(String.raw`
t = h.InferInput("FEATURES", [1, 16], "FP32"); t.set_data_from_numpy(np.array([${JSON.stringify(features)}], dtype=np.float32))
x = c.infer("simple_onnx", [t])
res["direct"] = {"PROBABILITIES": x.as_numpy("PROBABILITIES").tolist(), "CLASS": x.as_numpy("CLASS").tolist()}
res["bls"] = probe(${JSON.stringify(call('simple_onnx', { FEATURES: ['FP32', [1, 16], features] }, { outputs: ['PROBABILITIES', 'CLASS'] }))})
`);
    const outs = r.bls.responses[0].outputs;
    expect(outs.CLASS).toEqual(['int64', [1, 1], r.direct.CLASS.flat()]);
    expect(outs.PROBABILITIES[1]).toEqual([1, 3]);
    outs.PROBABILITIES[2].forEach((p: number, i: number) => expect(p).toBeCloseTo(r.direct.PROBABILITIES[0][i], 6));
  });
});

describe('BLS errors come back on the response (tritonserver 2.51 texts)', () => {
  it('errors of the target, the core and the lookup', async () => {
    const r = await run(String.raw`
res["target"] = probe(${JSON.stringify(call('error_model', { INPUT0: ['INT32', [1], [-1]] }))})
res["raised"] = probe(${JSON.stringify(call('error_model', { INPUT0: ['INT32', [1], [1]] }, { kw: { parameters: { raise: true } } }))})
res["unknown"] = probe(${JSON.stringify(call('nope', {}))})
res["version"] = probe(${JSON.stringify(call('add_sub', {}, { kw: { model_version: 7 } }))})
res["missing"] = probe(${JSON.stringify(call('add_sub', { INPUT0: ['FP32', [4], [1, 1, 1, 1]] }))})
res["output"] = probe(${JSON.stringify(call('add_sub', { INPUT0: ['FP32', [4], [1, 1, 1, 1]], INPUT1: ['FP32', [4], [1, 1, 1, 1]] }, { outputs: ['NOPE'] }))})
res["decoupled"] = probe(${JSON.stringify(call('square_int32', { IN: ['INT32', [1], [2]] }))})
`);
    const err = (x: any) => x.responses[0].error;
    expect(err(r.target)).toEqual([1, 'INPUT0 must not be negative']);
    expect(err(r.raised)[1]).toMatch(/^Failed to process the request\(s\) for model 'error_model_0', message: TritonModelException: Intentional Error/);
    expect(err(r.unknown)).toEqual([1, "Model nope - Error when running inference: Failed for execute the inference request. Model 'nope' is not ready."]);
    expect(err(r.version)).toEqual([
      1,
      "Model add_sub - Error when running inference: Failed for execute the inference request. Model 'add_sub' is not ready.",
    ]);
    expect(err(r.missing)[1]).toMatch(/^Model add_sub - Error when running inference: .*expected 2 inputs but got 1 inputs for model 'add_sub'/);
    expect(err(r.output)).toEqual([1, "Model add_sub - Error when running inference: unexpected inference output 'NOPE' for model 'add_sub'"]);
    expect(err(r.decoupled)).toEqual([
      1,
      "Model square_int32 - Error when running inference: Model square_int32 is using the decoupled. The current BLS request call doesn't support models using the decoupled transaction policy. Please use 'decoupled=True' argument to the 'exec' or 'async_exec' calls for decoupled models.'",
    ]);
  });

  it("a request's timeout applies in the target's queue: a call waiting behind a slow one expires", async () => {
    const r = await run(String.raw`
def slow():
    t = h.InferInput("MS", [1, 1], "INT32"); t.set_data_from_numpy(np.array([[1500]], dtype=np.int32))
    res["slow"] = h.InferenceServerClient("127.0.0.1:${server.httpPort}").infer("bls_slow_queue", [t]).as_numpy("OUT").tolist()
th = threading.Thread(target=slow); th.start()
time.sleep(0.4)
res["timed"] = probe(${JSON.stringify(call('bls_slow_queue', { MS: ['INT32', [1, 1], [0]] }, { kw: { timeout: 100000 } }))})
th.join()
res["ok"] = probe(${JSON.stringify(call('bls_slow_queue', { MS: ['INT32', [1, 1], [0]] }, { kw: { timeout: 100000 } }))})
`);
    expect(r.slow).toEqual([[1500]]);
    expect(r.timed.responses[0].error).toEqual([1, 'Request timeout expired']);
    expect(r.ok.responses[0].outputs.OUT).toEqual(['int32', [1, 1], [0]]);
  });
});

describe('is_model_ready and model control', () => {
  it('is_model_ready answers for models and versions, from execute and from initialize', async () => {
    const ready = (...args: unknown[]) => JSON.stringify({ op: 'ready', args });
    const r = await run(String.raw`
for k, args in [("plain", ["add_sub"]), ("v1", ["add_sub", "1"]), ("v7", ["add_sub", "7"]), ("unknown", ["nope"]), ("onnx", ["simple_onnx"])]:
    res[k] = probe(json.loads(json.dumps({"op": "ready", "args": args})))
res["bad"] = probe(${JSON.stringify(ready(1))})
res["init"] = probe({"op": "init"})
`);
    expect([r.plain, r.v1, r.v7, r.unknown, r.onnx]).toEqual([{ value: true }, { value: true }, { value: false }, { value: false }, { value: true }]);
    expect(r.bad.raised).toMatch(/^TypeError: is_model_ready\(\): incompatible function arguments/);
    // From initialize the call is answered (whether add_sub finished loading by then is a race).
    expect(typeof r.init.ready.value).toBe('boolean');
    expect(r.init.bls).toEqual({ raised: "TritonModelException: BLS is only supported during the 'execute' function." });
  });

  it('load_model / unload_model outside explicit mode raise with Triton’s text', async () => {
    const r = await run(String.raw`
res["load"] = probe({"op": "load", "args": ["add_sub"]})
res["unload"] = probe({"op": "unload", "args": ["add_sub"]})
res["ready"] = probe({"op": "ready", "args": ["add_sub"]})
`);
    const text = (op: string) =>
      `TritonModelException: Failed to ${op} model: Failed to process the request for model 'bls_probe_0_0', message: explicit model load / unload is not allowed if polling is enabled`;
    expect(r.load).toEqual({ raised: text('load') });
    expect(r.unload).toEqual({ raised: text('unload') });
    expect(r.ready).toEqual({ value: true });
  });
});

describe('cancellation and shared memory', () => {
  const loop = (tag: string, extra: Record<string, unknown> = {}) =>
    call('cancel_loop', { N: ['INT32', [1], [100000]] }, { decoupled: true, kw: { parameters: { interval_ms: 10, marker_dir: markers, tag } }, ...extra });

  it('iterator.cancel() cancels the call: the target sees it and the stream ends', async () => {
    const r = await run(`res["r"] = probe(${JSON.stringify(loop('iter', { cancel_after: 2 }))})`);
    const items = r.r.responses;
    expect(items.slice(0, 2)).toEqual([
      { outputs: { OUT: ['int32', [1], [0]] }, params: '{}' },
      { outputs: { OUT: ['int32', [1], [1]] }, params: '{}' },
    ]);
    // The target's CANCELLED code reaches the model (Triton's with cancel(); docs/protocol-notes.md).
    expect(items.at(-1).error).toEqual([7, 'request cancelled by the client']);
    expect(await waitForJson(path.join(markers, 'iter'))).toMatchObject({ request: true });
  });

  it("the caller's request going away cancels its BLS calls", async () => {
    await run(String.raw`
import http.client, socket, struct
body = json.dumps({"inputs": [{"name": "CMD", "datatype": "BYTES", "shape": [1], "data": [${JSON.stringify(loop('caller'))}]}]})
conn = http.client.HTTPConnection("127.0.0.1", ${server.httpPort}, timeout=1.5)
try:
    conn.request("POST", "/v2/models/bls_probe/infer", body=body, headers={"Content-Type": "application/json"})
    conn.getresponse()
except socket.timeout:
    res["timed_out"] = True
finally:
    # A reset (linger 0), not a FIN: a half-close after a whole request is still answered.
    conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()  # the server sees the client go away and cancels the request
`);
    expect(await waitForJson(path.join(markers, 'caller'), 30_000)).toMatchObject({ request: true });
  });

  it('the caller stub dying cancels its BLS calls and its region is removed', async () => {
    const regions = () => shmFilesOf(server.proc.pid).filter((f) => f.includes('bls_probe'));
    const before = regions();
    const r = await run(String.raw`
try:
    probe(${JSON.stringify(JSON.stringify({ ...JSON.parse(loop('died')), op: 'die', die_after_s: 0.5 }))})
except Exception as e:
    res["error"] = str(e)
`);
    expect(r.error).toMatch(/Stub process 'bls_probe_0_0' is not healthy/);
    expect(await waitForJson(path.join(markers, 'died'), 30_000)).toMatchObject({ request: true });
    // The dead stub's files go; the restarted one has a region of its own.
    await waitFor('the dead region to be removed', () => !before.some((f) => regions().includes(f)), 30_000);
    await waitFor('bls_probe to serve again', async () => {
      const res = await fetch(`${server.http}/v2/models/bls_probe/ready`);
      return res.status === 200;
    });
  });

  it('blocks go back on every path: no arena growth over many calls, no stub blocks left', async () => {
    const big = call('identity_all', { IN_FP32: ['FP32', [300000], 1] }, { outputs: ['OUT_FP32'], summary: true });
    const errors = [call('error_model', { INPUT0: ['INT32', [1], [-1]] }), call('nope', { INPUT0: ['INT32', [1], [1]] })];
    const files = () => shmFilesOf(server.proc.pid).filter((f) => f.includes('bls_probe')).length;
    const r1 = await run(String.raw`
for _ in range(3):
    res["first"] = probe(${JSON.stringify(big)})
`);
    expect(r1.first.responses[0].outputs.OUT_FP32).toEqual(['float32', [300000], 300000]);
    const settled = files();
    const r = await run(String.raw`
for _ in range(20):
    res["big"] = probe(${JSON.stringify(big)})
    for e in ${JSON.stringify(errors)}:
        probe(e)
    probe(${JSON.stringify(loop('leak', { cancel_after: 1 }))})
res["arena"] = probe({"op": "arena"})
`);
    expect(r.big.responses[0].outputs.OUT_FP32[2]).toBe(300000);
    expect(r.arena).toEqual({ blocks: 0 });
    expect(files()).toBe(settled);
    expect(fs.existsSync('/dev/shm')).toBe(true);
  });
});
