/**
 * @module frontends/header-forward
 * `--http-header-forward-pattern` / `--grpc-header-forward-pattern`: request headers (gRPC
 * metadata) whose name matches the pattern become string parameters of the inference request,
 * after the request's own (docs/protocol-notes.md, "Header forwarding"). As in tritonserver
 * 2.51 the pattern may match any part of the name, without regard to case.
 */
import type { Parameters } from '../core/inference.js';

/** Compiles a forward pattern; throws with the flag named when it is not a valid expression. */
export function headerPattern(flag: string, pattern: string): RegExp {
  try {
    return new RegExp(pattern, 'i');
  } catch (err) {
    throw new Error(`${flag}=${pattern}: not a valid regular expression (${(err as Error).message}).`);
  }
}

/** The request's parameters with the matching headers added after them (the same object when none match). */
export function withForwardedHeaders(pattern: RegExp, headers: Readonly<Record<string, string | string[] | undefined>>, parameters: Parameters): Parameters {
  let out: Parameters | undefined;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith(':') || !pattern.test(name)) continue;
    out ??= { ...parameters };
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out ?? parameters;
}
