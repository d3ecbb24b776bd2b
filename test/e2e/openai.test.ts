/**
 * The OpenAI API (frontends/openai/) on a real server: the official `openai` Python client
 * (sync and streaming, chat and completions), curl for the SSE framing, every refusal's status
 * and error object, and the two tensor formats end to end — python_models/tiny_chat and
 * test/backends/toy_llm in the vLLM backend's (toy_llm is the test double of the vLLM engine,
 * which needs a GPU and cannot run here), test/models/trtllm_style in TensorRT-LLM's — each
 * with a stream the client cancels.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from './infer-helpers.js';
import { editConfig, makeRepo, pythonResult, refusedStartLog, ROOT, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { stubPidsOf } from '../helpers/processes.js';

let server: Tritium;
let repo: string;

beforeAll(async () => {
  const trtllm = path.join(ROOT, 'test', 'models', 'trtllm_style');
  repo = makeRepo(['tiny_chat', 'toy_llm', 'trtllm_style', 'add_sub', { from: trtllm, name: 'trtllm_once' }, { from: trtllm, name: 'trtllm_lora' }]);
  // An input the OpenAI mapping never sends, required: every request fails validation.
  editConfig(repo, 'trtllm_lora', (c) => c.replace('input [', 'input [\n  { name: "lora_task_id", data_type: TYPE_UINT64, dims: [ 1 ] },'));
  editConfig(repo, 'trtllm_once', (c) => c.replace('model_transaction_policy { decoupled: true }', ''));
  editConfig(repo, 'tiny_chat', (c) => `${c}\nparameters { key: "step_ms" value: { string_value: "5" } }\n`);
  server = await startTritium({
    repos: [repo],
    args: [`--backend-directory=${path.join(ROOT, 'test', 'backends')}`, '--openai-port=0', '--http-max-input-size=65536'],
  });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(repo, { recursive: true, force: true });
});

const v1 = (p: string) => `${server.http}/v1${p}`;
const post = (p: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(v1(p), { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });

/** The JSON payloads of an event-stream body, and whether it ended with [DONE]. */
function events(text: string): { chunks: any[]; done: boolean } {
  const parts = text.split('\n\n').filter((e) => e !== '');
  const done = parts.at(-1) === 'data: [DONE]';
  return { chunks: parts.filter((e) => e !== 'data: [DONE]').map((e) => JSON.parse(e.slice('data: '.length))), done };
}

const client = `import json, openai\nc = openai.OpenAI(base_url='${'http://127.0.0.1:'}PORT/v1', api_key='none', max_retries=0)`;
const py = (body: string, port = server.httpPort) => pythonResult(client.replace('PORT', String(port)), body);

