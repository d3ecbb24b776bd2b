/**
 * @module frontends/openai/request-fields
 * The body of `POST /v1/completions` and `POST /v1/chat/completions`, checked field by field as
 * OpenAI's API checks it: an unknown field, a value of the wrong type or out of range, and a
 * missing required field are 400s naming the field. What passes is one normalised request.
 */
import { Errors } from '../../core/errors.js';
import type { ChatMessage } from './chat-template.js';

export interface GenerationRequest {
  chat: boolean;
  model: string;
  /** Completions: the prompts (one choice set per prompt). Chat: empty, rendered from messages. */
  prompts: string[];
  messages: ChatMessage[];
  stream: boolean;
  includeUsage: boolean;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  seed?: number;
  n: number;
  stop: string[];
  frequencyPenalty?: number;
  presencePenalty?: number;
  /** Logprobs asked for: completions' `logprobs`, chat's `top_logprobs` (or 1 for `logprobs: true`). */
  logprobs?: number;
  echo: boolean;
  /** vLLM sampling settings beyond OpenAI's (top_k, min_p, ...), passed through in sampling_parameters. */
  extra: Record<string, unknown>;
}

/** The most choices one request may ask for: each is one inference request. */
export const MAX_N = 16;

const COMMON = [
  'model',
  'frequency_penalty',
  'logit_bias',
  'max_tokens',
  'n',
  'presence_penalty',
  'seed',
  'stop',
  'stream',
  'stream_options',
  'temperature',
  'top_p',
  'user',
  'logprobs',
];
/** Sampling settings vLLM's OpenAI server takes beyond OpenAI's; for other models they are refused. */
export const VLLM_EXTRA = ['top_k', 'min_p', 'repetition_penalty', 'min_tokens', 'ignore_eos', 'length_penalty'];
const COMPLETION_FIELDS = new Set([...COMMON, ...VLLM_EXTRA, 'prompt', 'echo', 'best_of', 'suffix']);
const CHAT_FIELDS = new Set([
  ...COMMON,
  ...VLLM_EXTRA,
  'messages',
  'top_logprobs',
  'max_completion_tokens',
  'response_format',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'functions',
  'function_call',
  'store',
  'metadata',
]);
const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

type Doc = Record<string, unknown>;

const bad = (field: string, why: string) => Errors.openaiBadField(field, why);

