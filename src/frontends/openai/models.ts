/**
 * @module frontends/openai/models
 * `GET /v1/models` and `GET /v1/models/{model}`: the ready models, as OpenAI lists them.
 */
import type { HttpContext } from '../http/context.js';
import { sendJson } from '../http/reply.js';
import type { HttpResponse } from '../http/wire/exchange.js';
import { lookupModel } from './completions.js';
import { sendOpenAiError } from './errors.js';

/** OpenAI's `created` is when the model was made; the closest a server knows is when it started. */
const STARTED = Math.floor(Date.now() / 1000);

const modelObject = (id: string) => ({ id, object: 'model', created: STARTED, owned_by: 'tritium' });

export function handleModelList(ctx: HttpContext, res: HttpResponse): void {
  const names = [...new Set(ctx.core.repositoryIndex(true).map((e) => e.name))].sort();
  sendJson(res, 200, JSON.stringify({ object: 'list', data: names.map(modelObject) }));
}

export function handleModel(ctx: HttpContext, res: HttpResponse, model: string): void {
  try {
    lookupModel(ctx, model);
  } catch (err) {
    sendOpenAiError(res, err);
    return;
  }
  sendJson(res, 200, JSON.stringify(modelObject(model)));
}