describe('the official openai client', () => {
  it('lists the models and chats, once and streamed, with usage from the model', async () => {
    const res = await py(`
res['models'] = sorted(m.id for m in c.models.list())
res['one'] = c.models.retrieve('tiny_chat').id
r = c.chat.completions.create(model='tiny_chat', messages=[{'role': 'system', 'content': 'be brief'}, {'role': 'user', 'content': 'one two three'}])
res['chat'] = [r.object, r.choices[0].message.role, r.choices[0].message.content, r.choices[0].finish_reason, r.usage.prompt_tokens, r.usage.completion_tokens, r.id[:9]]
s = c.chat.completions.create(model='tiny_chat', messages=[{'role': 'user', 'content': 'a b c d'}], stream=True, stream_options={'include_usage': True}, max_tokens=3)
chunks = list(s)
res['deltas'] = [ch.choices[0].delta.content for ch in chunks if ch.choices]
res['roles'] = [ch.choices[0].delta.role for ch in chunks if ch.choices][:1]
res['finish'] = [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1]
res['usage'] = [chunks[-1].choices, chunks[-1].usage.completion_tokens, chunks[-1].usage.total_tokens]
`);
    expect(res.models).toEqual(['add_sub', 'tiny_chat', 'toy_llm', 'trtllm_lora', 'trtllm_once', 'trtllm_style']);
    expect(res.one).toBe('tiny_chat');
    // tiny_chat answers the last user turn's words reversed, and counts the rendered prompt's
    // words: <|im_start|>system be brief<|im_end|> <|im_start|>user one two three<|im_end|> <|im_start|>assistant
    expect(res.chat).toEqual(['chat.completion', 'assistant', 'three two one', 'stop', 8, 3, 'chatcmpl-']);
    expect(res.roles).toEqual(['assistant']);
    expect(res.deltas.join('')).toBe('d c b');
    expect(res.finish).toBe('length');
    expect(res.usage).toEqual([[], 3, 3 + 6]);
  });

  it('completes, once and streamed, with echo, stop, n and seed', async () => {
    const res = await py(`
r = c.completions.create(model='tiny_chat', prompt='x y z', echo=True)
res['echo'] = [r.object, r.choices[0].text, r.usage.prompt_tokens, r.usage.completion_tokens]
r = c.completions.create(model='tiny_chat', prompt='p q r s', stop=[' q'])
res['stop'] = [r.choices[0].text, r.choices[0].finish_reason]
r = c.completions.create(model='trtllm_style', prompt='u v', n=2, seed=7, temperature=0.5)
res['n'] = sorted((ch.index, ch.text) for ch in r.choices)
res['no_usage'] = r.usage is None
s = c.completions.create(model='toy_llm', prompt='one two three', stream=True, max_tokens=2)
res['stream'] = [ch.choices[0].text for ch in s]
`);
    expect(res.echo).toEqual(['text_completion', 'x y zz y x', 3, 3]);
    expect(res.stop).toEqual(['s r', 'stop']);
    expect(res.n).toEqual([
      [0, 'max_tokens=16;temperature=0.5;seed=7;stream=False;exclude_input_in_output=True u v'],
      [1, 'max_tokens=16;temperature=0.5;seed=8;stream=False;exclude_input_in_output=True u v'],
    ]);
    expect(res.no_usage).toBe(true);
    expect(res.stream.join('')).toBe('three two');
  });

  it('passes logprobs through from a model that returns them, per chunk when streaming', async () => {
    // As sent: the client's models would add their own empty fields around the model's entries.
    const res = await py(`
raw = c.completions.with_raw_response.create(model='tiny_chat', prompt='ab cde', logprobs=1)
res['once'] = json.loads(raw.text)['choices'][0]['logprobs']
res['parsed'] = raw.parse().choices[0].text
`);
    const entry = (w: string) => ({ [w]: { logprob: -w.length / 10, rank: 1, decoded_token: w } });
    expect(res.once).toEqual([entry('cde'), entry('ab')]);
    expect(res.parsed).toBe('cde ab');
    const streamed = await post('/chat/completions', { model: 'tiny_chat', messages: [{ role: 'user', content: 'ab cde' }], logprobs: true, stream: true });
    // The role chunk carries none; the final one, with no token, an empty list.
    expect(events(await streamed.text()).chunks.map((c) => c.choices[0].logprobs)).toEqual([
      null,
      { content: [entry('cde')] },
      { content: [entry('ab')] },
      { content: [] },
    ]);
  });

  it('raises the errors OpenAI raises: NotFoundError for an unknown model, BadRequestError for a bad field', async () => {
    const res = await py(`
for name, call in [('missing', lambda: c.chat.completions.create(model='nope', messages=[{'role': 'user', 'content': 'x'}])),
                   ('bad', lambda: c.completions.create(model='tiny_chat', prompt='x', temperature=3))]:
    try:
        call()
    except openai.APIStatusError as e:
        res[name] = [type(e).__name__, e.status_code, e.body['code'], e.body.get('param')]
`);
    expect(res.missing).toEqual(['NotFoundError', 404, 'model_not_found', 'model']);
    expect(res.bad).toEqual(['BadRequestError', 400, 'invalid_value', 'temperature']);
  });
});

