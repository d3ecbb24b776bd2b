/**
 * @module frontends/openai/chat-template
 * A model's chat template: the Jinja text of its tokenizer_config.json (or of a `--chat-template`
 * file) that turns a chat completion's messages into the one prompt string the model is given.
 *
 * Templates are written for Hugging Face transformers, which renders them with jinja2; here
 * @huggingface/jinja does, a JavaScript port made for these templates that lexes them the way
 * transformers configures jinja2 (trim_blocks, lstrip_blocks). The context follows what
 * transformers' apply_chat_template passes: `messages`, `add_generation_prompt`, `tools` (only
 * when the request has some: templates test `{% if tools %}` and some test `is defined`), the
 * special tokens by name, `raise_exception` and `strftime_now`.
 *
 * Rendering runs the renderer's interpreter on an environment set up here rather than through
 * its Template.render, whose globals cannot be replaced: its strftime_now names months in the
 * host's locale, where transformers' (Python's) uses the C locale.
 *
 * The template is parsed once, when it is loaded, so that a broken one is reported at start-up
 * or model load, not at every request. Load errors are catalogue errors (openaiTokenizerFile);
 * a render error is a ChatTemplateRenderError, which the caller turns into openaiChatTemplate
 * with the model's name.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import type { Template } from '@huggingface/jinja';
import { Errors } from '../../core/errors.js';

export interface ChatMessage {
  role: string;
  content: string | null | unknown[];
  [key: string]: unknown;
}

export interface RenderOptions {
  addGenerationPrompt: boolean;
  tools?: unknown[];
}

/** A template failed on these messages; the message is the template's own (raise_exception) or the renderer's. */
export class ChatTemplateRenderError extends Error {
  override readonly name = 'ChatTemplateRenderError';
}

// What the renderer's interpreter and environment are to this module: the package's declaration
// files use extensionless relative imports, which NodeNext resolution does not follow, so these
// two classes reach TypeScript untyped.
interface JinjaEnvironment {
  set(name: string, value: unknown): unknown;
}
interface Jinja {
  Template: new (source: string) => Template;
  Environment: new () => JinjaEnvironment;
  Interpreter: new (env: JinjaEnvironment) => { run(program: unknown): { value: unknown } };
}

// The renderer is loaded by the first template, through its CommonJS build so that construction
// stays synchronous: a server whose models have no chat template never holds it (a quarter of a
// MiB of heap in the main thread and in each HTTP frontend thread).
let jinja: Jinja | undefined;
const jinjaLib = (): Jinja => (jinja ??= createRequire(import.meta.url)('@huggingface/jinja') as Jinja);

// The special tokens transformers passes to templates by name (its special_tokens_map, less the
// list of additional tokens, which no template in common use reads).
const SPECIAL_TOKEN_KEYS = ['bos_token', 'eos_token', 'unk_token', 'pad_token', 'sep_token', 'cls_token', 'mask_token'] as const;

export class ChatTemplate {
  /** Where the template came from, for messages (a file name, or a description). */
  readonly origin: string;
  private readonly template: Template;
  private readonly specialTokens: Record<string, string>;

  /** The template text and the special tokens it may use (bos_token, eos_token, ... as strings). */
  constructor(source: string, specialTokens: Record<string, string> = {}, origin = 'the chat template') {
    this.origin = origin;
    this.specialTokens = { ...specialTokens };
    try {
      this.template = new (jinjaLib().Template)(asJinja2ReadsIt(source));
    } catch (err) {
      // The parser's own messages can be terse ("Cannot read properties of undefined" for an
      // unclosed block): saying it is a syntax error tells the operator where to look.
      throw Errors.openaiTokenizerFile(origin, `the chat template does not parse: ${messageOf(err)}`);
    }
  }

