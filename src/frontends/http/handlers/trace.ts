/**
 * @module frontends/http/handlers/trace
 * The trace extension, as a static stub: tracing is off and stays off. GET and POST (global or
 * per model) return the settings; a POST that sets `trace_file` is refused like Triton does.
 */
import type { HttpRequest, HttpResponse } from '../wire/exchange.js';
import { ErrorCode, TritonError } from '../../../core/errors.js';
import type { HttpContext } from '../context.js';
import { sendError, sendJson } from '../reply.js';
import { readJsonObject } from './json-body.js';

const SETTINGS = JSON.stringify({
  trace_level: ['OFF'],
  trace_rate: '1000',
  trace_count: '-1',
  log_frequency: '0',
  trace_file: '',
  trace_mode: 'triton',
});

export async function handleTrace(ctx: HttpContext, req: HttpRequest, res: HttpResponse): Promise<void> {
  try {
    if (req.method === 'POST') {
      const body = await readJsonObject(ctx, req);
      if (body !== undefined && body.trace_file !== undefined && body.trace_file !== null) {
        throw new TritonError(ErrorCode.UNSUPPORTED, 'trace_file updating through API is not supported');
      }
    }
    sendJson(res, 200, SETTINGS);
  } catch (err) {
    sendError(res, err);
  }
}