describe('server-sent events', () => {
  it("frames every chunk as 'data: <json>' and a blank line, ending with data: [DONE] (curl)", () => {
    const out = execFileSync('curl', [
      '-sN',
      v1('/chat/completions'),
      '-H',
      'content-type: application/json',
      '-d',
      JSON.stringify({ model: 'tiny_chat', messages: [{ role: 'user', content: 'x y' }], stream: true }),
    ]).toString();
    expect(out.endsWith('data: [DONE]\n\n')).toBe(true);
    const { chunks, done } = events(out);
    expect(done).toBe(true);
    expect(chunks.map((c) => c.object)).toEqual(Array(chunks.length).fill('chat.completion.chunk'));
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(chunks.map((c) => c.choices[0].delta.content ?? '').join('')).toBe('y x');
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
  });

  it('answers a request the core refuses before any model runs as an error with its status, not a stream', async () => {
    const res = await post('/completions', { model: 'trtllm_lora', prompt: 'a b', stream: true });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json');
    const { error } = (await res.json()) as any;
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toMatch(/^expected between 3 and 8 inputs/);
  });

  it('sends a model that is not decoupled as one chunk', async () => {
    const res = await post('/completions', { model: 'trtllm_once', prompt: 'a b', stream: true, max_tokens: 2 });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const { chunks, done } = events(await res.text());
    expect(done).toBe(true);
    expect(chunks.map((c) => [c.choices[0].text, c.choices[0].finish_reason])).toEqual([['max_tokens=2;stream=False;exclude_input_in_output=True a', 'stop']]);
  });
});

describe('refusals, each with its status and error object', () => {
  const cases: Array<[string, string, unknown, number, string | null, string | null]> = [
    ['unknown model', '/chat/completions', { model: 'nope', messages: [{ role: 'user', content: 'x' }] }, 404, 'model_not_found', 'model'],
    ['body not JSON', '/completions', '{"model": ', 400, null, null],
    ['unknown field', '/completions', { model: 'tiny_chat', prompt: 'x', colour: 'red' }, 400, 'unknown_parameter', 'colour'],
    ['missing messages', '/chat/completions', { model: 'tiny_chat' }, 400, 'missing_required_parameter', 'messages'],
    ['missing prompt', '/completions', { model: 'tiny_chat' }, 400, 'missing_required_parameter', 'prompt'],
    ['top_p out of range', '/completions', { model: 'tiny_chat', prompt: 'x', top_p: 2 }, 400, 'invalid_value', 'top_p'],
    ['n too large', '/completions', { model: 'tiny_chat', prompt: 'x', n: 17 }, 400, 'invalid_value', 'n'],
    [
      'stream_options without stream',
      '/completions',
      { model: 'tiny_chat', prompt: 'x', stream_options: { include_usage: true } },
      400,
      'invalid_value',
      'stream_options',
    ],
    ['five stop strings', '/completions', { model: 'tiny_chat', prompt: 'x', stop: ['a', 'b', 'c', 'd', 'e'] }, 400, 'invalid_value', 'stop'],
    [
      'a non-text part',
      '/chat/completions',
      { model: 'tiny_chat', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
      400,
      'unsupported_parameter',
      'messages[0].content[0]',
    ],
    [
      'tools',
      '/chat/completions',
      { model: 'tiny_chat', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'f' } }] },
      400,
      'unsupported_parameter',
      'tools',
    ],
    ['logprobs from a model without them', '/completions', { model: 'trtllm_style', prompt: 'x', logprobs: 2 }, 400, 'unsupported_parameter', 'logprobs'],
    ['vLLM settings to a TensorRT-LLM model', '/completions', { model: 'trtllm_style', prompt: 'x', top_k: 3 }, 400, 'unsupported_parameter', 'top_k'],
    ['a model with no text tensors', '/completions', { model: 'add_sub', prompt: 'x' }, 400, null, null],
    ['chat to a model with no chat template', '/chat/completions', { model: 'trtllm_style', messages: [{ role: 'user', content: 'x' }] }, 400, null, null],
  ];
  it.each(cases)('%s', async (_what, p, body, status, code, param) => {
    const res = await post(p, body);
    expect(res.status).toBe(status);
    const { error } = (await res.json()) as { error: { message: string; type: string; code: string | null; param: string | null } };
    expect(error.type).toBe('invalid_request_error');
    expect(error.message.length).toBeGreaterThan(0);
    expect(error.code).toBe(code);
    expect(error.param).toBe(param);
  });

  it('a body over --http-max-input-size is 413 content_too_large', async () => {
    const res = await post('/completions', { model: 'tiny_chat', prompt: 'x'.repeat(70_000) });
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).error.code).toBe('content_too_large');
  });

  it('an unknown path is 404 and a wrong method 405, both as error objects', async () => {
    const a = await fetch(v1('/embeddings'), { method: 'POST', body: '{}' });
    expect(a.status).toBe(404);
    expect(((await a.json()) as any).error.type).toBe('invalid_request_error');
    const b = await fetch(v1('/completions'));
    expect(b.status).toBe(405);
    expect(((await b.json()) as any).error.code).toBe('method_not_allowed');
  });
});

