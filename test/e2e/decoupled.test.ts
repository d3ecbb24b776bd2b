/**
 * End-to-end decoupled models with the real CLI, real Python stubs
 * and `tritonclient.grpc` streaming: the repeat and square examples deliver every response in
 * order with the final flag; error responses keep the stream open; every response-sender rule
 * and error text of docs/protocol-notes.md, "Response sender" and "What execute returns"; `async def execute` scheduled (decoupled) or
 * awaited (non-decoupled); `stop_stream(cancel_requests=True)` observed by the model; and
 * HTTP `/infer` answering 501 for decoupled models.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postThenReset } from '../helpers/raw-http.js';
import { startTritium, stopAndExpectNoShm, type Tritium, pythonResult } from '../helpers/server.js';
import { waitFor } from './infer-helpers.js';
import { repoWithTwins, tempDir, waitForJson } from './twin-helpers.js';

let server: Tritium;
let markers: string;

beforeAll(async () => {
  const repo = repoWithTwins(['repeat_int32', 'square_int32', 'add_sub'], ['sender_rules', 'async_execute', 'cancel_loop']);
  markers = tempDir('tritium-dec-');
  server = await startTritium({ repos: [repo] });
}, 120_000);

afterAll(() => stopAndExpectNoShm(server));

/**
 * Runs a streaming script. Prelude: client `c` with a started stream whose items land in `q`
 * as dicts ({"id", "final", "outputs": {name: list}, "params"} or {"error", "status"}),
 * `send(model, {name: array}, **kw)` and `take(n)` (next n items).
 */
async function run(body: string, headers: Record<string, string> = {}): Promise<any> {
  return pythonResult(
    String.raw`
import json, queue, sys, time
import numpy as np
import tritonclient.grpc as g
from tritonclient.utils import InferenceServerException, np_to_triton_dtype
c = g.InferenceServerClient(${JSON.stringify(`127.0.0.1:${server.grpcPort}`)})
q = queue.Queue()
def on_item(result, error):
    if error is not None:
        q.put({"error": error.message(), "status": error.status()})
        return
    resp = result.get_response()
    params = {k: getattr(v, v.WhichOneof("parameter_choice")) for k, v in resp.parameters.items()}
    outs = {}
    for o in resp.outputs:
        a = result.as_numpy(o.name)
        outs[o.name] = [x.decode() if isinstance(x, bytes) else x for x in a.reshape(-1).tolist()]
    q.put({"id": resp.id, "final": params.pop("triton_final_response", None), "outputs": outs, "params": params})
c.start_stream(callback=on_item, headers=${JSON.stringify(headers)})
def inputs(named):
    out = []
    for name, data in named.items():
        t = g.InferInput(name, list(data.shape), np_to_triton_dtype(data.dtype))
        t.set_data_from_numpy(data)
        out.append(t)
    return out
def send(model, named, **kw):
    c.async_stream_infer(model, inputs(named), **kw)
def take(n, timeout=30):
    return [q.get(timeout=timeout) for _ in range(n)]
def mode(m):
    return {"MODE": np.array([m.encode()], dtype=np.object_)}
`,
    body,
    'c.stop_stream()\nc.close()',
  );
}

const i32 = (...v: number[]) => `np.array([${v.join(',')}], dtype=np.int32)`;
const u32 = (...v: number[]) => `np.array([${v.join(',')}], dtype=np.uint32)`;

