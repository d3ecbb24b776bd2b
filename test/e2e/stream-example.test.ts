/**
 * The streaming example of python_models/ end to end: stream_frontend (Python, oldest strategy,
 * START/END/READY/CORRID controls) computes each chunk's features and calls stream_encoder
 * (ONNX, implicit state) under the same correlation id. Several sequences stream at once over
 * tritonclient's gRPC stream and HTTP; every answer is checked against the same computation
 * in numpy. perf_analyzer --sequence-length=8 drives it over HTTP and gRPC.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWindows, perfAnalyzer, SEQUENCES_OVER_HTTP } from '../helpers/perf-analyzer.js';
import { makeRepo, pythonResult, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['stream_frontend', 'stream_encoder'])] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

describe('the streaming example (stream_frontend → stream_encoder)', () => {
  it('streams four sequences at once over gRPC and HTTP, each with its own state', async () => {
    const res = await pythonResult(
      `import json, queue, threading, numpy as np
import tritonclient.grpc as g
import tritonclient.http as h`,
      `
rng = np.random.default_rng(3)
chunks = {sid: [rng.standard_normal(16).astype(np.float32) for _ in range(6)] for sid in (1, 2, 3, 4)}

def expected(seq):
    state, out = np.zeros(4, np.float32), []
    for k, c in enumerate(seq):
        f = np.array([c.mean(), np.abs(c).mean(), c.min(), c.max()], np.float32)
        state = state * np.float32(0.5) + f * np.float32(0.5)
        out.append((state.copy(), k + 1, 16 * (k + 1)))
    return out

def check(sid, got):
    for (enc, step, samples), (want, wstep, wsamples) in zip(got, expected(chunks[sid])):
        assert np.allclose(enc, want, atol=1e-5), (sid, enc, want)
        assert (step, samples) == (wstep, wsamples), (sid, step, samples)
    return len(got)

# Three sequences interleaved on one gRPC stream.
results = {1: [], 2: [], 3: []}
q = queue.Queue()
gc = g.InferenceServerClient("127.0.0.1:${server.grpcPort}")
gc.start_stream(callback=lambda result, error: q.put((result, error)))
for k in range(6):
    for sid in (1, 2, 3):
        t = g.InferInput("AUDIO", [1, 16], "FP32"); t.set_data_from_numpy(chunks[sid][k].reshape(1, 16))
        gc.async_stream_infer("stream_frontend", [t], request_id=f"{sid}-{k}", sequence_id=sid, sequence_start=(k == 0), sequence_end=(k == 5))
for _ in range(18):
    r, e = q.get(timeout=30)
    assert e is None, str(e)
    sid = int(r.get_response().id.split("-")[0])
    results[sid].append((r.as_numpy("ENCODED")[0], int(r.as_numpy("STEP")[0][0]), int(r.as_numpy("SAMPLES")[0][0])))
gc.stop_stream()
res["grpc"] = [check(sid, results[sid]) for sid in (1, 2, 3)]

# A fourth over HTTP while the stream's sequences are over.
hc = h.InferenceServerClient("127.0.0.1:${server.httpPort}")
got = []
for k in range(6):
    t = h.InferInput("AUDIO", [1, 16], "FP32"); t.set_data_from_numpy(chunks[4][k].reshape(1, 16))
    r = hc.infer("stream_frontend", [t], sequence_id=4, sequence_start=(k == 0), sequence_end=(k == 5))
    got.append((r.as_numpy("ENCODED")[0], int(r.as_numpy("STEP")[0][0]), int(r.as_numpy("SAMPLES")[0][0])))
res["http"] = check(4, got)
`,
    );
    expect(res.grpc).toEqual([6, 6, 6]);
    expect(res.http).toBe(6);
    // Both models ran every chunk: 24 requests each, all through their sequence batchers.
    for (const model of ['stream_frontend', 'stream_encoder']) {
      const s = ((await (await fetch(`${server.http}/v2/models/${model}/stats`)).json()) as any).model_stats[0];
      expect(s.inference_stats.success.count, model).toBe(24);
    }
  });

  for (const protocol of ['http', 'grpc'] as const) {
    it(`perf_analyzer --sequence-length=8 over ${protocol}`, async () => {
      const port = protocol === 'grpc' ? server.grpcPort : server.httpPort;
      const { code, out } = await perfAnalyzer([
        '-m',
        'stream_frontend',
        '-i',
        protocol,
        ...(protocol === 'http' ? SEQUENCES_OVER_HTTP : []),
        '-u',
        `127.0.0.1:${port}`,
        '--shape',
        'AUDIO:16',
        '--sequence-length=8',
        '--concurrency-range',
        '4',
        ...countWindows(100),
      ]);
      expect(code, out).toBe(0);
      expect(out).not.toMatch(/error|failed/i);
      expect(out).toMatch(/Concurrency: 4, throughput: [\d.]+ infer\/sec/);
    });
  }
});
