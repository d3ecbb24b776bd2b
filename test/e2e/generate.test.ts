/**
 * End-to-end HTTP `generate` and `generate_stream` with the real CLI and real
 * Python stubs, for non-decoupled and decoupled models: Triton's request mapping (inputs by
 * key, shapes fitted to the metadata, other keys as parameters), the flat response objects, one
 * server-sent event per model response, in-band errors, Triton's error texts, and (beyond
 * Triton) a client disconnect that cancels the request.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { repoWithTwins, tempDir, waitForJson } from './twin-helpers.js';

let server: Tritium;
let markers: string;

beforeAll(async () => {
  const repo = repoWithTwins(['add_sub', 'repeat_int32', 'text_stream', 'sender_rules', 'cancel_loop']);
  markers = tempDir('tritium-gen-');
  server = await startTritium({ repos: [repo] });
}, 120_000);

afterAll(() => stopAndExpectNoShm(server));

interface Reply {
  status: number;
  type: string | null;
  text: string;
}

async function post(model: string, endpoint: 'generate' | 'generate_stream', body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(`${server.http}/v2/models/${model}/${endpoint}`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

/** The JSON payloads of an event-stream body; asserts the `data: ...\n\n` framing. */
function events(text: string): unknown[] {
  expect(text.endsWith('\n\n') || text === '').toBe(true);
  return text
    .split('\n\n')
    .filter((e) => e !== '')
    .map((e) => {
      expect(e.startsWith('data: ')).toBe(true);
      return JSON.parse(e.slice(6));
    });
}

const SSE = 'text/event-stream; charset=utf-8';
const addSub = { id: 'g1', INPUT0: [1, 2, 3, 4], INPUT1: [1, 1, 1, 1] };

describe('generate', () => {
  it('a non-decoupled model: one flat JSON object, keys in byte order', async () => {
    const r = await post('add_sub', 'generate', addSub);
    expect([r.status, r.type]).toEqual([200, 'application/json']);
    expect(r.text).toBe('{"OUTPUT0":[2,3,4,5],"OUTPUT1":[0,1,2,3],"id":"g1","model_name":"add_sub","model_version":"1"}');
  });

  it('a decoupled model with exactly one response; more than one is refused as Triton does', async () => {
    let r = await post('text_stream', 'generate', { text_input: 'hello' });
    expect([r.status, r.type]).toEqual([200, 'application/json']);
    expect(JSON.parse(r.text)).toEqual({ model_name: 'text_stream', model_version: '1', text_output: 'hello' });
    r = await post('text_stream', 'generate', { text_input: 'hello big world' });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({
      error: 'generate expects model to produce exactly 1 response, use generate stream for model that generates various number of responses',
    });
  });

  it('response parameters become top-level keys; an error response is a JSON error', async () => {
    let r = await post('sender_rules', 'generate', { MODE: 'params' });
    expect(r.text).toBe('{"OUT":"p","model_name":"sender_rules","model_version":"1","p_bool":true,"p_int":7,"p_str":"s"}');
    r = await post('sender_rules', 'generate', { MODE: 'error_final' });
    expect([r.status, JSON.parse(r.text)]).toEqual([503, { error: 'final error' }]);
  });

  it("Triton's errors before inference: lookup, JSON, parameter types, shapes, encoding, validation", async () => {
    const cases: Array<[string, unknown, Record<string, string>, number, string]> = [
      ['nope', {}, {}, 404, "Request for unknown model: 'nope' is not found"],
      ['add_sub', '{"INPUT0": [1,', {}, 400, 'failed to parse the request JSON buffer'],
      ['add_sub', '[1, 2]', {}, 500, 'attempt to get members for non-object'],
      ['add_sub', { id: 5 }, {}, 500, "Unable to parse 'id'"],
      ['add_sub', { ...addSub, extra: [1, 2] }, {}, 400, "parameter 'extra' has invalid type. It should be either 'int', 'bool', or 'string'."],
      ['add_sub', { ...addSub, parameters: 3 }, {}, 500, "Expected JSON object for keyword: 'parameters'"],
      ['add_sub', { ...addSub, INPUT0: [1, 2, 3] }, {}, 400, "The schema can not convert input 'INPUT0' to tensor with proper shape"],
      ['add_sub', addSub, { 'Content-Encoding': 'gzip' }, 400, "Unsupported content-encoding, only 'identity' is supported."],
      ['add_sub', { INPUT0: [1, 2, 3, 4] }, {}, 400, 'expected 2 inputs but got 1 inputs'],
    ];
    for (const [model, body, headers, status, text] of cases) {
      const r = await post(model, 'generate_stream', body, headers);
      expect({ model, body, status: r.status, type: r.type }).toEqual({ model, body, status, type: 'application/json' });
      expect(JSON.parse(r.text).error).toContain(text);
    }
    expect((await fetch(`${server.http}/v2/models/add_sub/generate`)).status).toBe(405);
  });
});

