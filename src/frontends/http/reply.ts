/**
 * @module frontends/http/reply
 * Writing non-inference responses: JSON bodies, empty bodies and `{"error": ...}` bodies with
 * the status Triton's error-code table gives.
 */
import type { HttpResponse } from './wire/exchange.js';
import { asTritonError, httpStatusOf } from '../../core/errors.js';
import { errorJson } from './json.js';
import { traceLine, traceTags } from '../../core/trace-tags.js';

const JSON_TYPE = 'application/json';

export function sendJson(res: HttpResponse, status: number, body: string): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'Content-Type': JSON_TYPE, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** Status with no body (health probes, ready, shm register/unregister). */
export function sendEmpty(res: HttpResponse, status: number): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'Content-Length': 0 });
  res.end();
}

/** An error of any kind, as Triton answers it: status from its code, `{"error": message}`. */
export function sendError(res: HttpResponse, err: unknown): void {
  const e = asTritonError(err);
  const status = httpStatusOf(e.code);
  if (traceTags.http) traceLine('http', `conn ${res.connectionId}: answered ${status}: ${e.message}`);
  sendJson(res, status, errorJson(e.message));
}

const NOT_FOUND = errorJson('Not Found');
const METHOD_NOT_ALLOWED = errorJson('Method Not Allowed');

export function sendNotFound(res: HttpResponse): void {
  sendJson(res, 404, NOT_FOUND);
}

export function sendMethodNotAllowed(res: HttpResponse): void {
  sendJson(res, 405, METHOD_NOT_ALLOWED);
}
