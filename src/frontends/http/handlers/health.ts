/**
 * @module frontends/http/handlers/health
 * `GET /v2/health/live|ready`: 200 or 400 with no body (probes read only the status), and a
 * 503 JSON error once the server is exiting.
 */
import type { HttpResponse } from '../wire/exchange.js';
import { ErrorCode, TritonError } from '../../../core/errors.js';
import type { HttpContext } from '../context.js';
import { sendEmpty, sendError } from '../reply.js';

export function handleHealth(ctx: HttpContext, res: HttpResponse, probe: 'live' | 'ready'): void {
  const core = ctx.core;
  if (core.isExiting()) {
    sendError(res, new TritonError(ErrorCode.UNAVAILABLE, 'Server exiting'));
    return;
  }
  const ok = probe === 'live' ? core.isLive() : core.isReady();
  sendEmpty(res, ok ? 200 : 400);
}
