/**
 * @module frontends/http/handlers/trace
 * The trace extension over HTTP (rules in core/extensions/trace-settings.ts): GET and POST
 * (global or per model) return the static settings; a POST that sets `trace_file` or turns
 * tracing on is refused.
 */
import type { HttpRequest, HttpResponse } from '../wire/exchange.js';
import { checkTraceModel, checkTraceUpdate, TRACE_SETTINGS } from '../../../core/extensions/trace-settings.js';
import type { HttpContext } from '../context.js';
import { sendError, sendJson } from '../reply.js';
import { readJsonObject } from './json-body.js';

// HTTP gives trace_level as a list and every other setting as a single string.
const SETTINGS = JSON.stringify(Object.fromEntries(Object.entries(TRACE_SETTINGS).map(([k, v]) => [k, k === 'trace_level' ? v : v[0]])));

export async function handleTrace(ctx: HttpContext, req: HttpRequest, res: HttpResponse, model = ''): Promise<void> {
  try {
    checkTraceModel(ctx.core, model);
    if (req.method === 'POST') {
      const body = await readJsonObject(ctx, req);
      // A null value leaves a setting alone, so it names nothing.
      if (body !== undefined) {
        const named = Object.entries(body).filter(([, v]) => v !== null);
        checkTraceUpdate(named.map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : [String(v)]]));
      }
    }
    sendJson(res, 200, SETTINGS);
  } catch (err) {
    sendError(res, err);
  }
}
