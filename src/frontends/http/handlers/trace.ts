/**
 * @module frontends/http/handlers/trace
 * The trace extension over HTTP (rules in core/extensions/trace-settings.ts): GET answers the
 * effective settings (global or per model), POST updates them first. HTTP gives trace_level as
 * a list and every other setting as a single string.
 */
import type { HttpRequest, HttpResponse } from '../wire/exchange.js';
import { Errors } from '../../../core/errors.js';
import { checkTraceModel } from '../../../core/extensions/trace-settings.js';
import type { HttpContext } from '../context.js';
import { sendError, sendJson } from '../reply.js';
import { readJsonObject } from './json-body.js';

export async function handleTrace(ctx: HttpContext, req: HttpRequest, res: HttpResponse, model = ''): Promise<void> {
  try {
    checkTraceModel(ctx.core, model);
    const store = ctx.core.tracer.settings;
    if (req.method === 'POST') {
      const body = await readJsonObject(ctx, req);
      if (body !== undefined) {
        const entries = Object.entries(body).map(([k, v]): [string, string[] | null] => {
          if (v === null) return [k, null];
          // TritonJson's own words for a level that is not a list.
          if (k === 'trace_level' && !Array.isArray(v)) throw Errors.jsonValueType('array');
          return [k, Array.isArray(v) ? v.map(String) : [String(v)]];
        });
        store.update(model, entries);
      }
    }
    const s: Record<string, string[]> = store.effective(model);
    sendJson(res, 200, JSON.stringify(Object.fromEntries(Object.entries(s).map(([k, v]) => [k, k === 'trace_level' ? v : v[0]]))));
  } catch (err) {
    sendError(res, err);
  }
}
