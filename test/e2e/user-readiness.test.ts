/**
 * A Python model's own readiness check, `is_ready()` (docs/protocol-notes.md, "A model's own readiness check"), end to end with
 * the real CLI, real stubs and tritonclient over HTTP and gRPC. A model whose is_ready returns
 * False, raises, returns a non-bool or answers after Triton's 5 s bound is not ready on the model
 * and server readiness endpoints, with Triton's text in the log; each request to an endpoint
 * evaluates it at most once (concurrent ones share the call in flight), inference never calls
 * it, and it answers while execute runs.
 *
 * Triton 2.51 predates is_ready() (python_backend added it in 2026): texts and the 5 s bound
 * follow the spec; the endpoints' answers for "not ready" (HTTP 400 `Model version not ready`,
 * gRPC `ready: false`) are the ones they give for any failing runtime check.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, TEST_MODELS, type Tritium, pythonResult } from '../helpers/server.js';

const FIXTURE = path.join(TEST_MODELS, 'user_readiness');
const BEHAVIOURS = ['true', 'false', 'raises', 'non_bool', 'async_false', 'slow'] as const;

const NOT_READY_BODY = { error: 'Model version not ready' };
const userFailed = (m: string) => `Model '${m}_0' is not ready (user-defined check failed).`;
const NOT_BOOL = 'is_ready() must return a boolean value';
const TIMED_OUT = 'Timed out waiting for user-defined is_ready() response';

/** Lines of `<repo>/<model>.is_ready_calls`: how often the model's is_ready() ran. */
function calls(repo: string, model: string): number {
  try {
    return fs
      .readFileSync(path.join(repo, `${model}.is_ready_calls`), 'utf8')
      .split('\n')
      .filter(Boolean).length;
  } catch {
    return 0;
  }
}

async function httpReady(server: Tritium, url: string): Promise<{ status: number; body: unknown }> {
  const r = await fetch(`${server.http}${url}`, { signal: AbortSignal.timeout(60_000) });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : '' };
}

/** Runs a tritonclient script with `http` and `grpc` clients; it fills `res`. */
async function client(server: Tritium, body: string): Promise<any> {
  return pythonResult(
    String.raw`
import json, threading
import numpy as np
import tritonclient.grpc as tg
import tritonclient.http as th
http = th.InferenceServerClient(${JSON.stringify(`127.0.0.1:${server.httpPort}`)}, network_timeout=60)
grpc = tg.InferenceServerClient(${JSON.stringify(`127.0.0.1:${server.grpcPort}`)})
`,
    body,
  );
}

