/**
 * Chat templates with the real tokenizer_config.json of Qwen3 (test/fixtures/openai/qwen3/),
 * rendered for conversations whose expected prompts jinja2 and transformers' apply_chat_template
 * produced (test/fixtures/openai/README.md says how), and with small templates written here for
 * the loading rules, the context a template sees, and the errors.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TritonError } from '../../src/core/errors.js';
import { type ChatMessage, ChatTemplate, ChatTemplateRenderError, strftimeNow } from '../../src/frontends/openai/chat-template.js';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/openai');
const QWEN3_CONFIG = path.join(FIXTURES, 'qwen3/tokenizer_config.json');

interface Case {
  name: string;
  messages: ChatMessage[];
  tools?: unknown[];
  add_generation_prompt: boolean;
  expected: string;
}
const CASES = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'qwen3-chat-cases.json'), 'utf8')) as Case[];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-chat-template-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Writes `content` (JSON for objects) to a file under the test's directory and returns its path. */
function write(name: string, content: string | object): string {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

/** The error `fn` throws. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}

function expectFileError(err: unknown, file: string, why: RegExp): void {
  expect(err).toBeInstanceOf(TritonError);
  expect((err as TritonError).entry).toBe('openaiTokenizerFile');
  expect((err as TritonError).message.startsWith(`cannot use ${file}: `)).toBe(true);
  expect((err as TritonError).message).toMatch(why);
}

const user = (content: string): ChatMessage => ({ role: 'user', content });

describe('a real model: Qwen3', () => {
  const template = ChatTemplate.fromTokenizerConfig(QWEN3_CONFIG)!;

  it('is found in its tokenizer_config.json', () => {
    expect(template).toBeInstanceOf(ChatTemplate);
    expect(template.origin).toBe(QWEN3_CONFIG);
  });

  for (const c of CASES) {
    it(`renders as transformers does: ${c.name}`, () => {
      const opts = c.tools === undefined ? { addGenerationPrompt: c.add_generation_prompt } : { addGenerationPrompt: c.add_generation_prompt, tools: c.tools };
      expect(template.render(c.messages, opts)).toBe(c.expected);
    });
  }

  it('renders the same again (nothing of a render stays in the template)', () => {
    const c = CASES[2]!;
    const opts = { addGenerationPrompt: c.add_generation_prompt };
    expect(template.render(c.messages, opts)).toBe(template.render(c.messages, opts));
  });

  it("reports what the template cannot handle as a render error (content that is not a string, where Qwen3's template calls string methods)", () => {
    const err = thrown(() => template.render([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }], { addGenerationPrompt: true }));
    expect(err).toBeInstanceOf(ChatTemplateRenderError);
  });
});

describe('loading', () => {
  it('takes the special tokens given as strings or as {content} objects, and leaves out null ones', () => {
    const file = write('tokens.json', {
      chat_template: "{{ bos_token }}|{{ eos_token }}|{{ unk_token }}|{{ 'pad' if pad_token is defined else 'no pad' }}",
      bos_token: { __type: 'AddedToken', content: '<s>', lstrip: false },
      eos_token: '</s>',
      unk_token: { content: '<unk>' },
      pad_token: null,
    });
    expect(ChatTemplate.fromTokenizerConfig(file)!.render([], { addGenerationPrompt: false })).toBe('<s>|</s>|<unk>|no pad');
  });

  it('is undefined for a tokenizer_config.json without chat_template', () => {
    expect(ChatTemplate.fromTokenizerConfig(write('none.json', { eos_token: '</s>' }))).toBeUndefined();
    expect(ChatTemplate.fromTokenizerConfig(write('null.json', { chat_template: null }))).toBeUndefined();
  });

  it('takes the template named "default" from a list, else the first', () => {
    const named = write('named.json', {
      chat_template: [
        { name: 'tool_use', template: 'tools' },
        { name: 'default', template: 'default' },
      ],
    });
    const unnamed = write('unnamed.json', {
      chat_template: [
        { name: 'rag', template: 'rag' },
        { name: 'other', template: 'other' },
      ],
    });
    expect(ChatTemplate.fromTokenizerConfig(named)!.render([], { addGenerationPrompt: false })).toBe('default');
    expect(ChatTemplate.fromTokenizerConfig(unnamed)!.render([], { addGenerationPrompt: false })).toBe('rag');
  });

  it('refuses a chat_template of another type', () => {
    const file = write('number.json', { chat_template: 42 });
    expectFileError(
      thrown(() => ChatTemplate.fromTokenizerConfig(file)),
      file,
      /neither a string nor a list/,
    );
  });

  it('reads a --chat-template file as Jinja text, or as JSON when it is a .json file', () => {
    const jinja = write('plain.jinja', "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}{{ eos_token | default('none') }}");
    const json = write('wrapped.json', { chat_template: '{{ messages | length }} {{ eos_token }}' });
    expect(ChatTemplate.fromFile(jinja).render([user('a'), user('b')], { addGenerationPrompt: false })).toBe('[user] a\n[user] b\nnone');
    expect(ChatTemplate.fromFile(json, QWEN3_CONFIG).render([user('a')], { addGenerationPrompt: false })).toBe('1 <|im_end|>');
    expect(ChatTemplate.fromFile(jinja, QWEN3_CONFIG).origin).toBe(jinja);
  });

  it('refuses a .json --chat-template file without chat_template', () => {
    const file = write('empty.json', {});
    expectFileError(
      thrown(() => ChatTemplate.fromFile(file)),
      file,
      /no 'chat_template'/,
    );
  });

  it('reads line endings and the final newline as jinja2 does', () => {
    const file = write('crlf.jinja', '{{ "a" }}\r\nb\rc\r\n');
    expect(ChatTemplate.fromFile(file).render([], { addGenerationPrompt: false })).toBe('a\nb\nc');
  });

  it('skips a byte order mark', () => {
    const file = write('bom.json', `\uFEFF${JSON.stringify({ chat_template: 'ok' })}`);
    expect(ChatTemplate.fromTokenizerConfig(file)!.render([], { addGenerationPrompt: false })).toBe('ok');
  });

  it('reports a missing file, a file that is not JSON, and JSON that is not an object', () => {
    const missing = path.join(tmp, 'absent.json');
    expectFileError(
      thrown(() => ChatTemplate.fromTokenizerConfig(missing)),
      missing,
      /ENOENT/,
    );
    const broken = write('broken.json', '{"chat_template": ');
    expectFileError(
      thrown(() => ChatTemplate.fromTokenizerConfig(broken)),
      broken,
      /not valid JSON/,
    );
    const list = write('list.json', '[]');
    expectFileError(
      thrown(() => ChatTemplate.fromTokenizerConfig(list)),
      list,
      /not a JSON object/,
    );
    const jinja = write('ok.jinja', 'x');
    expectFileError(
      thrown(() => ChatTemplate.fromFile(jinja, broken)),
      broken,
      /not valid JSON/,
    );
  });

  it('parses the template when it is loaded: a syntax error is a load error naming the file', () => {
    const file = write('bad.jinja', '{% for m in messages %}{{ m.content }}');
    expectFileError(
      thrown(() => ChatTemplate.fromFile(file)),
      file,
      /does not parse/,
    );
    expectFileError(
      thrown(() => new ChatTemplate('{{ a + }}', {}, 'inline')),
      'inline',
      /does not parse/,
    );
  });
});

describe('rendering', () => {
  it('gives the template add_generation_prompt and the messages with all their fields', () => {
    // (Booleans are tested rather than printed: jinja2 prints True where the renderer prints true.)
    const t = new ChatTemplate(
      "{% for m in messages %}{{ m.role }}:{{ m.name }}:{{ 'null' if m.content is none }};{% endfor %}{{ 'prompt' if add_generation_prompt else 'none' }}",
    );
    expect(t.render([{ role: 'assistant', content: null, name: 'bob' }], { addGenerationPrompt: true })).toBe('assistant:bob:null;prompt');
    expect(t.render([], { addGenerationPrompt: false })).toBe('none');
  });

  it("gives templates jinja2's globals: range, true/false/none in both cases, namespace", () => {
    const t = new ChatTemplate(
      "{% for i in range(3) %}{{ i }}{% endfor %}|{{ range(1, 7, 2) | join(',') }}|{{ range(5, 0, -2) | list }}|" +
        "{{ 'a' if none is none }}{{ 'b' if None is none }}{{ 'c' if true == True }}{{ 'd' if not false and not False }}|" +
        '{% set ns = namespace(x=1) %}{% set ns.x = ns.x + 1 %}{{ ns.x }}',
    );
    expect(t.render([], { addGenerationPrompt: false })).toBe('012|1,3,5|[5, 3, 1]|abcd|2');
  });

  it('defines tools only when the request gives some', () => {
    const t = new ChatTemplate('{% if tools is defined %}{{ tools | length }} tools{% else %}no tools{% endif %}');
    expect(t.render([user('x')], { addGenerationPrompt: false })).toBe('no tools');
    expect(t.render([user('x')], { addGenerationPrompt: false, tools: [] })).toBe('0 tools');
    expect(t.render([user('x')], { addGenerationPrompt: false, tools: [{ type: 'function' }] })).toBe('1 tools');
  });

  it('passes the special tokens given to the constructor', () => {
    const t = new ChatTemplate('{{ bos_token }}{{ messages[0].content }}{{ eos_token }}', { bos_token: '<s>', eos_token: '</s>' });
    expect(t.render([user('hi')], { addGenerationPrompt: false })).toBe('<s>hi</s>');
  });

  it("turns the template's raise_exception into a ChatTemplateRenderError with its message", () => {
    const t = new ChatTemplate("{% if messages[0].role != 'user' %}{{ raise_exception('Conversation roles must start with user') }}{% endif %}ok");
    expect(t.render([user('x')], { addGenerationPrompt: false })).toBe('ok');
    const err = thrown(() => t.render([{ role: 'assistant', content: 'x' }], { addGenerationPrompt: false }));
    expect(err).toBeInstanceOf(ChatTemplateRenderError);
    expect((err as Error).message).toBe('Conversation roles must start with user');
  });

  it('turns any other failure of a render into a ChatTemplateRenderError', () => {
    const t = new ChatTemplate('{{ messages[0].content.nothing_here() }}');
    expect(thrown(() => t.render([user('x')], { addGenerationPrompt: false }))).toBeInstanceOf(ChatTemplateRenderError);
  });

  it("gives templates strftime_now with today's date", () => {
    const before = new Date();
    const out = new ChatTemplate("{{ strftime_now('%Y-%m-%d') }}").render([], { addGenerationPrompt: false });
    const after = new Date();
    expect([strftimeNow('%Y-%m-%d', before), strftimeNow('%Y-%m-%d', after)]).toContain(out);
  });
});

describe('strftime_now', () => {
  it('writes the codes as Python does in the C locale', () => {
    const d = new Date(2024, 2, 5, 7, 8, 9); // Tuesday 5 March 2024, 07:08:09 local time
    expect(strftimeNow('%d %b %Y', d)).toBe('05 Mar 2024');
    expect(strftimeNow('%A %a %B %b %m %y %j', d)).toBe('Tuesday Tue March Mar 03 24 065');
    expect(strftimeNow('%H:%M:%S %I %p %e %u %w', d)).toBe('07:08:09 07 AM  5 2 2');
    expect(strftimeNow('%c|%x|%X|%F|%D|%T', d)).toBe('Tue Mar  5 07:08:09 2024|03/05/24|07:08:09|2024-03-05|03/05/24|07:08:09');
    expect(strftimeNow('100%% %Q', d)).toBe('100% %Q');
    expect(strftimeNow('%I %p', new Date(2024, 0, 1, 0, 30))).toBe('12 AM');
    expect(strftimeNow('%I %p', new Date(2024, 0, 1, 13, 30))).toBe('01 PM');
    // Python's naive datetime.now() has no zone to write.
    expect(strftimeNow('[%z%Z]', d)).toBe('[]');
  });
});
