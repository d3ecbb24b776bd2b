/**
 * @module frontends/openai/completions
 * `POST /v1/completions` and `POST /v1/chat/completions`.
 *
 * Each choice (n per prompt) is one inference request through the core, so statistics,
 * metrics, batching and cancellation are the KServe endpoints'. A decoupled model streams its
 * responses as server-sent events (`data: <chunk>\n\n`, ending with `data: [DONE]`); a model
 * that is not decoupled answers once, sent as one chunk when the client asked for a stream.
 *
 * `usage` counts come from the model's `num_input_tokens` / `num_output_tokens` outputs, else
 * from the model's tokenizer (model-text.ts); without either, `usage` is null, never guessed.
 * A client that goes away cancels every request of its choices (the model sees
 * `is_cancelled()`); an error after the stream started is sent as an `error` event and ends it.
 */
import { randomUUID } from 'node:crypto';
import { CancelToken } from '../../core/cancellation.js';
import { Errors, ErrorCode, type TritonError, asTritonError } from '../../core/errors.js';
import type { InferResponse } from '../../core/inference.js';
import type { ModelHandle } from '../../core/model-handle.js';
import { inputSizeLimit, readBody } from '../http/body.js';
import type { HttpContext } from '../http/context.js';
import type { HttpRequest, HttpResponse } from '../http/wire/exchange.js';
import { sendJson } from '../http/reply.js';
import { ChatTemplateRenderError } from './chat-template.js';
import { openAiError, sendOpenAiError } from './errors.js';
import { buildRequest, readResponse, textModelOf, type TextModel } from './model-mapping.js';
import { modelTextOf } from './model-text.js';
import type { TokenCounter } from './tokenizer.js';
import { type GenerationRequest, parseGenerationRequest } from './request-fields.js';
import type { OpenAiSettings } from './settings.js';
import { StopStrings } from './stop-strings.js';

const EVENT_STREAM = 'text/event-stream; charset=utf-8';
/** Unread bytes at which a streaming client that does not read is dropped (as generate_stream). */
const UNREAD_LIMIT = 32 * 1024 * 1024;

/** The model a request names, ready; @throws the OpenAI lookup errors. */
export function lookupModel(ctx: HttpContext, model: string): ModelHandle {
  let handle: ModelHandle;
  try {
    handle = ctx.core.resolveModel(model, '');
  } catch (err) {
    const e = asTritonError(err);
    throw e.code === ErrorCode.UNAVAILABLE ? Errors.openaiModelNotReady(model) : Errors.openaiUnknownModel(model);
  }
  if (!handle.isReady()) throw Errors.openaiModelNotReady(model);
  return handle;
}

export function handleCompletions(ctx: HttpContext, settings: OpenAiSettings, req: HttpRequest, res: HttpResponse, chat: boolean): void {
  readBody(req, inputSizeLimit(ctx.maxInputSize, ctx.bodyBudget)).then(
    (body) => {
      let doc: unknown;
      try {
        doc = JSON.parse(body.data.toString('utf8'));
      } catch (err) {
        sendOpenAiError(res, Errors.openaiBadJson((err as Error).message));
        return;
      } finally {
        body.release();
      }
      try {
        start(ctx, settings, res, parseGenerationRequest(doc, chat));
      } catch (err) {
        sendOpenAiError(res, err);
      }
    },
    (err) => {
      if (!req.complete) res.shouldKeepAlive = false;
      sendOpenAiError(res, err);
    },
  );
}

interface Choice {
  index: number;
  prompt: number;
  abort: CancelToken;
  text: string;
  first: boolean;
  stop?: StopStrings;
  inputTokens?: number;
  outputTokens?: number;
  finishReason?: string;
  logprobs: unknown[];
  done: boolean;
}

function start(ctx: HttpContext, settings: OpenAiSettings, res: HttpResponse, g: GenerationRequest): void {
  const handle = lookupModel(ctx, g.model);
  const tm = textModelOf(handle, g.model);
  if (g.logprobs !== undefined && !tm.givesLogprobs) {
    throw Errors.openaiUnsupportedField('logprobs', g.model, `the model has no ${tm.format === 'vllm' ? 'logprobs' : 'log_probs'} output`);
  }
  const extra = Object.keys(g.extra);
  if (extra.length > 0 && tm.format !== 'vllm') throw Errors.openaiUnsupportedField(extra[0]!, g.model, 'only models in the vllm format take it');
  const mt = modelTextOf(handle, settings);
  let prompts = g.prompts;
  if (g.chat) {
    if (mt.problem !== undefined) throw mt.problem;
    if (mt.template === undefined) throw Errors.openaiNoChatTemplate(g.model);
    try {
      prompts = [mt.template.render(g.messages, { addGenerationPrompt: true })];
    } catch (err) {
      if (err instanceof ChatTemplateRenderError) throw Errors.openaiChatTemplate(g.model, err.message);
      throw err;
    }
  }
  const maxTokens = g.maxTokens ?? settings.defaultMaxTokens;
  const completion = new Completion(ctx, res, g, tm, prompts, maxTokens, mt.counter);
  // Prompts are tokenized up front only to check them against the context length.
  if (mt.maxModelLen !== undefined && mt.counter !== undefined) {
    for (let p = 0; p < prompts.length; p++) {
      const n = completion.promptTokens(p)!;
      if (n + maxTokens > mt.maxModelLen) throw Errors.openaiPromptTooLong(mt.maxModelLen, n, maxTokens);
    }
  }
  completion.run();
}

