/**
 * @module frontends/http/handlers/logging
 * The logging extension over HTTP: `GET /v2/logging` returns the settings, `POST` applies a
 * partial update (null leaves a field alone) and returns the result. The rules are the core's
 * (core/extensions/log-settings.ts); this module only decodes JSON into its values.
 */
import type { HttpRequest, HttpResponse } from '../wire/exchange.js';
import { Errors } from '../../../core/errors.js';
import { logSettingsPatch, type SettingValue } from '../../../core/extensions/log-settings.js';
import type { HttpContext } from '../context.js';
import { sendError, sendJson } from '../reply.js';
import { jsonUint64, readJsonObject } from './json-body.js';

export async function handleLogging(ctx: HttpContext, req: HttpRequest, res: HttpResponse): Promise<void> {
  try {
    if (req.method === 'POST') {
      const body = await readJsonObject(ctx, req, true);
      if (body === undefined) throw Errors.jsonEmpty();
      ctx.logSettings.update(logSettingsPatch('http', decode(body)));
    }
    sendJson(res, 200, JSON.stringify(ctx.logSettings.get()));
  } catch (err) {
    sendError(res, err);
  }
}

/**
 * JSON values as the core's protocol-neutral settings; null means "leave alone" and is dropped.
 * An unsigned value is an integer literal below 2^64, as TritonJson reads one (jsonUint64):
 * `1e20`, `1.0` and 2^64 are of another type, as a string is.
 */
function decode(body: Record<string, unknown>): Map<string, SettingValue> {
  const out = new Map<string, SettingValue>();
  for (const [key, v] of Object.entries(body)) {
    if (v === null || v === undefined) continue;
    const uint = jsonUint64(v);
    if (typeof v === 'boolean') out.set(key, { type: 'bool', value: v });
    else if (typeof v === 'string') out.set(key, { type: 'string', value: v });
    else if (uint !== undefined) out.set(key, { type: 'uint', value: uint });
    else out.set(key, { type: 'other' });
  }
  return out;
}