  /**
   * From a tokenizer_config.json: `chat_template` as a string, or a list of {name, template}
   * (take "default", else the first); bos/eos/unk/pad tokens given as strings or as {content: ...}
   * objects. Returns undefined when the file has no chat_template.
   */
  static fromTokenizerConfig(file: string): ChatTemplate | undefined {
    const config = readJsonObject(file);
    const source = templateOf(config, file);
    return source === undefined ? undefined : new ChatTemplate(source, specialTokensOf(config), file);
  }

  /**
   * A template file (--chat-template FILE; Jinja text as is, or a .json file holding
   * {"chat_template": ...}), with the special tokens of an optional tokenizer_config.json.
   */
  static fromFile(file: string, tokenizerConfigFile?: string): ChatTemplate {
    let source: string | undefined;
    if (file.toLowerCase().endsWith('.json')) {
      source = templateOf(readJsonObject(file), file);
      if (source === undefined) throw Errors.openaiTokenizerFile(file, "it has no 'chat_template'");
    } else {
      source = readText(file);
    }
    const tokens = tokenizerConfigFile === undefined ? {} : specialTokensOf(readJsonObject(tokenizerConfigFile));
    return new ChatTemplate(source, tokens, file);
  }

  render(messages: ChatMessage[], opts: RenderOptions): string {
    const context: Record<string, unknown> = {
      ...JINJA_GLOBALS,
      ...this.specialTokens,
      messages,
      add_generation_prompt: opts.addGenerationPrompt,
      raise_exception: raiseException,
      // Called with the template's arguments only: a second one must not become the date.
      strftime_now: (format: unknown) => strftimeNow(format),
    };
    if (opts.tools !== undefined) context.tools = opts.tools;
    try {
      // An environment per render: templates assign variables, which must not leak into the next.
      const env = new (jinjaLib().Environment)();
      for (const [name, value] of Object.entries(context)) env.set(name, value);
      return String(new (jinjaLib().Interpreter)(env).run(this.template.parsed).value);
    } catch (err) {
      if (err instanceof ChatTemplateRenderError) throw err;
      throw new ChatTemplateRenderError(messageOf(err));
    }
  }
}

/**
 * The template as jinja2 sees it: jinja2 reads every line ending (\r\n, \r) as \n and drops
 * one final newline (keep_trailing_newline is off in transformers). @huggingface/jinja drops the
 * final \n but keeps \r, so a template saved with Windows line endings would put \r into prompts.
 */
function asJinja2ReadsIt(source: string): string {
  return source.replace(/\r\n?/g, '\n');
}

/**
 * The globals jinja2 gives every template, as the renderer's Template.render sets them up
 * (namespace(), the tests and the filters come with its Environment and Interpreter).
 */
const JINJA_GLOBALS: Record<string, unknown> = {
  true: true,
  false: false,
  none: null,
  True: true,
  False: false,
  None: null,
  range: pythonRange,
};

/** Python's range(stop) / range(start, stop[, step]), as a list. */
function pythonRange(start: number, stop?: number, step = 1): number[] {
  const [from, to] = stop === undefined ? [0, start] : [start, stop];
  if (step === 0) throw new Error('range() arg 3 must not be zero');
  const out: number[] = [];
  for (let i = from; step > 0 ? i < to : i > to; i += step) out.push(i);
  return out;
}

function raiseException(message: unknown): never {
  throw new ChatTemplateRenderError(String(message));
}