function number(doc: Doc, field: string, min: number, max: number): number | undefined {
  const v = doc[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(field, 'expected a number');
  if (v < min || v > max) throw bad(field, `expected a number from ${min} to ${max}, got ${v}`);
  return v;
}

function integer(doc: Doc, field: string, min: number, max: number): number | undefined {
  const v = number(doc, field, min, max);
  if (v !== undefined && !Number.isInteger(v)) throw bad(field, `expected an integer, got ${v}`);
  return v;
}

function bool(doc: Doc, field: string): boolean | undefined {
  const v = doc[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw bad(field, 'expected a boolean');
  return v;
}

function stops(doc: Doc): string[] {
  const v = doc.stop;
  if (v === undefined || v === null) return [];
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || list.some((s) => typeof s !== 'string' || s === '')) throw bad('stop', 'expected a non-empty string or a list of them');
  if (list.length > 4) throw bad('stop', `at most 4 stop sequences, got ${list.length}`);
  return list as string[];
}

/** The request's fields; @throws openai* catalogue errors naming the field. */
export function parseGenerationRequest(doc: unknown, chat: boolean): GenerationRequest {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw Errors.openaiBadJson('expected an object');
  const d = doc as Doc;
  const allowed = chat ? CHAT_FIELDS : COMPLETION_FIELDS;
  for (const k of Object.keys(d)) if (!allowed.has(k)) throw Errors.openaiUnknownField(k);
  if (typeof d.model !== 'string' || d.model === '') {
    if (d.model === undefined) throw Errors.openaiMissingField('model');
    throw bad('model', 'expected a model name');
  }
  const stream = bool(d, 'stream') ?? false;
  let includeUsage = false;
  if (d.stream_options !== undefined && d.stream_options !== null) {
    if (!stream) throw bad('stream_options', 'only allowed when stream is true');
    const so = d.stream_options;
    if (typeof so !== 'object' || Array.isArray(so)) throw bad('stream_options', 'expected an object');
    for (const k of Object.keys(so)) if (k !== 'include_usage') throw Errors.openaiUnknownField(`stream_options.${k}`);
    includeUsage = bool(so as Doc, 'include_usage') ?? false;
  }
  if (d.logit_bias !== undefined && d.logit_bias !== null && Object.keys(d.logit_bias as object).length > 0) {
    throw Errors.openaiUnsupportedField('logit_bias', d.model, 'token biases need the model to apply them');
  }
  const extra: Record<string, unknown> = {};
  for (const k of VLLM_EXTRA) if (d[k] !== undefined && d[k] !== null) extra[k] = d[k];
  const req: GenerationRequest = {
    chat,
    model: d.model,
    prompts: [],
    messages: [],
    stream,
    includeUsage,
    n: integer(d, 'n', 1, MAX_N) ?? 1,
    stop: stops(d),
    echo: false,
    extra,
  };
  set(req, 'temperature', number(d, 'temperature', 0, 2));
  set(req, 'topP', number(d, 'top_p', 0, 1));
  set(req, 'seed', integer(d, 'seed', 0, Number.MAX_SAFE_INTEGER));
  set(req, 'frequencyPenalty', number(d, 'frequency_penalty', -2, 2));
  set(req, 'presencePenalty', number(d, 'presence_penalty', -2, 2));
  if (chat) chatFields(d, req);
  else completionFields(d, req);
  return req;
}

function completionFields(d: Doc, req: GenerationRequest): void {
  set(req, 'maxTokens', integer(d, 'max_tokens', 1, 2 ** 31 - 1));
  const p = d.prompt;
  if (p === undefined || p === null) throw Errors.openaiMissingField('prompt');
  if (typeof p === 'string') req.prompts = [p];
  else if (Array.isArray(p) && p.length > 0 && p.every((x) => typeof x === 'string')) req.prompts = p as string[];
  else throw bad('prompt', 'expected a string or a list of strings (token ids need a tokenizer that decodes; send text)');
  if (req.prompts.some((x) => x === '')) throw bad('prompt', 'a prompt must not be empty');
  if (req.prompts.length * req.n > MAX_N) throw bad('n', `prompts × n is at most ${MAX_N}, got ${req.prompts.length * req.n}`);
  req.echo = bool(d, 'echo') ?? false;
  const lp = integer(d, 'logprobs', 0, 5);
  if (lp !== undefined && lp > 0) req.logprobs = lp;
  const bestOf = integer(d, 'best_of', 1, MAX_N);
  if (bestOf !== undefined && bestOf !== 1) throw Errors.openaiUnsupportedField('best_of', req.model, 'only best_of=1 is served');
  if (typeof d.suffix === 'string' && d.suffix !== '') throw Errors.openaiUnsupportedField('suffix', req.model, 'insertion is not served');
}

function chatFields(d: Doc, req: GenerationRequest): void {
  const max = integer(d, 'max_completion_tokens', 1, 2 ** 31 - 1) ?? integer(d, 'max_tokens', 1, 2 ** 31 - 1);
  set(req, 'maxTokens', max);
  const msgs = d.messages;
  if (msgs === undefined || msgs === null) throw Errors.openaiMissingField('messages');
  if (!Array.isArray(msgs) || msgs.length === 0) throw bad('messages', 'expected a non-empty list of messages');
  req.messages = msgs.map((m, i) => message(m, i, req.model));
  const lp = bool(d, 'logprobs') ?? false;
  const top = integer(d, 'top_logprobs', 0, 20);
  if (top !== undefined && !lp) throw bad('top_logprobs', 'only allowed when logprobs is true');
  if (lp) req.logprobs = top !== undefined && top > 0 ? top : 1;
  if (Array.isArray(d.tools) && d.tools.length > 0) throw Errors.openaiUnsupportedField('tools', req.model, 'tool calls are not served');
  if (Array.isArray(d.functions) && d.functions.length > 0) throw Errors.openaiUnsupportedField('functions', req.model, 'function calls are not served');
  const rf = d.response_format as Doc | undefined | null;
  if (rf !== undefined && rf !== null && rf.type !== 'text') {
    throw Errors.openaiUnsupportedField('response_format', req.model, "only {type: 'text'} is served (no constrained decoding)");
  }
}

function set<K extends keyof GenerationRequest>(req: GenerationRequest, k: K, v: GenerationRequest[K] | undefined): void {
  if (v !== undefined) req[k] = v;
}

function message(m: unknown, i: number, model: string): ChatMessage {
  const field = `messages[${i}]`;
  if (typeof m !== 'object' || m === null || Array.isArray(m)) throw bad(field, 'expected an object with role and content');
  const msg = m as Doc;
  if (typeof msg.role !== 'string' || !ROLES.has(msg.role)) throw bad(`${field}.role`, `expected one of ${[...ROLES].join(', ')}`);
  let content: string | null;
  if (typeof msg.content === 'string') content = msg.content;
  else if (msg.content === null || msg.content === undefined) {
    if (msg.role !== 'assistant') throw bad(`${field}.content`, 'expected a string or a list of text parts');
    content = null;
  } else if (Array.isArray(msg.content)) {
    content = msg.content
      .map((p, j) => {
        const part = p as Doc;
        if (part?.type !== 'text' || typeof part.text !== 'string') {
          throw Errors.openaiUnsupportedField(`${field}.content[${j}]`, model, `only text parts are served, got type '${String(part?.type)}'`);
        }
        return part.text;
      })
      .join('');
  } else throw bad(`${field}.content`, 'expected a string or a list of text parts');
  const out: ChatMessage = { ...msg, role: msg.role, content };
  return out;
}