describe('generate_stream', () => {
  it('a non-decoupled model: one event', async () => {
    const r = await post('add_sub', 'generate_stream', addSub);
    expect([r.status, r.type]).toEqual([200, SSE]);
    expect(r.text).toBe('data: {"OUTPUT0":[2,3,4,5],"OUTPUT1":[0,1,2,3],"id":"g1","model_name":"add_sub","model_version":"1"}\n\n');
  });

  it('a decoupled model: one event per response, in order, none for the flags-only FINAL', async () => {
    let r = await post('text_stream', 'generate_stream', { text_input: 'the quick brown fox', parameters: { delay_ms: 5 } });
    expect([r.status, r.type]).toEqual([200, SSE]);
    expect(events(r.text)).toEqual(['the', 'quick', 'brown', 'fox'].map((w) => ({ model_name: 'text_stream', model_version: '1', text_output: w })));
    // repeat_int32: IN/DELAY 1-D, WAIT a scalar fitted to its [1] shape.
    r = await post('repeat_int32', 'generate_stream', { IN: [5, 6, 7], DELAY: [0, 10, 0], WAIT: 0, id: 'rep' });
    expect(events(r.text)).toEqual([5, 6, 7].map((v, i) => ({ IDX: i, OUT: v, id: 'rep', model_name: 'repeat_int32', model_version: '1' })));
    r = await post('repeat_int32', 'generate_stream', { IN: [], DELAY: [], WAIT: 0 });
    expect([r.status, r.text]).toEqual([200, '']);
  });

  it('errors: in-band after the first event; the first response fixes the status', async () => {
    let r = await post('sender_rules', 'generate_stream', { MODE: 'errors' });
    expect([r.status, r.type]).toEqual([200, SSE]);
    expect(events(r.text)).toEqual([
      { OUT: 'first', model_name: 'sender_rules', model_version: '1' },
      { error: 'mid-stream error' },
      { OUT: 'second', model_name: 'sender_rules', model_version: '1' },
    ]);
    r = await post('sender_rules', 'generate_stream', { MODE: 'error_final' });
    expect([r.status, r.type, events(r.text)]).toEqual([503, SSE, [{ error: 'final error' }]]);
  });

  it('a client that disconnects cancels the request (beyond Triton)', async () => {
    const abort = new AbortController();
    const res = await fetch(`${server.http}/v2/models/cancel_loop/generate_stream`, {
      method: 'POST',
      body: JSON.stringify({ N: 100000, marker_dir: markers, parameters: { tag: 'sse', interval_ms: 20 } }),
      signal: abort.signal,
    });
    expect([res.status, res.headers.get('content-type')]).toEqual([200, SSE]);
    const reader = res.body!.getReader();
    let text = '';
    while ((text.match(/\n\n/g) ?? []).length < 3) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
    }
    abort.abort();
    await reader.cancel().catch(() => undefined);
    expect(events(text.slice(0, text.lastIndexOf('\n\n') + 2)).slice(0, 3)).toEqual(
      [0, 1, 2].map((i) => ({ OUT: i, model_name: 'cancel_loop', model_version: '1' })),
    );
    const seen = await waitForJson(path.join(markers, 'sse'));
    expect(seen).toMatchObject({ request: true, sender: true });
    // The server is fine afterwards.
    const r = await post('add_sub', 'generate', addSub);
    expect(r.status).toBe(200);
  });
});
