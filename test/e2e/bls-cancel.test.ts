/**
 * Cancelling a decoupled BLS stream from the model (docs/protocol-notes.md, "BLS calls from a
 * model"): the shapes of Triton's qa decoupled_bls_cancel, decoupled_bls_async_cancel and
 * decoupled_bls_cancel_after_complete. A caller sums stream_until_cancelled's responses and calls
 * the iterator's cancel() at a bound: the target sees is_cancelled(), ends the stream with its
 * CANCELLED error and the caller answers normally; a target that ignores the cancellation streams
 * on to its own FINAL; cancel() twice, and after the end, does nothing. Real stubs, tritonclient.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, pythonResult, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['stream_until_cancelled', 'bls_cancel_sum', 'bls_cancel_sum_async'])] });
}, 120_000);

afterAll(() => stopAndExpectNoShm(server));

interface Answer {
  sum?: number;
  isCancelled?: boolean;
  responses?: number;
  error?: string;
}

/** Asks `model` to sum INPUT-valued responses up to maxSum, of at most maxCount. */
async function sum(model: string, o: { input: number; maxSum: number; maxCount: number; ignoreCancel: boolean }): Promise<Answer> {
  const r = await pythonResult(
    String.raw`
import json
import numpy as np
import tritonclient.http as h
from tritonclient.utils import InferenceServerException
c = h.InferenceServerClient("127.0.0.1:${server.httpPort}", network_timeout=120)
def tensor(name, dtype, value):
    t = h.InferInput(name, [1], dtype)
    t.set_data_from_numpy(np.array([value], dtype={"INT32": np.int32, "BOOL": np.bool_}[dtype]))
    return t
`,
    String.raw`
inputs = [tensor("INPUT", "INT32", ${o.input}), tensor("MAX_SUM", "INT32", ${o.maxSum}),
          tensor("MAX_RESPONSE_COUNT", "INT32", ${o.maxCount}), tensor("IGNORE_CANCEL", "BOOL", ${o.ignoreCancel ? 'True' : 'False'})]
try:
    x = c.infer(${JSON.stringify(model)}, inputs)
    res["sum"] = int(x.as_numpy("SUM")[0])
    res["isCancelled"] = bool(x.as_numpy("IS_CANCELLED")[0])
    res["responses"] = int(x.as_numpy("RESPONSES")[0])
except InferenceServerException as e:
    res["error"] = e.message()
`,
  );
  return r as Answer;
}

describe.each([
  ['exec(decoupled=True)', 'bls_cancel_sum'],
  ['await async_exec(decoupled=True)', 'bls_cancel_sum_async'],
])('cancel() on the response iterator of %s', (_api, model) => {
  it('the target sees is_cancelled(), ends the stream with its CANCELLED error, and the caller answers its sum', async () => {
    // 3 per response: the bound 15 is reached at the 5th of at most 1000 (20 s of stream).
    const r = await sum(model, { input: 3, maxSum: 15, maxCount: 1000, ignoreCancel: false });
    expect(r.error).toBeUndefined();
    expect(r.isCancelled).toBe(true);
    // The cancel reaches the target between two of its 20 ms sends; one more may already be on its way.
    expect(r.sum).toBeGreaterThanOrEqual(15);
    expect(r.sum).toBeLessThanOrEqual(18);
    // Every OUTPUT response, then the CANCELLED error as the last item.
    expect(r.responses).toBe(r.sum! / 3 + 1);
  });

  it('a target that ignores the cancellation streams on to its own FINAL; repeated cancel() calls do nothing', async () => {
    const r = await sum(model, { input: 2, maxSum: 4, maxCount: 8, ignoreCancel: true });
    expect(r).toEqual({ sum: 16, isCancelled: false, responses: 8 });
  });

  it('cancel() after the stream completed is a no-op', async () => {
    // The bound is never reached: the stream ends with the target's FINAL, then cancel() is called.
    const r = await sum(model, { input: 1, maxSum: 100, maxCount: 3, ignoreCancel: false });
    expect(r).toEqual({ sum: 3, isCancelled: false, responses: 3 });
  });
});
