/**
 * Token counts with a small BPE tokenizer.json written for these tests
 * (test/fixtures/openai/tiny-tokenizer/), against the counts of the Rust `tokenizers` library for
 * the same file (tiny-tokenizer-counts.json; test/fixtures/openai/README.md says how they were
 * made), and what loadTokenizerDir finds in a directory and keeps between calls.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TritonError } from '../../src/core/errors.js';
import { ChatTemplate } from '../../src/frontends/openai/chat-template.js';
import { TokenCounter, loadTokenizerDir } from '../../src/frontends/openai/tokenizer.js';

const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/openai');
const TINY = path.join(FIXTURES, 'tiny-tokenizer/tokenizer.json');
const QWEN3_CONFIG = path.join(FIXTURES, 'qwen3/tokenizer_config.json');

interface Count {
  text: string;
  count: number;
  countWithSpecials: number;
}
const COUNTS = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'tiny-tokenizer-counts.json'), 'utf8')) as Count[];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-tokenizer-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A new directory under the test's one, with these files (name → text). */
function dirWith(name: string, files: Record<string, string>): string {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, file), text);
  return dir;
}

function fileError(fn: () => unknown, file: string): TritonError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TritonError);
    expect((err as TritonError).entry).toBe('openaiTokenizerFile');
    expect((err as TritonError).message.startsWith(`cannot use ${file}: `)).toBe(true);
    return err as TritonError;
  }
  throw new Error('expected an error');
}

const tinyText = fs.readFileSync(TINY, 'utf8');
const qwen3Text = fs.readFileSync(QWEN3_CONFIG, 'utf8');

describe('TokenCounter', () => {
  const counter = TokenCounter.fromFile(TINY);

  for (const c of COUNTS) {
    it(`counts ${JSON.stringify(c.text)} as the Rust tokenizers library does`, () => {
      expect(counter.count(c.text)).toBe(c.count);
      expect(counter.count(c.text, false)).toBe(c.count);
      expect(counter.count(c.text, true)).toBe(c.countWithSpecials);
    });
  }

  it('counts a special token written in the text as one token, as in a rendered chat prompt', () => {
    const prompt = ChatTemplate.fromTokenizerConfig(QWEN3_CONFIG)!.render([{ role: 'user', content: 'hello world' }], { addGenerationPrompt: true });
    // <|im_start|> user hello world <|im_end|> <|im_start|>, then "assistant" letter by letter
    // (no merge joins its letters; "i" is not in the vocabulary and counts as one <unk>).
    expect(prompt).toBe('<|im_start|>user\nhello world<|im_end|>\n<|im_start|>assistant\n');
    expect(counter.count(prompt)).toBe(6 + 'assistant'.length);
  });

  it('reports a missing file, a file that is not JSON, and a tokenizer it cannot use', () => {
    const missing = path.join(tmp, 'absent', 'tokenizer.json');
    expect(fileError(() => TokenCounter.fromFile(missing), missing).message).toMatch(/ENOENT/);
    const dir = dirWith('broken', { 'tokenizer.json': '{"model": ' });
    const broken = path.join(dir, 'tokenizer.json');
    expect(fileError(() => TokenCounter.fromFile(broken), broken).message).toMatch(/not valid JSON/);
    const odd = path.join(dirWith('odd', { 'tokenizer.json': JSON.stringify({ model: { type: 'NoSuchModel' }, added_tokens: [] }) }), 'tokenizer.json');
    expect(fileError(() => TokenCounter.fromFile(odd), odd).message).toMatch(/not a tokenizer this server can use/);
  });

  it('reads the tokenizer_config.json beside tokenizer.json, and says so when that one is broken', () => {
    const dir = dirWith('bad-config', { 'tokenizer.json': tinyText, 'tokenizer_config.json': 'nope' });
    fileError(() => TokenCounter.fromFile(path.join(dir, 'tokenizer.json')), path.join(dir, 'tokenizer_config.json'));
  });
});

describe('loadTokenizerDir', () => {
  it('finds the template of tokenizer_config.json and the counter of tokenizer.json', () => {
    const dir = dirWith('both', { 'tokenizer_config.json': qwen3Text, 'tokenizer.json': tinyText });
    const { template, counter } = loadTokenizerDir(dir);
    expect(template).toBeInstanceOf(ChatTemplate);
    expect(template!.render([{ role: 'user', content: 'hi' }], { addGenerationPrompt: false })).toBe('<|im_start|>user\nhi<|im_end|>\n');
    expect(counter!.count('hello world')).toBe(2);
  });

  it('gives neither for an empty directory, and no template for a config without one', () => {
    expect(loadTokenizerDir(dirWith('empty', {}))).toEqual({});
    const found = loadTokenizerDir(dirWith('no-template', { 'tokenizer_config.json': '{"eos_token": "</s>"}', 'tokenizer.json': tinyText }));
    expect(found.template).toBeUndefined();
    expect(found.counter).toBeInstanceOf(TokenCounter);
  });

  it('prefers chat_template.jinja, with the special tokens of tokenizer_config.json', () => {
    const dir = dirWith('jinja', { 'tokenizer_config.json': qwen3Text, 'chat_template.jinja': '{{ messages[0].content }}{{ eos_token }}\n' });
    expect(loadTokenizerDir(dir).template!.render([{ role: 'user', content: 'hi' }], { addGenerationPrompt: false })).toBe('hi<|im_end|>');
  });

  it('keeps what it loaded while the files stay the same, and loads a file again when it changes', () => {
    const dir = dirWith('cache', { 'tokenizer_config.json': JSON.stringify({ chat_template: 'one' }), 'tokenizer.json': tinyText });
    const first = loadTokenizerDir(dir);
    const again = loadTokenizerDir(dir);
    expect(again.template).toBe(first.template);
    expect(again.counter).toBe(first.counter);

    fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: 'two!' }));
    const changed = loadTokenizerDir(dir);
    expect(changed.template).not.toBe(first.template);
    expect(changed.template!.render([], { addGenerationPrompt: false })).toBe('two!');
    // The counter reads tokenizer_config.json too, so it is made again as well.
    expect(changed.counter).not.toBe(first.counter);
  });

  it('reports a broken file each time, not a stale result', () => {
    const dir = dirWith('turns-bad', { 'tokenizer_config.json': JSON.stringify({ chat_template: 'fine' }) });
    expect(loadTokenizerDir(dir).template).toBeInstanceOf(ChatTemplate);
    fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), '{ broken');
    const file = path.join(dir, 'tokenizer_config.json');
    fileError(() => loadTokenizerDir(dir), file);
    fileError(() => loadTokenizerDir(dir), file);
  });
});
