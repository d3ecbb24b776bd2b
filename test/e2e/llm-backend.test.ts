/**
 * A text-generation model served by a Python-based backend configured as vLLM models are
 * (`backend` only, KIND_MODEL, engine arguments in model.json): test/backends/toy_llm is
 * tritium's own backend in the vLLM backend's shape, with a toy engine as the test double of a
 * GPU engine (the vLLM backend's source is not reachable from this machine). HTTP generate and
 * generate_stream with sampling_parameters, tritonclient's gRPC stream, and a cancelled stream
 * that the engine sees through its response sender.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { makeRepo, pythonResult, ROOT, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['toy_llm'])], args: [`--backend-directory=${path.join(ROOT, 'test', 'backends')}`] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

/** The JSON payloads of an event-stream body. */
function events(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => JSON.parse(e.slice('data: '.length)) as Record<string, unknown>);
}

describe('an LLM-style Python-based backend', () => {
  it('is decoupled with the inputs of its auto_complete_config, on a KIND_MODEL instance', async () => {
    const config = (await (await fetch(`${server.http}/v2/models/toy_llm/config`)).json()) as any;
    expect(config.runtime).toBe('model.py');
    expect(config.model_transaction_policy.decoupled).toBe(true);
    expect(config.instance_group[0].kind).toBe('KIND_MODEL');
    expect(config.input.map((i: { name: string; optional: boolean }) => [i.name, i.optional])).toEqual([
      ['text_input', false],
      ['stream', true],
      ['sampling_parameters', true],
      ['exclude_input_in_output', true],
    ]);
  });

  it('streams over HTTP generate_stream with sampling_parameters, and answers generate once', async () => {
    const body = JSON.stringify({ text_input: 'one two three four', stream: true, sampling_parameters: JSON.stringify({ max_tokens: 3 }) });
    const res = await fetch(`${server.http}/v2/models/toy_llm/generate_stream`, { method: 'POST', body });
    expect(res.status).toBe(200);
    expect(events(await res.text()).map((e) => e.text_output)).toEqual(['four', ' three', ' two']);
    const once = await fetch(`${server.http}/v2/models/toy_llm/generate`, {
      method: 'POST',
      body: JSON.stringify({ text_input: 'a b', exclude_input_in_output: true }),
    });
    expect(((await once.json()) as { text_output: string }).text_output).toBe('b a');
  });

  it("streams over tritonclient's gRPC stream, and a cancelled stream stops the engine", async () => {
    const res = await pythonResult(
      `import json, queue, time, numpy as np\nimport tritonclient.grpc as g\nc = g.InferenceServerClient('127.0.0.1:${server.grpcPort}')`,
      `
def inputs(prompt, stream, params):
    t = g.InferInput("text_input", [1], "BYTES"); t.set_data_from_numpy(np.array([prompt.encode()], np.object_))
    s = g.InferInput("stream", [1], "BOOL"); s.set_data_from_numpy(np.array([stream]))
    p = g.InferInput("sampling_parameters", [1], "BYTES"); p.set_data_from_numpy(np.array([json.dumps(params).encode()], np.object_))
    return [t, s, p]
q = queue.Queue()
c.start_stream(callback=lambda result, error: q.put((result, error)))
c.async_stream_infer("toy_llm", inputs("w x y z", True, {"max_tokens": 4}), request_id="s", enable_empty_final_response=True)
pieces = []
while True:
    r, e = q.get(timeout=30)
    assert e is None, str(e)
    if r.get_response().parameters["triton_final_response"].bool_param:
        break
    pieces.append(r.as_numpy("text_output")[0].decode())
c.stop_stream()
res["pieces"] = pieces
# A long generation, cancelled after a few tokens.
c.start_stream(callback=lambda result, error: q.put((result, error)))
c.async_stream_infer("toy_llm", inputs(" ".join(str(i) for i in range(400)), True, {"max_tokens": 400}), request_id="long")
first = q.get(timeout=30)
time.sleep(0.1)
c.stop_stream(cancel_requests=True)
res["first"] = first[0].as_numpy("text_output")[0].decode() if first[1] is None else str(first[1])
`,
    );
    expect(res.pieces).toEqual(['z', ' y', ' x', ' w']);
    expect(res.first).toBe('399');
    for (let i = 0; i < 100 && !/toy_llm: request cancelled after \d+ token/.test(server.log()); i++) await new Promise((r) => setTimeout(r, 50));
    const seen = /toy_llm: request cancelled after (\d+) token/.exec(server.log());
    expect(seen).not.toBeNull();
    expect(Number(seen![1])).toBeLessThan(400);
  });
});