describe('decoupled example models over ModelStreamInfer', () => {
  it('repeat_int32: every response in order, then the final flag; concurrent requests on one stream', async () => {
    const r = await run(String.raw`
send("repeat_int32", {"IN": ${i32(4, 5, 6, 7)}, "DELAY": ${u32(10, 0, 20, 0)}, "WAIT": ${u32(30)}},
     request_id="r1", enable_empty_final_response=True)
res["one"] = take(5)
send("repeat_int32", {"IN": ${i32(1, 2, 3)}, "DELAY": ${u32(5, 5, 5)}, "WAIT": ${u32(0)}},
     request_id="a", enable_empty_final_response=True)
send("repeat_int32", {"IN": ${i32(9, 8)}, "DELAY": ${u32(7, 7)}, "WAIT": ${u32(0)}},
     request_id="b", enable_empty_final_response=True)
res["two"] = take(7)
# Without enable_empty_final_response the flags-only FINAL is not sent: the stream ends after
# the last payload response (stop_stream waits for the server to close it).
send("repeat_int32", {"IN": ${i32(3, 3)}, "DELAY": ${u32(0, 0)}, "WAIT": ${u32(0)}}, request_id="plain")
c.stop_stream()
res["plain"] = [q.get_nowait() for _ in range(q.qsize())]
`);
    expect(r.one).toEqual([
      { id: 'r1', final: false, outputs: { OUT: [4], IDX: [0] }, params: {} },
      { id: 'r1', final: false, outputs: { OUT: [5], IDX: [1] }, params: {} },
      { id: 'r1', final: false, outputs: { OUT: [6], IDX: [2] }, params: {} },
      { id: 'r1', final: false, outputs: { OUT: [7], IDX: [3] }, params: {} },
      { id: 'r1', final: true, outputs: {}, params: {} },
    ]);
    const byId = (id: string) => r.two.filter((x: any) => x.id === id);
    expect(byId('a').map((x: any) => [x.outputs.OUT?.[0], x.final])).toEqual([
      [1, false],
      [2, false],
      [3, false],
      [undefined, true],
    ]);
    expect(byId('b').map((x: any) => [x.outputs.OUT?.[0], x.final])).toEqual([
      [9, false],
      [8, false],
      [undefined, true],
    ]);
    expect(r.plain.map((x: any) => [x.outputs.OUT[0], x.outputs.IDX[0], x.final])).toEqual([
      [3, 0, false],
      [3, 1, false],
    ]);
  });

  it('square_int32: n responses for n, none for 0, an error for a negative n; the stream stays open', async () => {
    const r = await run(String.raw`
send("square_int32", {"IN": ${i32(3)}}, request_id="three", enable_empty_final_response=True)
res["three"] = take(4)
send("square_int32", {"IN": ${i32(0)}}, request_id="zero", enable_empty_final_response=True)
res["zero"] = take(1)
send("square_int32", {"IN": ${i32(-2)}}, request_id="neg")
res["neg"] = take(1)
send("square_int32", {"IN": ${i32(1)}}, request_id="after", enable_empty_final_response=True)
res["after"] = take(2)
c.stop_stream()
`);
    expect(r.three.map((x: any) => [x.id, x.outputs.OUT?.[0], x.final])).toEqual([
      ['three', 3, false],
      ['three', 3, false],
      ['three', 3, false],
      ['three', undefined, true],
    ]);
    expect(r.zero).toEqual([{ id: 'zero', final: true, outputs: {}, params: {} }]);
    expect(r.neg).toEqual([{ error: 'IN must be non-negative, got -2', status: null }]);
    expect(r.after.map((x: any) => [x.outputs.OUT?.[0], x.final])).toEqual([
      [1, false],
      [undefined, true],
    ]);
  });

  it('triton_grpc_error: true ends the stream at the first error, with its status', async () => {
    const r = await run(
      String.raw`
send("square_int32", {"IN": ${i32(-1)}}, request_id="neg")
res["items"] = take(1)
`,
      { triton_grpc_error: 'true' },
    );
    expect(r.items).toEqual([{ error: 'IN must be non-negative, got -1', status: 'StatusCode.INVALID_ARGUMENT' }]);
  });

  it('non-decoupled models answer once on the stream, with the final flag', async () => {
    const r = await run(String.raw`
a = np.arange(4, dtype=np.float32)
send("add_sub", {"INPUT0": a, "INPUT1": a}, request_id="nd", enable_empty_final_response=True)
res["items"] = take(1)
c.stop_stream()
res["left"] = q.qsize()
`);
    expect(r.items).toEqual([{ id: 'nd', final: true, outputs: { OUTPUT0: [0, 2, 4, 6], OUTPUT1: [0, 0, 0, 0] }, params: {} }]);
    expect(r.left).toBe(0);
  });
});