class Completion {
  private readonly id: string;
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly choices: Choice[] = [];
  private finished = false;
  private left: number;
  private chunkHead: string | undefined;
  /** Each prompt's tokens as the tokenizer counts them, once asked for. */
  private readonly promptCounts: Array<number | undefined>;
  private readonly onClose = (): void => this.cancelAll();

  constructor(
    private readonly ctx: HttpContext,
    private readonly res: HttpResponse,
    private readonly g: GenerationRequest,
    private readonly tm: TextModel,
    private readonly prompts: string[],
    private readonly maxTokens: number,
    private readonly counter: TokenCounter | undefined,
  ) {
    this.promptCounts = prompts.map(() => undefined);
    this.id = `${g.chat ? 'chatcmpl' : 'cmpl'}-${randomUUID().replaceAll('-', '')}`;
    const frontendStops = !tm.takesStop && g.stop.length > 0;
    for (let p = 0; p < prompts.length; p++) {
      for (let k = 0; k < g.n; k++) {
        this.choices.push({
          index: this.choices.length,
          prompt: p,
          abort: new CancelToken(),
          text: '',
          first: true,
          logprobs: [],
          done: false,
          ...(frontendStops ? { stop: new StopStrings(g.stop) } : {}),
        });
      }
    }
    this.left = this.choices.length;
  }

  run(): void {
    this.res.onClose(this.onClose);
    if (this.res.destroyed) return this.cancelAll();
    for (const c of this.choices) {
      const k = c.index % this.g.n;
      const request = buildRequest(this.tm, this.g.model, this.prompts[c.prompt]!, this.g, k, this.maxTokens);
      request.signal = c.abort;
      this.ctx.core.infer(request, (r) => this.onResponse(c, r));
      if (this.finished) return;
    }
  }

  private onResponse(c: Choice, r: InferResponse): void {
    try {
      if (this.finished || c.done) return;
      if (r.error !== undefined) {
        this.fail(r.error);
        return;
      }
      let piece = '';
      let logprobs: unknown = null;
      if (r.flagsOnly !== true) {
        const read = readResponse(this.g.model, r);
        piece = read.text;
        if (read.inputTokens !== undefined) c.inputTokens = read.inputTokens;
        if (read.outputTokens !== undefined) c.outputTokens = (c.outputTokens ?? 0) + read.outputTokens;
        if (read.finishReason !== undefined && read.finishReason !== '') c.finishReason = read.finishReason;
        if (read.logprobs !== undefined && read.logprobs !== null) {
          logprobs = read.logprobs;
          if (Array.isArray(logprobs)) c.logprobs.push(...(logprobs as unknown[]));
          else c.logprobs.push(logprobs);
        }
      }
      if (c.first) {
        // A chat stream opens each choice with the assistant's role, once it has an answer.
        if (this.g.stream && this.g.chat) this.send(this.chunk(c, { role: 'assistant', content: '' }, null));
        if (this.g.echo) piece = this.prompts[c.prompt]! + piece;
        c.first = false;
      }
      let ending = r.final;
      if (c.stop !== undefined) {
        piece = c.stop.push(piece);
        if (c.stop.stopped) {
          // Stopped here: the model's remaining tokens are not wanted.
          c.finishReason = 'stop';
          ending = true;
          c.abort.abort();
        } else if (r.final) piece += c.stop.flush();
      }
      c.text += piece;
      if (ending) this.end(c, piece, logprobs);
      else if (this.g.stream && piece !== '') this.send(this.chunk(c, piece, null, logprobs));
    } catch (err) {
      this.fail(asTritonError(err));
    } finally {
      r.release?.();
    }
  }

