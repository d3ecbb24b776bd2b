/**
 * @module frontends/http/handlers/logging
 * The logging extension: `GET /v2/logging` returns the settings, `POST` applies a partial
 * update (null leaves a field alone) and returns the result. Changing the log file over the
 * network is refused.
 */
import type { HttpRequest, HttpResponse } from '../wire/exchange.js';
import { ErrorCode, TritonError } from '../../../core/errors.js';
import type { HttpContext } from '../context.js';
import type { LogSettingsView as LogSettings } from '../../../core/logger.js';
import { sendError, sendJson } from '../reply.js';
import { readJsonObject } from './json-body.js';

const invalid = (m: string) => new TritonError(ErrorCode.INVALID_ARG, m);

export async function handleLogging(ctx: HttpContext, req: HttpRequest, res: HttpResponse): Promise<void> {
  try {
    if (req.method === 'POST') {
      const body = await readJsonObject(ctx, req);
      if (body === undefined) throw invalid('failed to parse the request JSON buffer: The document is empty. at 0');
      ctx.logSettings.update(validate(body, ctx.logSettings.get()));
    }
    sendJson(res, 200, JSON.stringify(ctx.logSettings.get()));
  } catch (err) {
    sendError(res, err);
  }
}

function validate(body: Record<string, unknown>, current: LogSettings): Partial<LogSettings> {
  const patch: Partial<LogSettings> = {};
  const file = body.log_file;
  if (file !== undefined && file !== null) {
    if (typeof file !== 'string') throw invalid("Unable to parse 'log_file'");
    if (file !== current.log_file) {
      throw new TritonError(ErrorCode.UNSUPPORTED, 'changing the log file over the network is not supported');
    }
  }
  for (const key of ['log_info', 'log_warning', 'log_error'] as const) {
    const v = body[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'boolean') throw invalid(`Unable to parse '${key}'`);
    patch[key] = v;
  }
  const level = body.log_verbose_level;
  if (level !== undefined && level !== null) {
    if (typeof level !== 'number' || !Number.isInteger(level) || level < 0) throw invalid("Unable to parse 'log_verbose_level'");
    patch.log_verbose_level = level;
  }
  const format = body.log_format;
  if (format !== undefined && format !== null) {
    if (format !== 'default' && format !== 'ISO8601') throw invalid(`invalid argument for --log_format, got: ${String(format)}`);
    patch.log_format = format;
  }
  return patch;
}
