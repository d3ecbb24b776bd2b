/**
 * @module frontends/http/handlers/json-body
 * Small JSON request bodies of the control endpoints (repository, logging, trace, shm).
 */
import type { HttpRequest } from '../wire/exchange.js';
import { inputSizeLimit, readBody } from '../body.js';
import type { HttpContext } from '../context.js';
import { parseJsonBuffer } from '../json-parse.js';

/** The body as a JSON object (a non-object counts as `{}`), or undefined when the body is empty. */
export async function readJsonObject(ctx: HttpContext, req: HttpRequest): Promise<Record<string, unknown> | undefined> {
  const body = await readBody(req, inputSizeLimit(ctx.maxInputSize, ctx.bodyBudget));
  let doc: unknown;
  try {
    if (body.data.length === 0) return undefined;
    doc = parseJsonBuffer(body.data);
  } finally {
    body.release();
  }
  // Triton 2.51 looks members up in whatever JSON came, so a non-object names no setting at all.
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return {};
  return doc as Record<string, unknown>;
}
