/**
 * @module frontends/http/handlers/stats
 * The statistics extension: `GET /v2/models/stats` and `GET /v2/models/<m>[/versions/<v>]/stats`
 * → `{"model_stats":[...]}`, counts and nanoseconds as JSON integers (perf_analyzer reads them
 * with GetUint64; a float or string there aborts its run).
 */
import type { HttpResponse } from '../wire/exchange.js';
import type { HttpContext } from '../context.js';
import { stringifyJson } from '../json.js';
import { sendError, sendJson } from '../reply.js';
import { checkVersion } from './version.js';

export function handleStats(ctx: HttpContext, res: HttpResponse, model?: string, version?: string): void {
  try {
    const v = version === undefined || version === '' ? undefined : checkVersion(version);
    const stats = model === undefined ? ctx.core.statistics() : ctx.core.statistics(model, v);
    sendJson(res, 200, '{"model_stats":' + stringifyJson(stats) + '}');
  } catch (err) {
    sendError(res, err);
  }
}