describe('cancellation', () => {
  for (const [model, line] of [
    ['toy_llm', /toy_llm: request cancelled after (\d+) token/],
    ['trtllm_style', /trtllm_style: cancelled after (\d+) token/],
  ] as const) {
    it(`a client that closes the stream cancels ${model}'s request`, async () => {
      const res = await post('/completions', { model, prompt: Array.from({ length: 200 }, (_, i) => `w${i}`).join(' '), stream: true, max_tokens: 200 });
      const reader = res.body!.getReader();
      await reader.read();
      await reader.read();
      await reader.cancel();
      await waitFor(`${model} cancelled`, () => line.test(server.log()));
      expect(Number(line.exec(server.log())![1])).toBeLessThan(200);
    });
  }
});

describe('--openai-port', () => {
  it('serves the OpenAI API and /health/ready, and nothing of KServe', async () => {
    const base = `http://127.0.0.1:${server.openaiPort}`;
    expect(((await (await fetch(`${base}/v1/models`)).json()) as any).data.length).toBe(6);
    expect((await fetch(`${base}/health/ready`)).status).toBe(200);
    const kserve = await fetch(`${base}/v2/health/ready`);
    expect(kserve.status).toBe(404);
    expect(((await kserve.json()) as any).error.type).toBe('invalid_request_error');
    const res = await py(`res['text'] = c.completions.create(model='tiny_chat', prompt='left right').choices[0].text`, server.openaiPort);
    expect(res.text).toBe('right left');
  });
});