describe('response sender rules (docs/protocol-notes.md, "Response sender")', () => {
  it('decoupled: flag and response checks, closed sender, error responses that keep the stream open', async () => {
    const r = await run(String.raw`
send("sender_rules", mode("violations"), request_id="v", enable_empty_final_response=True)
res["violations"] = take(2)
send("sender_rules", mode("report"), request_id="rep")
res["report"] = take(1)
send("sender_rules", mode("errors"), request_id="e", enable_empty_final_response=True)
res["errors"] = take(4)
send("sender_rules", mode("error_final"), request_id="ef")
res["error_final"] = take(1)
send("sender_rules", mode("zero"), request_id="z", enable_empty_final_response=True)
res["zero"] = take(1)
send("sender_rules", mode("one_final"), request_id="o", enable_empty_final_response=True)
res["one_final"] = take(1)
send("sender_rules", mode("params"), request_id="p")
res["params"] = take(1)
c.stop_stream()
`);
    expect(r.violations).toEqual([
      {
        id: 'v',
        final: false,
        params: {},
        outputs: {
          OUT: [
            'Unable to send response. Unsupported flag provided.',
            'Inference Response object must be provided when the response flags is set to zero.',
            'Inference Response object must be provided when the response flags is set to zero.',
          ],
        },
      },
      { id: 'v', final: true, outputs: {}, params: {} },
    ]);
    expect(r.report[0].outputs.OUT).toEqual([
      'Unable to send response. Response sender has been closed.',
      'Unable to send response. Response sender has been closed.',
    ]);
    expect(r.errors).toEqual([
      { id: 'e', final: false, outputs: { OUT: ['first'] }, params: {} },
      { error: 'mid-stream error', status: null },
      { id: 'e', final: false, outputs: { OUT: ['second'] }, params: {} },
      { id: 'e', final: true, outputs: {}, params: {} },
    ]);
    expect(r.error_final).toEqual([{ error: 'final error', status: null }]);
    expect(r.zero).toEqual([{ id: 'z', final: true, outputs: {}, params: {} }]);
    expect(r.one_final).toEqual([{ id: 'o', final: true, outputs: { OUT: ['only'] }, params: {} }]);
    expect(r.params).toEqual([{ id: 'p', final: true, outputs: { OUT: ['p'] }, params: { p_int: 7, p_str: 's', p_bool: true } }]);
  });

  it('decoupled: execute must return None; a raise fails the batch; a dropped sender is closed', async () => {
    const r = await run(String.raw`
send("sender_rules", mode("return_list"), request_id="rl")
res["return_list"] = take(1)
time.sleep(0.6)
send("sender_rules", mode("report"), request_id="rep")
res["report"] = take(1)
send("sender_rules", mode("raise"), request_id="raise")
res["raise"] = take(1)
send("sender_rules", mode("drop"), request_id="drop")
res["drop"] = take(1)
send("sender_rules", mode("one_final"), request_id="ok")
res["ok"] = take(1)
c.stop_stream()
res["ready"] = c.is_model_ready("sender_rules")
`);
    // Triton's stub reports it as a batch error: the usual prefix, then the rule.
    expect(r.return_list[0].error).toMatch(
      /^Failed to process the request\(s\) for model '[^']+', message: Python model '[^']+' is using the decoupled mode and the execute function must return None\.$/,
    );
    expect(r.report[0].outputs.OUT).toEqual(['Unable to send response. Response sender has been closed.']);
    expect(r.raise[0].error).toMatch(/^Failed to process the request\(s\) for model '[^']+', message: TritonModelException: Intentional Error/);
    expect(r.drop[0].error).toContain('without sending a response with the FINAL flag');
    expect(r.ok[0].outputs.OUT).toEqual(['only']);
    expect(r.ready).toBe(true);
  });

  it('non-decoupled: one response at most, no FINAL before a response', async () => {
    const r = await run(String.raw`
def infer(m):
    return [x.decode() for x in c.infer("sender_rules_sync", inputs(mode(m))).as_numpy("OUT").reshape(-1)]
res["two"] = infer("two")
res["report"] = infer("report")
res["final_first"] = infer("final_first")
`);
    expect(r.two).toEqual(['a']);
    expect(r.report).toEqual(['Unable to send response. Non-decoupled model cannot send more than one response.']);
    expect(r.final_first).toEqual(['Unable to send response. Non-decoupled model cannot send complete final before sending a response.']);
  });
});

