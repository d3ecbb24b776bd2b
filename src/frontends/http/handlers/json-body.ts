/**
 * @module frontends/http/handlers/json-body
 * Small JSON request bodies of the control endpoints (repository, logging, trace, shm).
 */
import type { HttpRequest } from '../wire/exchange.js';
import { inputSizeLimit, readBody } from '../body.js';
import type { HttpContext } from '../context.js';
import { FloatLiteral, type JsonScanInfo, parseJsonBuffer, parseJsonMarkingFloats } from '../json-parse.js';

/**
 * The body as a JSON object (a non-object counts as `{}`), or undefined when the body is empty.
 * With `markFloats`, numbers written with a fraction or an exponent come back as FloatLiteral,
 * for bodies whose unsigned fields Triton reads as rapidjson integers (see `jsonUint64`).
 */
export async function readJsonObject(ctx: HttpContext, req: HttpRequest, markFloats = false): Promise<Record<string, unknown> | undefined> {
  const body = await readBody(req, inputSizeLimit(ctx.maxInputSize, ctx.bodyBudget));
  let doc: unknown;
  try {
    if (body.data.length === 0) return undefined;
    const info: JsonScanInfo = { floatLiterals: false };
    doc = parseJsonBuffer(body.data, 0, body.data.length, info);
    // Small bodies, and a float literal in one is rare: parsed once more only then.
    if (markFloats && info.floatLiterals) doc = parseJsonMarkingFloats(body.data);
  } finally {
    body.release();
  }
  // Triton 2.51 looks members up in whatever JSON came, so a non-object names no setting at all.
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return {};
  return doc as Record<string, unknown>;
}

const TWO_64 = 1n << 64n;

/**
 * A member Triton reads as an unsigned 64-bit integer (TritonJson's AsUInt), or undefined where
 * it answers `attempt to access JSON non-unsigned-integer as unsigned-integer`: rapidjson takes
 * only an integer literal in [0, 2^64), never one written as a float (`64.0`, `1e20`; checked
 * against tritonserver 2.51). Needs a body read with `markFloats`.
 */
export function jsonUint64(v: unknown): number | bigint | undefined {
  if (v instanceof FloatLiteral) return undefined;
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? v : undefined;
  if (typeof v === 'bigint') return v >= 0n && v < TWO_64 ? v : undefined;
  return undefined;
}
