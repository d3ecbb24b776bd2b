/**
 * Concurrent `async def execute` for non-decoupled models (beyond Triton, which awaits each
 * coroutine before the next batch): with CONCURRENT_ASYNC_EXECUTES (or
 * --backend-config=python,concurrent-async-executes) the requests of one instance run at once on
 * the stub's event loop, each answered when its coroutine returns; a coroutine that raises fails
 * its requests with Triton's batch error text; a client's cancel is seen in is_cancelled();
 * without the setting they run one after another, as in Triton.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editConfig, makeRepo, pythonResult, startTritium, stopAndExpectNoShm, TEST_MODELS, type Tritium } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  const repo = makeRepo(['async_concurrent', { from: path.join(TEST_MODELS, 'async_concurrent'), name: 'async_in_turn' }]);
  editConfig(repo, 'async_in_turn', (c) => c.replace(/parameters \{ key: "CONCURRENT_ASYNC_EXECUTES".*\n/, ''));
  server = await startTritium({ repos: [repo] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

async function sleepFor(model: string, ms: number): Promise<{ status: number; out?: number; peak?: number; error?: string }> {
  const body = JSON.stringify({ inputs: [{ name: 'MS', shape: [1], datatype: 'INT32', data: [ms] }] });
  const res = await fetch(`${server.http}/v2/models/${model}/infer`, { method: 'POST', body });
  const json = (await res.json()) as any;
  if (json.error !== undefined) return { status: res.status, error: json.error };
  const o = Object.fromEntries(json.outputs.map((t: { name: string; data: number[] }) => [t.name, t.data[0]]));
  return { status: res.status, out: o.OUT, peak: o.PEAK };
}

describe('async def execute, non-decoupled', () => {
  it('runs the requests of one instance at once with CONCURRENT_ASYNC_EXECUTES, each answered as it ends', async () => {
    const order: number[] = [];
    const answers = await Promise.all(
      [400, 100, 300, 200, 100, 300, 200, 400].map((ms) =>
        sleepFor('async_concurrent', ms).then((a) => {
          order.push(ms);
          return a;
        }),
      ),
    );
    expect(answers.map((a) => a.out)).toEqual([400, 100, 300, 200, 100, 300, 200, 400]);
    // Several executions were in flight at once, and short ones came back before long ones.
    expect(Math.max(...answers.map((a) => a.peak!))).toBeGreaterThan(1);
    expect(order.indexOf(100)).toBeLessThan(order.indexOf(400));
  });

  it('runs them one after another without it, as Triton does', async () => {
    const answers = await Promise.all([100, 100, 100, 100].map((ms) => sleepFor('async_in_turn', ms)));
    expect(answers.map((a) => a.peak)).toEqual([1, 1, 1, 1]);
  });

  it("fails a coroutine's requests with Triton's batch error text when it raises", async () => {
    const a = await sleepFor('async_concurrent', -1);
    expect(a.status).toBe(500);
    expect(a.error).toMatch(/^Failed to process the request\(s\) for model 'async_concurrent_0_0', message: ValueError: negative sleep/);
  });

  it('lets a coroutine see its client cancel (gRPC), while the others go on', async () => {
    const res = await pythonResult(
      `import json, queue, time, numpy as np\nimport tritonclient.grpc as g\nc = g.InferenceServerClient('127.0.0.1:${server.grpcPort}')`,
      `
def inp(ms):
    t = g.InferInput("MS", [1], "INT32"); t.set_data_from_numpy(np.array([ms], np.int32)); return [t]
done = queue.Queue()
call = c.async_infer("async_concurrent", inp(5000), lambda result, error: done.put(("long", result, error)))
c.async_infer("async_concurrent", inp(100), lambda result, error: done.put(("short", result, error)))
time.sleep(0.3)
call.cancel()
got = {}
for _ in range(2):
    name, result, error = done.get(timeout=30)
    got[name] = str(error) if error is not None else int(result.as_numpy("OUT")[0])
res["got"] = got
`,
    );
    expect(res.got.short).toBe(100);
    expect(res.got.long).toMatch(/CANCELLED/i);
    for (let i = 0; i < 100 && !server.log().includes('async_concurrent: cancelled after'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(server.log()).toMatch(/async_concurrent: cancelled after \d+ ms/);
  });
});
