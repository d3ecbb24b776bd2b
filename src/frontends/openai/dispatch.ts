/**
 * @module frontends/openai/dispatch
 * Sends each OpenAI request to its handler: route → method → restriction → handler. Every
 * refusal is OpenAI's error object. On the HTTP port `--http-restricted-api` applies too (the
 * completions are `inference`, the model list `model-repository`), answered the same way.
 */
import { Errors } from '../../core/errors.js';
import type { HttpContext } from '../http/context.js';
import { sendEmpty } from '../http/reply.js';
import type { HttpRequest, HttpResponse } from '../http/wire/exchange.js';
import { missingHeader } from '../restricted-api.js';
import { handleCompletions } from './completions.js';
import { sendOpenAiError } from './errors.js';
import { handleModel, handleModelList } from './models.js';
import { groupOf, matchOpenAiRoute, methodOf } from './routes.js';
import { DEFAULT_MAX_TOKENS, type OpenAiSettings } from './settings.js';

const DEFAULTS: OpenAiSettings = { defaultMaxTokens: DEFAULT_MAX_TOKENS };

export function dispatchOpenAi(ctx: HttpContext, req: HttpRequest, res: HttpResponse): void {
  const settings = ctx.openai ?? DEFAULTS;
  const route = matchOpenAiRoute(req.url ?? '/', settings.ownPort === true);
  const method = methodOf(route);
  if (method === undefined) {
    sendOpenAiError(res, Errors.openaiNotFound());
    return;
  }
  if (req.method !== method) {
    sendOpenAiError(res, Errors.openaiMethodNotAllowed(req.method, method));
    return;
  }
  const group = groupOf(route)!;
  const header =
    missingHeader(settings.restricted?.get(group), req.headers) ?? (settings.ownPort ? undefined : missingHeader(ctx.restricted?.get(group), req.headers));
  if (header !== undefined) {
    sendOpenAiError(res, Errors.openaiRestricted(header));
    return;
  }
  switch (route.kind) {
    case 'models':
      return handleModelList(ctx, res);
    case 'model':
      return handleModel(ctx, res, route.model);
    case 'completions':
      return handleCompletions(ctx, settings, req, res, route.chat);
    case 'health':
      return void ctx.core.checkReady().then(
        (ready) => sendEmpty(res, ready ? 200 : 503),
        () => sendEmpty(res, 503),
      );
  }
}
