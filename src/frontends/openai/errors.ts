/**
 * @module frontends/openai/errors
 * OpenAI's error object, `{"error": {"message", "type", "param", "code"}}`, which OpenAI's
 * client libraries read (they raise `NotFoundError`, `BadRequestError`, ... from the status and
 * show `message`). The text comes from the catalogue (core/errors/openai.ts); this module adds
 * what OpenAI's API puts around it.
 */
import { type TritonError, asTritonError, httpStatusOf } from '../../core/errors.js';
import type { HttpResponse } from '../http/wire/exchange.js';
import { sendJson } from '../http/reply.js';

interface Shape {
  status: number;
  type: string;
  code: string | null;
}

/** Entries whose status, type or code differ from what the Triton error code gives. */
const SHAPES: Record<string, Partial<Shape>> = {
  openaiUnknownModel: { code: 'model_not_found' },
  openaiPromptTooLong: { code: 'context_length_exceeded' },
  openaiMethodNotAllowed: { status: 405, code: 'method_not_allowed' },
  openaiRestricted: { status: 401, type: 'authentication_error', code: 'invalid_auth' },
  openaiBodyTooLarge: { status: 413, code: 'content_too_large' },
  bodyTooLarge: { status: 413, code: 'content_too_large' },
  bodyOverMemory: { status: 503, type: 'server_error', code: 'server_busy' },
  openaiMissingField: { code: 'missing_required_parameter' },
  openaiUnknownField: { code: 'unknown_parameter' },
  openaiBadField: { code: 'invalid_value' },
  openaiUnsupportedField: { code: 'unsupported_parameter' },
};

function typeOf(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 404 || status < 500) return 'invalid_request_error';
  return 'server_error';
}

/** The status and body of `err` as OpenAI's API would answer it. */
export function openAiError(err: unknown, param?: string): { status: number; body: string } {
  const e: TritonError = asTritonError(err);
  const shape = SHAPES[e.entry] ?? {};
  const status = shape.status ?? httpStatusOf(e.code);
  const error = { message: e.message, type: shape.type ?? typeOf(status), param: param ?? paramOf(e) ?? null, code: shape.code ?? null };
  return { status, body: JSON.stringify({ error }) };
}

/** The request field an error is about, when its text names one ('...' after "for" / "parameter"). */
function paramOf(e: TritonError): string | undefined {
  if (e.entry === 'openaiBadField' || e.entry === 'openaiMissingField' || e.entry === 'openaiUnsupportedField') {
    const m = /'([^']+)'/.exec(e.message);
    return m?.[1];
  }
  if (e.entry === 'openaiUnknownField') return e.message.slice(e.message.lastIndexOf(' ') + 1);
  if (e.entry === 'openaiUnknownModel') return 'model';
  return undefined;
}

export function sendOpenAiError(res: HttpResponse, err: unknown): void {
  const { status, body } = openAiError(err);
  sendJson(res, status, body);
}