describe('async def execute', () => {
  it('decoupled coroutines are scheduled, not awaited; non-decoupled ones are awaited', async () => {
    const r = await run(String.raw`
send("async_execute", mode("wait"), request_id="w")
time.sleep(0.2)
send("async_execute", mode("release"), request_id="r")
res["items"] = take(2, timeout=20)
c.stop_stream()
res["sync"] = c.infer("async_execute_sync", inputs(mode("x"))).as_numpy("OUT")[0].decode()
`);
    // "wait" blocks its coroutine until "release" runs: only possible if execute() returned.
    expect(r.items.map((x: any) => [x.id, x.outputs.OUT[0]]).sort()).toEqual([
      ['r', 'releaser'],
      ['w', 'released'],
    ]);
    expect(r.sync).toBe('awaited');
  });
});

describe('cancellation and HTTP', () => {
  it('stop_stream(cancel_requests=True) cancels the requests in flight; the model sees is_cancelled()', async () => {
    const r = await run(String.raw`
for tag in ("s1", "s2"):
    send("cancel_loop", {"N": ${i32(100000)}}, request_id=tag,
         parameters={"interval_ms": 20, "marker_dir": ${JSON.stringify(markers)}, "tag": tag})
got = take(6)
c.stop_stream(cancel_requests=True)
res["got"] = len(got)
`);
    expect(r.got).toBe(6);
    for (const tag of ['s1', 's2']) {
      const seen = await waitForJson(path.join(markers, tag));
      expect({ tag, ...seen }).toMatchObject({ tag, request: true, sender: true });
      expect((seen as { sent: number }).sent).toBeGreaterThan(0);
    }
    // The model logs before it writes the marker, but the log line reaches us through the
    // server's stdout pipe, which may still be on its way.
    const line = "cancel_loop: 's1' cancelled after";
    await waitFor("the model's cancellation log line", () => server.log().includes(line));
    expect(server.log()).toContain(line);
  });

  it('an HTTP /infer client that resets its connection cancels its request (beyond Triton)', async () => {
    // A reset: a client's FIN after a whole request is a half-close, which is answered
    // (test/e2e/http-half-close.test.ts).
    const body = JSON.stringify({
      inputs: [{ name: 'N', datatype: 'INT32', shape: [1], data: [20000] }],
      parameters: { marker_dir: markers, tag: 'http-infer' },
    });
    const reset = postThenReset(server.httpPort, '/v2/models/cancel_loop_sync/infer', body);
    await new Promise((r) => setTimeout(r, 500));
    reset();
    const seen = await waitForJson(path.join(markers, 'http-infer'));
    expect(seen).toMatchObject({ request: true, sender: true });
  });

  it('HTTP /infer answers 501 for a decoupled model', async () => {
    const res = await fetch(`${server.http}/v2/models/square_int32/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [1] }] }),
    });
    expect(res.status).toBe(501);
    expect(await res.json()).toEqual({ error: "HTTP end point doesn't support models with decoupled transaction policy" });
  });
});