describe('--tokenizer, --chat-template, max_model_len and --openai-restricted-api', () => {
  let s2: Tritium;
  let repo2: string;
  const tokenizerDir = path.join(ROOT, 'test', 'fixtures', 'openai', 'tiny-tokenizer');
  let counter: { count(text: string, specials?: boolean): number };

  beforeAll(async () => {
    repo2 = makeRepo(['trtllm_style', { from: path.join(ROOT, 'test', 'models', 'trtllm_style'), name: 'trtllm_ctx' }]);
    editConfig(repo2, 'trtllm_ctx', (c) => `${c}\nparameters { key: "max_model_len" value: { string_value: "8" } }\n`);
    const template = path.join(repo2, 'plain.jinja');
    fs.writeFileSync(template, "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}");
    const { TokenCounter } = await import('../../src/frontends/openai/tokenizer.js');
    counter = TokenCounter.fromFile(path.join(tokenizerDir, 'tokenizer.json'));
    s2 = await startTritium({
      repos: [repo2],
      args: [`--tokenizer=${tokenizerDir}`, `--chat-template=${template}`, '--openai-restricted-api=inference:x-api-key=secret'],
    });
  }, 120_000);

  afterAll(async () => {
    await stopAndExpectNoShm(s2);
    fs.rmSync(repo2, { recursive: true, force: true });
  });

  const post2 = (p: string, body: unknown, key = 'secret') =>
    fetch(`${s2.http}/v1${p}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify(body) });

  it('refuses the restricted group without the header, 401 as Triton, and leaves the others open', async () => {
    const res = await post2('/completions', { model: 'trtllm_style', prompt: 'hello' }, 'wrong');
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error).toEqual({
      message: "This API is restricted, expecting header 'x-api-key' with valid value",
      type: 'authentication_error',
      param: null,
      code: 'invalid_auth',
    });
    expect((await fetch(`${s2.http}/v1/models`)).status).toBe(200);
  });

  it("counts usage with the tokenizer when the model gives no counts, and renders --chat-template's prompt", async () => {
    const done = (await (await post2('/completions', { model: 'trtllm_style', prompt: 'hello world', max_tokens: 3 })).json()) as any;
    const text = done.choices[0].text as string;
    expect(text).toBe('max_tokens=3;stream=False;exclude_input_in_output=True hello world');
    expect(done.usage).toEqual({
      prompt_tokens: counter.count('hello world', true),
      completion_tokens: counter.count(text),
      total_tokens: counter.count('hello world', true) + counter.count(text),
    });
    const chat = (await (await post2('/chat/completions', { model: 'trtllm_style', messages: [{ role: 'user', content: 'hello world' }] })).json()) as any;
    // The prompt is 'user: hello world\n', which the model sends back after its settings.
    expect(chat.choices[0].message.content).toBe('max_tokens=16;stream=False;exclude_input_in_output=True user: hello world');
    expect(chat.usage.prompt_tokens).toBe(counter.count('user: hello world\n'));
  });

  it('applies stop strings itself for a model without stop_words, cancelling the rest, streamed or not', async () => {
    const once = (await (await post2('/completions', { model: 'trtllm_style', prompt: 'one two three four', stop: 'three' })).json()) as any;
    expect([once.choices[0].text, once.choices[0].finish_reason]).toEqual(['max_tokens=16;stream=False;exclude_input_in_output=True one two ', 'stop']);
    const streamed = await post2('/completions', { model: 'trtllm_style', prompt: 'one two three four five six seven', stop: ['thr', 'zz'], stream: true });
    const { chunks, done } = events(await streamed.text());
    expect(done).toBe(true);
    expect(chunks.map((c) => c.choices[0].text).join('')).toBe('max_tokens=16;stream=True;exclude_input_in_output=True one two ');
    expect(chunks.at(-1).choices[0].finish_reason).toBe('stop');
    await waitFor('the stopped stream cancelled', () => /trtllm_style: cancelled after \d+ token/.test(s2.log()));
  });

  it("refuses a prompt longer than the model's max_model_len, 400 context_length_exceeded", async () => {
    const res = await post2('/completions', { model: 'trtllm_ctx', prompt: 'hello world hello world', max_tokens: 4 });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as any;
    expect(error.code).toBe('context_length_exceeded');
    expect(error.message).toContain("This model's maximum context length is 8 tokens. However, you requested 9 tokens (5 in the prompt, 4 for the completion)");
    expect((await post2('/completions', { model: 'trtllm_ctx', prompt: 'hello', max_tokens: 2 })).status).toBe(200);
  });

  it('answers 503 for a model whose stub is being restarted', async () => {
    const stub = stubPidsOf(s2.proc.pid!, 'trtllm_ctx')[0];
    expect(stub).toBeDefined();
    process.kill(stub!, 'SIGKILL');
    await waitFor('trtllm_ctx not ready', async () => (await fetch(`${s2.http}/v2/models/trtllm_ctx/ready`)).status !== 200, 20_000, 5);
    const res = await post2('/completions', { model: 'trtllm_ctx', prompt: 'hello', max_tokens: 2 });
    expect(res.status).toBe(503);
    expect(((await res.json()) as any).error.type).toBe('server_error');
    await waitFor('trtllm_ctx ready again', async () => (await fetch(`${s2.http}/v2/models/trtllm_ctx/ready`)).status === 200);
  });
});

describe('OpenAI flags that cannot work stop the start, naming the flag', () => {
  const badTemplate = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-openai-')), 'bad.jinja');
  fs.writeFileSync(badTemplate, '{% for x in %}');
  it.each([
    [
      'a chat template that does not parse',
      `--chat-template=${badTemplate}`,
      `--chat-template=${badTemplate}: cannot use ${badTemplate}: the chat template does not parse`,
    ],
    ['a tokenizer directory that is not there', '--tokenizer=/nonexistent/tokenizer', '--tokenizer=/nonexistent/tokenizer: not a directory.'],
    [
      'a group the OpenAI API has not',
      '--openai-restricted-api=metrics:k=v',
      "--openai-restricted-api=metrics:k=v: unknown API 'metrics'; the APIs are inference, model-repository, health.",
    ],
  ])('%s', async (_what, flag, expected) => {
    expect(await refusedStartLog([flag])).toContain(expected);
  });
});
