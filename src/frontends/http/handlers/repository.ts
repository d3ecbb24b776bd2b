/**
 * @module frontends/http/handlers/repository
 * The model repository extension: `POST /v2/repository/index` lists models from the core;
 * load/unload are refused as Triton refuses them outside `--model-control-mode=explicit`
 * (Model Analyzer looks for "polling is enabled" in that message).
 */
import type { HttpRequest, HttpResponse } from '../wire/exchange.js';
import { Errors } from '../../../core/errors.js';
import type { HttpContext } from '../context.js';
import { sendError, sendJson } from '../reply.js';
import { readJsonObject } from './json-body.js';

export async function handleRepositoryIndex(ctx: HttpContext, req: HttpRequest, res: HttpResponse): Promise<void> {
  try {
    const body = await readJsonObject(ctx, req);
    let ready = false;
    if (body?.ready !== undefined) {
      if (typeof body.ready !== 'boolean') throw Errors.jsonValueType('boolean');
      ready = body.ready;
    }
    sendJson(res, 200, JSON.stringify(ctx.core.repositoryIndex(ready)));
  } catch (err) {
    sendError(res, err);
  }
}

export function handleRepositoryControl(_ctx: HttpContext, res: HttpResponse, repository: string): void {
  if (repository !== '') {
    sendError(res, Errors.repositoryName());
    return;
  }
  // TODO(explicit mode): route to the core once it exposes load/unload.
  sendError(res, Errors.explicitLoadUnload());
}
