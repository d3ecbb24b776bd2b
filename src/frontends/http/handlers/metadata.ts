/**
 * @module frontends/http/handlers/metadata
 * Server metadata (`GET /v2`), model metadata (`GET /v2/models/<m>[/versions/<v>]`), model
 * readiness (`.../ready`) and model configuration (`.../config`).
 */
import type { HttpResponse } from '../wire/exchange.js';
import type { HttpContext } from '../context.js';
import { errorJson, stringifyJson } from '../json.js';
import { sendEmpty, sendError, sendJson } from '../reply.js';
import { checkVersion } from './version.js';

export function handleServerMetadata(ctx: HttpContext, res: HttpResponse): void {
  try {
    const m = ctx.core.serverMetadata();
    sendJson(res, 200, JSON.stringify({ name: m.name, version: m.version, extensions: m.extensions }));
  } catch (err) {
    sendError(res, err);
  }
}

export function handleModelMetadata(ctx: HttpContext, res: HttpResponse, model: string, version: string): void {
  try {
    const v = checkVersion(version);
    const handle = ctx.core.resolveModel(model, v);
    const meta = handle.metadata();
    // With a version in the URL, Triton lists just that version.
    const body = v === '' ? meta : { ...meta, versions: [handle.version] };
    sendJson(res, 200, JSON.stringify(body));
  } catch (err) {
    sendError(res, err);
  }
}

const NOT_READY = errorJson('Model version not ready');

export function handleModelReady(ctx: HttpContext, res: HttpResponse, model: string, version: string): void {
  let check: Promise<boolean>;
  try {
    check = ctx.core.checkModelReady(model, checkVersion(version));
  } catch (err) {
    sendError(res, err);
    return;
  }
  // Found but failing its runtime check (a dead stub, is_ready() not True): 400, not a lookup
  // error; why is in the server log.
  void check.then(
    (ready) => (ready ? sendEmpty(res, 200) : sendJson(res, 400, NOT_READY)),
    (err: unknown) => sendError(res, err),
  );
}

export function handleModelConfig(ctx: HttpContext, res: HttpResponse, model: string, version: string): void {
  try {
    const handle = ctx.core.resolveModel(model, checkVersion(version));
    sendJson(res, 200, stringifyJson(handle.configJson()));
  } catch (err) {
    sendError(res, err);
  }
}