/** The JSON object in `file`; a file that cannot be read or is not a JSON object is an openaiTokenizerFile error. */
export function readJsonObject(file: string): Record<string, unknown> {
  const text = readText(file);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw Errors.openaiTokenizerFile(file, `not valid JSON: ${messageOf(err)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw Errors.openaiTokenizerFile(file, 'not a JSON object');
  return value as Record<string, unknown>;
}

function readText(file: string): string {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw Errors.openaiTokenizerFile(file, messageOf(err));
  }
  // Files saved by Windows editors may start with a byte order mark, which JSON.parse rejects
  // and which would otherwise reach the prompt as text.
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}

/** `chat_template` of a tokenizer_config.json (or of a {"chat_template": ...} file); undefined when there is none. */
function templateOf(config: Record<string, unknown>, file: string): string | undefined {
  const t = config.chat_template;
  if (t === undefined || t === null) return undefined;
  if (typeof t === 'string') return t;
  // Models with several templates (tool use, RAG) list them by name; apply_chat_template uses
  // "default" when no name is asked for.
  if (Array.isArray(t)) {
    const named = t.filter((x): x is { name?: unknown; template?: unknown } => typeof x === 'object' && x !== null);
    const chosen = named.find((x) => x.name === 'default') ?? named[0];
    if (typeof chosen?.template === 'string') return chosen.template;
  }
  throw Errors.openaiTokenizerFile(file, "'chat_template' is neither a string nor a list of {name, template}");
}

/** The special tokens of a tokenizer_config.json, as strings: older files give them as {"content": ...} objects. */
function specialTokensOf(config: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of SPECIAL_TOKEN_KEYS) {
    const v = config[key];
    if (typeof v === 'string') out[key] = v;
    else if (typeof v === 'object' && v !== null && typeof (v as { content?: unknown }).content === 'string') {
      out[key] = (v as { content: string }).content;
    }
  }
  return out;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/**
 * Python's `datetime.now().strftime(fmt)` in the C locale, which is what transformers gives
 * templates (Llama 3.2 and later print today's date into the system prompt with it). The
 * renderer's own version names months in the host's locale and knows fewer codes. Unknown codes
 * are left as written, as glibc does. Checked against Python's output for each code.
 */
export function strftimeNow(format: unknown, now: Date = new Date()): string {
  const pad = (n: number, width = 2, fill = '0'): string => String(n).padStart(width, fill);
  const hour12 = now.getHours() % 12 === 0 ? 12 : now.getHours() % 12;
  const dayOfYear = Math.round((Date.UTC(now.getFullYear(), now.getMonth(), now.getDate()) - Date.UTC(now.getFullYear(), 0, 1)) / 86_400_000) + 1;
  const codes: Record<string, () => string> = {
    a: () => DAYS[now.getDay()]!.slice(0, 3),
    A: () => DAYS[now.getDay()]!,
    b: () => MONTHS[now.getMonth()]!.slice(0, 3),
    B: () => MONTHS[now.getMonth()]!,
    d: () => pad(now.getDate()),
    e: () => pad(now.getDate(), 2, ' '),
    H: () => pad(now.getHours()),
    I: () => pad(hour12),
    j: () => pad(dayOfYear, 3),
    m: () => pad(now.getMonth() + 1),
    M: () => pad(now.getMinutes()),
    p: () => (now.getHours() < 12 ? 'AM' : 'PM'),
    S: () => pad(now.getSeconds()),
    u: () => String(now.getDay() === 0 ? 7 : now.getDay()),
    w: () => String(now.getDay()),
    y: () => pad(now.getFullYear() % 100),
    Y: () => String(now.getFullYear()),
    // datetime.now() has no time zone, so Python writes nothing for these two.
    z: () => '',
    Z: () => '',
    '%': () => '%',
  };
  codes.c = () => `${codes.a!()} ${codes.b!()} ${codes.e!()} ${codes.H!()}:${codes.M!()}:${codes.S!()} ${codes.Y!()}`;
  codes.x = () => `${codes.m!()}/${codes.d!()}/${codes.y!()}`;
  codes.X = () => `${codes.H!()}:${codes.M!()}:${codes.S!()}`;
  codes.D = codes.x;
  codes.F = () => `${codes.Y!()}-${codes.m!()}-${codes.d!()}`;
  codes.T = codes.X;
  return String(format).replace(/%(.)/gs, (whole, code: string) => codes[code]?.() ?? whole);
}
