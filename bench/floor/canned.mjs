/**
 * The canned answers of the floor servers: what tritium answered to each request perf_analyzer
 * made (recorded by record.mjs), byte for byte, in one JSON file:
 *
 *   { "http": { "<METHOD> <target>": "<base64 of the whole response: status line, headers, body>" },
 *     "grpc": { "<path> <model>": { "headers": {...}, "data": "<base64 of the gRPC message frames>",
 *                                   "trailers": {...} } } }
 *
 * A gRPC key names the call's path and the model its request names (field 1 of ModelInfer,
 * ModelMetadata, ModelConfig and ModelStatistics requests; empty for ServerLive and the like).
 */
import fs from 'node:fs';

/** Field 1 (a string) of the first message of a gRPC request body, or '' when it has none. */
export function grpcModel(body) {
  // 5-byte prefix (compressed flag, u32 BE length), then the message; field 1, wire type 2 = 0x0a.
  if (body.length < 7 || body[5] !== 0x0a) return '';
  let len = 0;
  let shift = 0;
  let i = 6;
  for (; i < body.length; i++) {
    len += (body[i] & 0x7f) * 2 ** shift;
    shift += 7;
    if (body[i] < 0x80) break;
  }
  return body.toString('utf8', i + 1, i + 1 + len);
}

export function grpcKey(path, model) {
  return `${path} ${model}`;
}

/** Reads a canned file into lookup tables: http key → Buffer, grpc key → { headers, data, trailers }. */
export function loadCanned(file) {
  const json = JSON.parse(fs.readFileSync(file, 'utf8'));
  const http = new Map(Object.entries(json.http ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
  const grpc = new Map(Object.entries(json.grpc ?? {}).map(([k, v]) => [k, { headers: v.headers, data: Buffer.from(v.data, 'base64'), trailers: v.trailers }]));
  return { http, grpc };
}

/**
 * Statistics that move with the floor's own count of answered inferences `n`: perf_analyzer
 * reads a model's statistics before and after each window and refuses a run in which they did
 * not change ("failed to find the requested model version"). Works on the JSON of the HTTP
 * answer (snake_case, numbers) and on protobuf-es messages of the gRPC one (camelCase, bigint):
 * every `{count, ns}` that counted requests now counts `n` at the recorded time per request,
 * inference and execution counts become `n` (batch 1), the last inference is now.
 */
export function advanceStats(value, n) {
  if (Array.isArray(value)) {
    for (const v of value) advanceStats(v, n);
    return value;
  }
  if (value === null || typeof value !== 'object') return value;
  const big = typeof value.count === 'bigint';
  if ('count' in value && 'ns' in value && Number(value.count) > 0) {
    const perRequest = Number(value.ns) / Number(value.count);
    value.count = big ? BigInt(n) : n;
    value.ns = big ? BigInt(Math.round(perRequest * n)) : Math.round(perRequest * n);
    return value;
  }
  for (const key of Object.keys(value)) {
    const v = value[key];
    if (/^(inference_count|execution_count|inferenceCount|executionCount)$/.test(key)) value[key] = typeof v === 'bigint' ? BigInt(n) : n;
    else if (/^(last_inference|lastInference)$/.test(key)) value[key] = typeof v === 'bigint' ? BigInt(Date.now()) : Date.now();
    else if (typeof v === 'object') advanceStats(v, n);
  }
  return value;
}

/**
 * Serves a floor server (`server`, a net.Server or http2 server) to bench/floor.mjs over the IPC
 * channel: listens on an ephemeral loopback port and sends { port }, answers { op: 'count' } with
 * a copy of `counts`, and exits on { op: 'exit' } or when the parent goes.
 */
export function serveParent(server, counts) {
  process.on('message', (m) => {
    if (m.op === 'count') process.send({ ...counts });
    else if (m.op === 'exit') process.exit(0); // also writes a --cpu-prof profile
  });
  process.on('disconnect', () => process.exit(0));
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
}
