/**
 * A non-decoupled Python model answering through its response sender after `execute` returned
 * (docs/protocol-notes.md, "Response sender": the sender is usable after execute returns and from other threads),
 * end to end with the real CLI, a real stub and tritonclient over HTTP and gRPC. A request the
 * model never finishes does not hang: it fails when its sender is dropped or the instance stops.
 * A second response is refused in the model while the first reaches the client (as Triton 2.51
 * does; compared on it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium, pythonResult } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['sender_after_return', 'reschedule_request'])] });
}, 120_000);

afterAll(() => stopAndExpectNoShm(server));

const DROPPED = "Python model 'sender_after_return_0' released the request without sending a response with the FINAL flag.";
const MORE_THAN_ONE = 'Unable to send response. Non-decoupled model cannot send more than one response.';

/**
 * Runs a client script. Prelude: `http` and `grpc` clients; `infer(client, mode)` returns
 * {"out": [...]} or {"error": text, "status"}; `start(mode)` sends a gRPC request in the background
 * and returns a queue its result lands in (same shape); `wait_kept(n)` waits until the model holds
 * n senders.
 */
async function run(body: string): Promise<any> {
  return pythonResult(
    String.raw`
import json, os, queue, signal, threading, time
import numpy as np
import tritonclient.grpc as tg
import tritonclient.http as th
from tritonclient.utils import InferenceServerException
http = th.InferenceServerClient(${JSON.stringify(`127.0.0.1:${server.httpPort}`)})
grpc = tg.InferenceServerClient(${JSON.stringify(`127.0.0.1:${server.grpcPort}`)})
def mode_input(mod, m):
    i = mod.InferInput("MODE", [1], "BYTES")
    i.set_data_from_numpy(np.array([m.encode()], dtype=np.object_))
    return [i]
def result(r):
    return {"out": [x.decode() for x in r.as_numpy("OUT").reshape(-1).tolist()]}
def infer(client, m):
    mod = th if client is http else tg
    try:
        return result(client.infer("sender_after_return", mode_input(mod, m)))
    except InferenceServerException as e:
        return {"error": e.message(), "status": e.status()}
def start(m):
    # A thread with a blocking call: gRPC's async_infer callbacks do not run reliably in a
    # process that also imported the gevent-based HTTP client.
    q = queue.Queue()
    threading.Thread(target=lambda: q.put(infer(grpc, m)), daemon=True).start()
    return q
def wait_kept(n):
    # Bounded wait until the model holds n senders (their execute has returned).
    for _ in range(600):
        if infer(http, "kept") == {"out": [str(n)]}:
            return
        time.sleep(0.05)
    raise TimeoutError(f"the model never held {n} senders")
`,
    body,
  );
}

describe('non-decoupled response sender after execute returned', () => {
  it('a response sent with FINAL from a thread after execute returned None or [None] is delivered', async () => {
    const r = await run(String.raw`
for m in ("late", "late_list", "late_two_step"):
    res[m] = [infer(http, m), infer(grpc, m)]
`);
    expect(r.late).toEqual([{ out: ['late'] }, { out: ['late'] }]);
    expect(r.late_list).toEqual([{ out: ['late_list'] }, { out: ['late_list'] }]);
    expect(r.late_two_step).toEqual([{ out: ['two_step'] }, { out: ['two_step'] }]);
  });

  it('a request dropped without FINAL fails when its sender is released, not when execute returns', async () => {
    const r = await run(String.raw`
res["drop"] = [infer(http, "drop"), infer(grpc, "drop")]
kept = [start("keep"), start("keep")]
wait_kept(2)
# Both kept requests are still open after execute returned, while other requests are served.
res["between"] = infer(http, "late")
res["open"] = [q.empty() for q in kept]
res["release"] = infer(http, "release")
res["kept"] = [q.get(timeout=30) for q in kept]
`);
    expect(r.drop).toEqual([
      { error: DROPPED, status: '500' },
      { error: DROPPED, status: 'StatusCode.INTERNAL' },
    ]);
    expect(r.between).toEqual({ out: ['late'] });
    expect(r.open).toEqual([true, true]);
    expect(r.release).toEqual({ out: ['released 2'] });
    expect(r.kept).toEqual([
      { error: DROPPED, status: 'StatusCode.INTERNAL' },
      { error: DROPPED, status: 'StatusCode.INTERNAL' },
    ]);
  });

  it('a second response raises in the model and the first one reaches the client', async () => {
    const r = await run(String.raw`
res["two_raise"] = [infer(http, "two_raise"), infer(grpc, "two_raise")]
res["final_then_two"] = [infer(http, "final_then_two"), infer(grpc, "final_then_two")]
res["caught"] = infer(http, "report")
`);
    expect(r.two_raise).toEqual([{ out: ['first'] }, { out: ['first'] }]);
    expect(r.final_then_two).toEqual([{ out: ['first'] }, { out: ['first'] }]);
    expect(r.caught).toEqual({ out: [MORE_THAN_ONE, MORE_THAN_ONE, MORE_THAN_ONE, MORE_THAN_ONE] });
    // The exception left execute: logged as a batch failure, as Triton's stub does.
    expect(server.log()).toContain(`Failed to process the request(s) for model 'sender_after_return_0', message: TritonModelException: ${MORE_THAN_ONE}`);
  });

  // Last: the instance is restarted afterwards.
  it('a request still open when the instance stops fails at once', async () => {
    const r = await run(String.raw`
pid = int(infer(http, "pid")["out"][0])
kept = start("keep")
wait_kept(1)
os.kill(pid, signal.SIGKILL)
res["kept"] = kept.get(timeout=30)
`);
    expect(r.kept.status).toBe('StatusCode.INTERNAL');
    expect(r.kept.error).toMatch(/^Stub process 'sender_after_return_0' is not healthy\. The stub was killed by SIGKILL/);
  });
});

describe('request rescheduling', () => {
  it('fails a rescheduled non-decoupled request with a reason instead of leaving it unanswered', async () => {
    const res = await fetch(`http://127.0.0.1:${server.httpPort}/v2/models/reschedule_request/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'IN', datatype: 'INT32', shape: [1], data: [1] }] }),
    });
    // Triton's text (its Python backend only logs it and leaves the client waiting).
    expect(res.status).toBe(400);
    expect((await res.json()).error).toBe(
      'Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a flag.',
    );
  });
});
