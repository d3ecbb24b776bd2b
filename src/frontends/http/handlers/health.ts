/**
 * @module frontends/http/handlers/health
 * `GET /v2/health/live|ready`: 200 or 400 with no body (probes read only the status), and a
 * 503 JSON error once the server is exiting. `ready` asks each model's own readiness check
 * (`is_ready()`) once per request (ServerCore.checkReady).
 */
import type { HttpResponse } from '../wire/exchange.js';
import { Errors } from '../../../core/errors.js';
import type { HttpContext } from '../context.js';
import { sendEmpty, sendError } from '../reply.js';

export function handleHealth(ctx: HttpContext, res: HttpResponse, probe: 'live' | 'ready'): void {
  const core = ctx.core;
  if (core.isExiting()) {
    sendError(res, Errors.serverExiting());
    return;
  }
  if (probe === 'live') {
    sendEmpty(res, core.isLive() ? 200 : 400);
    return;
  }
  // Asks the models' own readiness checks (is_ready()), once for this request.
  void core.checkReady().then(
    (ok) => sendEmpty(res, ok ? 200 : 400),
    (err: unknown) => sendError(res, err),
  );
}
