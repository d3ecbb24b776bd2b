/**
 * Concurrent `async def execute` of a decoupled model with BLS inside (docs/design.md, "Async
 * execute"): Triton's qa async_execute_decouple_bls shape. Four requests sent at once to one
 * instance of async_bls_overlap each await a decoupled BLS call to async_sleep_decoupled; the
 * model counts how many of its coroutines are inside a call at once. All four overlap, and
 * `--backend-config=python,max-async-executes=N` bounds them. Concurrency is read from what the
 * model recorded, never from elapsed time. Real stubs, tritonclient.grpc streaming.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, pythonResult, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

interface Item {
  most?: number;
  start?: number;
  end?: number;
  error?: string;
}

/** Sends `n` requests on one stream at once and returns their answers. */
async function overlap(server: Tritium, n: number, waitMs: number): Promise<Item[]> {
  const r = await pythonResult(
    String.raw`
import json, queue
import numpy as np
import tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${server.grpcPort}")
q = queue.Queue()
def on_item(result, error):
    if error is not None:
        q.put({"error": error.message()})
    else:
        q.put({k: int(result.as_numpy(name)[0]) for k, name in (("most", "MOST_IN_FLIGHT"), ("start", "START"), ("end", "END"))})
c.start_stream(callback=on_item)
`,
    String.raw`
for i in range(${n}):
    t = g.InferInput("WAIT_MS", [1], "INT32"); t.set_data_from_numpy(np.array([${waitMs}], dtype=np.int32))
    c.async_stream_infer("async_bls_overlap", [t], request_id=str(i))
res["items"] = [q.get(timeout=60) for _ in range(${n})]
`,
    'c.stop_stream()\nc.close()',
  );
  return r.items as Item[];
}

const REPO = () => makeRepo(['async_bls_overlap', 'async_sleep_decoupled']);

describe('decoupled async def execute with BLS inside, one instance', () => {
  let server: Tritium;
  beforeAll(async () => {
    server = await startTritium({ repos: [REPO()] });
  }, 120_000);
  afterAll(() => stopAndExpectNoShm(server));

  it('four requests sent at once are all inside their BLS call at the same time', async () => {
    const items = await overlap(server, 4, 1500);
    expect(items.map((i) => i.error)).toEqual([undefined, undefined, undefined, undefined]);
    expect(Math.max(...items.map((i) => i.most!))).toBe(4);
    // Every call started before any of them ended (the model's own clock).
    expect(Math.max(...items.map((i) => i.start!))).toBeLessThan(Math.min(...items.map((i) => i.end!)));
  });
});

describe('--backend-config=python,max-async-executes=2', () => {
  let server: Tritium;
  beforeAll(async () => {
    server = await startTritium({ repos: [REPO()], args: ['--backend-config=python,max-async-executes=2'] });
  }, 120_000);
  afterAll(() => stopAndExpectNoShm(server));

  it('bounds the coroutines one instance runs at once; the others wait and are all answered', async () => {
    const items = await overlap(server, 4, 1000);
    expect(items.map((i) => i.error)).toEqual([undefined, undefined, undefined, undefined]);
    expect(Math.max(...items.map((i) => i.most!))).toBe(2);
  });
});
