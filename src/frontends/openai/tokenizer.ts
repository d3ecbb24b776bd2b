/**
 * @module frontends/openai/tokenizer
 * Token counts for the OpenAI endpoints' `usage` and context-length check, with the model's own
 * Hugging Face tokenizer (tokenizer.json), and what a tokenizer directory holds.
 *
 * @huggingface/tokenizers does the encoding: a pure JavaScript port of the Rust `tokenizers`
 * library for the common pipelines (BPE, WordPiece, Unigram models; byte-level, Metaspace,
 * whitespace pre-tokenizers; template post-processors). Only the number of ids is used, so a
 * vocabulary that differs in ids would still count right; what matters is that text splits into
 * the same pieces. Special tokens written in the text (a rendered chat prompt holds them) are
 * one token each, as the Rust library counts them.
 *
 * A model's files are loaded once and kept while they do not change (path, mtime, size, inode),
 * so that a directory shared by many models (`--tokenizer`) is read once, and an edited file is
 * read again at the next load.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Errors } from '../../core/errors.js';
import { ChatTemplate, readJsonObject } from './chat-template.js';

/** What the counter uses of @huggingface/tokenizers' Tokenizer. */
interface Encoder {
  encode(text: string, options: { add_special_tokens: boolean }): { ids: number[] };
}

// The package's declaration files use extensionless relative imports, which NodeNext resolution
// does not follow, so its class reaches TypeScript untyped: this names the part that is used.
// It is loaded by the first tokenizer, through its CommonJS build (as the chat template's
// renderer is, chat-template.ts): a server that counts no tokens never holds it.
type EncoderClass = new (tokenizerJson: object, tokenizerConfig: object) => Encoder;
let encoderClass: EncoderClass | undefined;
const Encoder = (): EncoderClass => (encoderClass ??= (createRequire(import.meta.url)('@huggingface/tokenizers') as { Tokenizer: EncoderClass }).Tokenizer);

export class TokenCounter {
  private constructor(
    private readonly encoder: Encoder,
    /** The tokenizer.json it was made from. */
    readonly file: string,
  ) {}

  /** From a Hugging Face tokenizer.json (with its tokenizer_config.json next to it when there is one). */
  static fromFile(tokenizerJson: string): TokenCounter {
    const json = readJsonObject(tokenizerJson);
    // The config gives what tokenizer.json leaves out for some models (the eos token of Unigram
    // models, the special tokens of legacy vocabularies); most tokenizers need none of it.
    const configFile = path.join(path.dirname(tokenizerJson), 'tokenizer_config.json');
    const config = fs.existsSync(configFile) ? readJsonObject(configFile) : {};
    try {
      return new TokenCounter(new (Encoder())(json, config), tokenizerJson);
    } catch (err) {
      throw Errors.openaiTokenizerFile(tokenizerJson, `not a tokenizer this server can use: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /**
   * Tokens of `text` as the model's tokenizer counts them; specials added by the tokenizer's
   * post-processor are not counted unless addSpecialTokens.
   */
  count(text: string, addSpecialTokens = false): number {
    return this.encoder.encode(text, { add_special_tokens: addSpecialTokens }).ids.length;
  }
}

interface CacheEntry {
  stamp: string;
  value: unknown;
}

const loaded = new Map<string, CacheEntry>();

/** What identifies a file's contents without reading it: absent, or its mtime, size and inode. */
function stampOf(files: string[]): string {
  return files
    .map((f) => {
      const st = fs.statSync(f, { throwIfNoEntry: false });
      return st === undefined ? '-' : `${st.mtimeMs}:${st.size}:${st.ino}`;
    })
    .join('|');
}

/** `load()`'s result for `key`, made again when one of `files` changed since the last time. Failures are not kept. */
function cached<T>(key: string, files: string[], load: () => T): T {
  const stamp = stampOf(files);
  const known = loaded.get(key);
  if (known !== undefined && known.stamp === stamp) return known.value as T;
  const value = load();
  loaded.set(key, { stamp, value });
  return value;
}

/**
 * What a tokenizer directory (--tokenizer DIR, or a model's directory) holds: the chat template
 * of its tokenizer_config.json and a counter from its tokenizer.json, each undefined when the
 * file is absent. Loaded files are cached by path + mtime.
 *
 * A chat_template.jinja in the directory replaces the tokenizer_config.json's template, as in
 * transformers, whose recent versions save templates there instead; the special tokens still
 * come from tokenizer_config.json.
 */
export function loadTokenizerDir(dir: string): { template?: ChatTemplate; counter?: TokenCounter } {
  const root = path.resolve(dir);
  const configFile = path.join(root, 'tokenizer_config.json');
  const jinjaFile = path.join(root, 'chat_template.jinja');
  const tokenizerFile = path.join(root, 'tokenizer.json');
  const hasConfig = fs.existsSync(configFile);
  const out: { template?: ChatTemplate; counter?: TokenCounter } = {};
  if (fs.existsSync(jinjaFile)) {
    out.template = cached(`template:${jinjaFile}`, [jinjaFile, configFile], () => ChatTemplate.fromFile(jinjaFile, hasConfig ? configFile : undefined));
  } else if (hasConfig) {
    out.template = cached(`template:${configFile}`, [configFile], () => ChatTemplate.fromTokenizerConfig(configFile));
  }
  if (fs.existsSync(tokenizerFile)) {
    out.counter = cached(`counter:${tokenizerFile}`, [tokenizerFile, configFile], () => TokenCounter.fromFile(tokenizerFile));
  }
  if (out.template === undefined) delete out.template;
  return out;
}