describe('is_ready() with strict readiness (the default)', () => {
  let server: Tritium;
  let repo: string;

  beforeAll(async () => {
    repo = makeRepo(BEHAVIOURS.map((b) => ({ from: FIXTURE, name: `ready_${b}` })));
    server = await startTritium({ repos: [repo] });
  }, 120_000);

  afterAll(() => stopAndExpectNoShm(server));

  it('returning True: the model is ready over HTTP and gRPC', async () => {
    expect(await httpReady(server, '/v2/models/ready_true/ready')).toEqual({ status: 200, body: '' });
    expect(await httpReady(server, '/v2/models/ready_true/versions/1/ready')).toEqual({ status: 200, body: '' });
    const r = await client(server, `res["http"] = http.is_model_ready("ready_true"); res["grpc"] = grpc.is_model_ready("ready_true")`);
    expect(r).toEqual({ http: true, grpc: true });
  });

  it('False, an exception, a non-bool or an async False: not ready over HTTP and gRPC, with the reason logged', async () => {
    for (const m of ['ready_false', 'ready_raises', 'ready_non_bool', 'ready_async_false']) {
      expect(await httpReady(server, `/v2/models/${m}/ready`)).toEqual({ status: 400, body: NOT_READY_BODY });
      expect(await httpReady(server, `/v2/models/${m}/versions/1/ready`)).toEqual({ status: 400, body: NOT_READY_BODY });
      const r = await client(server, `res["http"] = http.is_model_ready("${m}"); res["grpc"] = grpc.is_model_ready("${m}", "1")`);
      expect(r, m).toEqual({ http: false, grpc: false });
    }
    const log = server.log();
    expect(log).toContain(`[ready_false/ready_false_0] ${userFailed('ready_false')}`);
    expect(log).toContain(`[ready_async_false/ready_async_false_0] ${userFailed('ready_async_false')}`);
    expect(log).toContain('[ready_raises/ready_raises_0] ValueError: the database connection is gone');
    expect(log).toContain(`[ready_non_bool/ready_non_bool_0] ${NOT_BOOL}`);
  });

  it('each readiness request evaluates is_ready() once, and inference never calls it', async () => {
    const before = calls(repo, 'ready_false');
    for (let i = 0; i < 3; i++) expect((await httpReady(server, '/v2/models/ready_false/ready')).status).toBe(400);
    await client(server, `res["grpc"] = [grpc.is_model_ready("ready_false") for _ in range(2)]`);
    expect(calls(repo, 'ready_false')).toBe(before + 5);
    const r = await client(
      server,
      String.raw`
out = []
for c, mod in ((http, th), (grpc, tg), (http, th)):
    i = mod.InferInput("SECONDS", [1], "FP32")
    i.set_data_from_numpy(np.array([0.0], dtype=np.float32))
    out.append(c.infer("ready_false", [i]).as_numpy("OUT").tolist())
res["out"] = out
`,
    );
    // A model that says it is not ready still serves requests (Triton does not gate inference on it).
    expect(r.out).toEqual([[0], [0], [0]]);
    expect(calls(repo, 'ready_false')).toBe(before + 5);
  });

  it('an is_ready() slower than 5 s: not ready, the endpoints answer, and concurrent checks share one call', async () => {
    const before = calls(repo, 'ready_slow');
    const r = await client(
      server,
      String.raw`
out = {}
def probe(key, fn):
    out[key] = fn()
threads = [threading.Thread(target=probe, args=("grpc", lambda: grpc.is_model_ready("ready_slow")))]
threads += [threading.Thread(target=probe, args=(f"http{k}", lambda: th.InferenceServerClient(${JSON.stringify(`127.0.0.1:${server.httpPort}`)}, network_timeout=60).is_model_ready("ready_slow"))) for k in range(3)]
for t in threads: t.start()
for t in threads: t.join(60)
res = out
`,
    );
    expect(r).toEqual({ grpc: false, http0: false, http1: false, http2: false });
    expect(calls(repo, 'ready_slow')).toBe(before + 1);
    expect(server.log()).toContain(`[ready_slow/ready_slow_0] ${TIMED_OUT}`);
  });

  it('readiness answers while execute computes for several seconds', async () => {
    const r = await client(
      server,
      String.raw`
import time
i = tg.InferInput("SECONDS", [1], "FP32")
i.set_data_from_numpy(np.array([4.0], dtype=np.float32))
done = {}
def run():
    done["out"] = grpc.infer("ready_true", [i]).as_numpy("OUT").tolist()
t = threading.Thread(target=run)
t.start()
time.sleep(0.5)  # let execute start
res["ready"] = [http.is_model_ready("ready_true"), grpc.is_model_ready("ready_true")]
res["execute_still_running"] = "out" not in done
t.join(60)
res["out"] = done["out"]
`,
    );
    expect(r).toEqual({ ready: [true, true], execute_still_running: true, out: [4] });
  });

  // Last: it asks the slow model too, whose call then outlives the test.
  it('the server is not ready while a model says it is not', async () => {
    expect(await httpReady(server, '/v2/health/ready')).toEqual({ status: 400, body: '' });
    const r = await client(server, `res["http"] = http.is_server_ready(); res["grpc"] = grpc.is_server_ready()`);
    expect(r).toEqual({ http: false, grpc: false });
  });
});

describe('is_ready() with --strict-readiness=false', () => {
  let server: Tritium;
  let repo: string;

  beforeAll(async () => {
    repo = makeRepo([{ from: FIXTURE, name: 'ready_false' }]);
    server = await startTritium({ repos: [repo], args: ['--strict-readiness=false'] });
  }, 120_000);

  afterAll(() => stopAndExpectNoShm(server));

  it('the server is ready without asking the models; the model itself is still not ready', async () => {
    expect(await httpReady(server, '/v2/health/ready')).toEqual({ status: 200, body: '' });
    const r = await client(server, `res["server"] = [http.is_server_ready(), grpc.is_server_ready()]`);
    expect(r.server).toEqual([true, true]);
    expect(calls(repo, 'ready_false')).toBe(0);
    expect(await httpReady(server, '/v2/models/ready_false/ready')).toEqual({ status: 400, body: NOT_READY_BODY });
    expect(calls(repo, 'ready_false')).toBe(1);
  });
});
