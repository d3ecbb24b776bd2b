/**
 * @module frontends/grpc/transport/response-compression
 * `--grpc-infer-response-compression-level` (none, low, medium, high): the algorithm an
 * inference response is compressed with, as tritonserver 2.51 chooses it (docs/protocol-notes.md,
 * "gRPC response compression"): among gzip then deflate, those the client lists in
 * `grpc-accept-encoding`, low takes the first, medium the middle one, high the last; none when
 * the client lists neither. A message is sent compressed only when that makes it smaller.
 */
import { deflateSync, gzipSync } from 'node:zlib';

export type CompressionLevel = 'none' | 'low' | 'medium' | 'high';
export type Algorithm = 'gzip' | 'deflate';

const RANKING: readonly Algorithm[] = ['gzip', 'deflate'];

export function algorithmFor(level: CompressionLevel, acceptEncoding: string | string[] | undefined): Algorithm | undefined {
  if (level === 'none' || acceptEncoding === undefined) return undefined;
  const accepted = new Set((Array.isArray(acceptEncoding) ? acceptEncoding.join(',') : acceptEncoding).split(',').map((s) => s.trim()));
  const usable = RANKING.filter((a) => accepted.has(a));
  if (usable.length === 0) return undefined;
  const index = level === 'low' ? 0 : level === 'medium' ? Math.floor(usable.length / 2) : usable.length - 1;
  return usable[index];
}

/** The payload compressed with `algorithm`, or undefined when that would not make it smaller. */
export function compressed(algorithm: Algorithm, payload: Uint8Array): Buffer | undefined {
  const out = algorithm === 'gzip' ? gzipSync(payload) : deflateSync(payload);
  return out.length < payload.length ? out : undefined;
}
