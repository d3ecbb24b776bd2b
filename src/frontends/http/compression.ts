/**
 * @module frontends/http/compression
 * Response compression for `/infer`, chosen from `Accept-Encoding` the way Triton does: the
 * highest q-value among identity, gzip and deflate wins (ties keep the earlier one); anything
 * else is ignored, and identity is the default.
 */
import { deflate, gzip } from 'node:zlib';

export type ResponseEncoding = 'identity' | 'gzip' | 'deflate';

export function responseEncoding(accept: string | undefined): ResponseEncoding {
  if (accept === undefined || accept === '') return 'identity';
  let best: ResponseEncoding = 'identity';
  let bestWeight = 0;
  for (const item of accept.split(',')) {
    const semi = item.indexOf(';');
    const type = (semi < 0 ? item : item.slice(0, semi)).trim().toLowerCase();
    if (type !== 'identity' && type !== 'gzip' && type !== 'deflate') continue;
    let weight = 1;
    if (semi >= 0) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(item.slice(semi + 1));
      if (m === null) continue; // malformed weight: skipped, like Triton
      weight = Number(m[1]);
      if (Number.isNaN(weight)) continue;
    }
    if (weight > bestWeight) {
      best = type;
      bestWeight = weight;
    }
  }
  return best;
}

/** Compresses the parts as one stream; resolves undefined on failure (Triton then sends identity). */
export function compress(parts: readonly Buffer[], encoding: 'gzip' | 'deflate'): Promise<Buffer | undefined> {
  const input = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  return new Promise((resolve) => {
    const done = (err: Error | null, out: Buffer): void => resolve(err === null ? out : undefined);
    if (encoding === 'gzip') gzip(input, done);
    else deflate(input, done);
  });
}
