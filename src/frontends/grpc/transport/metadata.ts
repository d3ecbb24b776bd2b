/**
 * @module frontends/grpc/transport/metadata
 * A call's request metadata (its HTTP/2 headers) and the `grpc-timeout` deadline.
 */
import type { H2Headers } from './h2-session.js';

export class Metadata {
  constructor(private readonly headers: H2Headers) {}

  /** Every header of the call (lower-case names, pseudo-headers included). */
  all(): H2Headers {
    return this.headers;
  }

  /** The values of a key (lower case), as the client sent them; `-bin` keys decoded. */
  get(key: string): Array<string | Buffer> {
    const v = this.headers[key.toLowerCase()];
    if (v === undefined) return [];
    const values = v.split(',').map((s) => s.trim());
    return key.endsWith('-bin') ? values.map((s) => Buffer.from(s, 'base64')) : values;
  }
}

const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/**
 * `grpc-timeout` (1 to 8 digits and a unit: H M S m u n) in milliseconds; undefined when
 * absent or malformed (a malformed one is ignored, as other servers do).
 */
export function parseTimeoutMs(value: string | string[] | undefined): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (m === null) return undefined;
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}
