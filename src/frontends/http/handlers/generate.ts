/**
 * @module frontends/http/handlers/generate
 * `generate` / `generate_stream` are routed (so clients get Triton's lookup errors and 405s)
 * but not implemented yet: 501.
 */
import type { ServerResponse } from 'node:http';
import { ErrorCode, TritonError } from '../../../core/errors.js';
import type { HttpContext } from '../context.js';
import { sendError } from '../reply.js';
import { checkVersion } from './version.js';

export function handleGenerate(ctx: HttpContext, res: ServerResponse, model: string, version: string, streaming: boolean): void {
  try {
    ctx.core.resolveModel(model, checkVersion(version));
    const endpoint = streaming ? 'generate_stream' : 'generate';
    throw new TritonError(ErrorCode.UNSUPPORTED, `the '${endpoint}' endpoint is not supported by this server yet`);
  } catch (err) {
    sendError(res, err);
  }
}
