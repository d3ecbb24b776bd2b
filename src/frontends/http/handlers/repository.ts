/**
 * @module frontends/http/handlers/repository
 * The model repository extension: `POST /v2/repository/index` lists models from the core;
 * `.../models/<m>/load` and `.../unload` translate the body's parameters (`config`, base64
 * `file:<version>/<path>` contents, `unload_dependents`) and call the core, which refuses them
 * outside `--model-control-mode=explicit` with Triton's text.
 */
import type { HttpRequest, HttpResponse } from '../wire/exchange.js';
import { Errors } from '../../../core/errors.js';
import type { LoadModelOptions } from '../../../core/server-core.js';
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

export async function handleRepositoryControl(
  ctx: HttpContext,
  req: HttpRequest,
  res: HttpResponse,
  repository: string,
  model: string,
  action: 'load' | 'unload',
): Promise<void> {
  try {
    if (repository !== '') throw Errors.repositoryName();
    const body = await readJsonObject(ctx, req);
    const params = body?.parameters;
    const p = typeof params === 'object' && params !== null && !Array.isArray(params) ? (params as Record<string, unknown>) : {};
    if (action === 'load') {
      await ctx.core.loadModel(model, loadOptions(p));
    } else {
      const dependents = p.unload_dependents;
      if (dependents !== undefined && typeof dependents !== 'boolean') throw Errors.jsonValueType('boolean');
      await ctx.core.unloadModel(model, { unloadDependents: dependents === true });
    }
    // Triton answers 200 with an empty JSON-typed body.
    sendJson(res, 200, '');
  } catch (err) {
    sendError(res, err);
  }
}

/** Load parameters as Triton's HTTP frontend reads them: `config` a string, `file:` base64. */
function loadOptions(params: Record<string, unknown>): LoadModelOptions {
  const o: LoadModelOptions = {};
  for (const [key, value] of Object.entries(params)) {
    if (key === 'config') {
      if (typeof value !== 'string') throw Errors.jsonValueType('string');
      o.config = value;
    } else if (key.startsWith('file:')) {
      if (typeof value !== 'string') throw Errors.jsonValueType('string');
      o.files = { ...o.files, [key]: Buffer.from(value, 'base64') };
    } else if (typeof value === 'string') {
      throw Errors.loadParamUnknown();
    }
  }
  return o;
}