  private end(c: Choice, piece: string, logprobs: unknown): void {
    c.done = true;
    // Without the model's count, the tokenizer counts the text once, here.
    c.outputTokens ??= this.counter?.count(c.text, false);
    c.finishReason ??= c.outputTokens !== undefined && c.outputTokens >= this.maxTokens ? 'length' : 'stop';
    if (this.g.stream) this.send(this.chunk(c, piece, c.finishReason, logprobs));
    if (--this.left > 0) return;
    this.finished = true;
    this.res.offClose(this.onClose);
    if (this.g.stream) {
      const usage = this.usage();
      if (this.g.includeUsage && usage !== null) this.send(JSON.stringify({ ...this.head(true), choices: [], usage }));
      this.res.write('data: [DONE]\n\n');
      this.res.end();
    } else {
      sendJson(this.res, 200, this.whole());
    }
  }

  /** A prompt's tokens by the tokenizer (undefined without one); a chat prompt holds its special tokens as text already. */
  promptTokens(p: number): number | undefined {
    if (this.counter === undefined) return undefined;
    this.promptCounts[p] ??= this.counter.count(this.prompts[p]!, !this.g.chat);
    return this.promptCounts[p];
  }

  private usage(): { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null {
    let prompt = 0;
    let completion = 0;
    const seen = new Set<number>();
    for (const c of this.choices) {
      const out = c.outputTokens;
      // The prompt counts once however many choices it has.
      const inTokens = c.inputTokens ?? this.promptTokens(c.prompt);
      if (out === undefined || inTokens === undefined) return null;
      completion += out;
      if (!seen.has(c.prompt)) prompt += inTokens;
      seen.add(c.prompt);
    }
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }

  private head(chunk: boolean): Record<string, unknown> {
    const object = this.g.chat ? (chunk ? 'chat.completion.chunk' : 'chat.completion') : 'text_completion';
    return { id: this.id, object, created: this.created, model: this.g.model, system_fingerprint: null };
  }

  /** The model's logprobs as it gives them (vLLM: one entry per token), under chat's `content`. */
  private logprobsJson(entries: unknown): unknown {
    if (this.g.logprobs === undefined || entries === null) return null;
    return this.g.chat ? { content: entries } : entries;
  }

  /**
   * One streamed chunk. Everything but the choice is the same for every chunk of the request,
   * so it is serialised once: a stream sends one of these per token.
   */
  private chunk(c: Choice, delta: string | { role: string; content: string }, finish: string | null, logprobs: unknown = null): string {
    this.chunkHead ??= `${JSON.stringify(this.head(true)).slice(0, -1)},"choices":[{"index":`;
    let body: string;
    if (!this.g.chat) body = `"text":${JSON.stringify(delta)}`;
    else if (typeof delta !== 'string') body = `"delta":${JSON.stringify(delta)}`;
    else body = delta === '' ? '"delta":{}' : `"delta":{"content":${JSON.stringify(delta)}}`;
    const lp = JSON.stringify(this.logprobsJson(logprobs));
    const usage = this.g.includeUsage ? ',"usage":null' : '';
    return `${this.chunkHead}${c.index},${body},"logprobs":${lp},"finish_reason":${JSON.stringify(finish)}}]${usage}}`;
  }

  private whole(): string {
    const choices = this.choices.map((c) =>
      this.g.chat
        ? { index: c.index, message: { role: 'assistant', content: c.text }, logprobs: this.logprobsJson(c.logprobs), finish_reason: c.finishReason }
        : { index: c.index, text: c.text, logprobs: this.logprobsJson(c.logprobs), finish_reason: c.finishReason },
    );
    return JSON.stringify({ ...this.head(false), choices, usage: this.usage() });
  }

  private send(json: string): void {
    if (this.res.destroyed) return;
    if (!this.res.headersSent) this.res.writeHead(200, { 'Content-Type': EVENT_STREAM, 'Cache-Control': 'no-cache' });
    this.res.corkForTurn();
    this.res.write(`data: ${json}\n\n`);
    if (this.res.queuedBytes > UNREAD_LIMIT) {
      this.ctx.logger?.warn(
        `OpenAI stream of '${this.g.model}': the client does not read (${this.res.queuedBytes} bytes unread); requests cancelled, connection closed`,
      );
      this.cancelAll();
      this.res.destroy();
    }
  }

  /** An error ends everything: the other choices are cancelled, the client told. */
  private fail(err: TritonError): void {
    if (this.finished) return;
    this.finished = true;
    this.res.offClose(this.onClose);
    for (const c of this.choices) if (!c.done) c.abort.abort();
    // Before the stream started (validation, a model that fails at once) it is a plain error
    // answer with its status; after, an error event that ends the stream.
    if (!this.res.headersSent) {
      sendOpenAiError(this.res, err);
      return;
    }
    if (this.res.destroyed) return;
    this.res.write(`data: ${openAiError(err).body}\n\n`);
    this.res.end();
  }

  private cancelAll(): void {
    if (this.finished) return;
    this.finished = true;
    for (const c of this.choices) c.abort.abort();
  }
}
