#!/usr/bin/env node
/**
 * The gRPC floor: a node:http2 server that reads each call's request message and answers with
 * the canned headers, message and trailers tritium sent for the same path and model
 * (canned.mjs): ServerLive, ServerMetadata, ModelMetadata, ModelConfig, ModelStatistics and
 * ModelInfer, whatever perf_analyzer asked when the table was recorded. No protobuf decoding
 * beyond the model name, no validation, no model: what a unary call costs on node:http2 itself.
 * The session settings are tritium's (src/frontends/grpc/transport/server.ts), and the answer
 * takes the same path as tritium's (`respond` with waitForTrailers, the message, `sendTrailers`).
 *
 *   node bench/floor/grpc-floor.mjs <canned.json>
 *
 * Started by bench/floor.mjs with an IPC channel: sends { port } once it listens, answers
 * { op: 'count' } with { infer, other } and exits on { op: 'exit' }.
 */
import http2 from 'node:http2';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { ModelStatisticsResponseSchema } from '../../dist/generated/grpc_service_pb.js';
import { advanceStats, grpcKey, grpcModel, loadCanned, serveParent } from './canned.mjs';

const INFER = '/inference.GRPCInferenceService/ModelInfer';
const UNIMPLEMENTED = { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12', 'grpc-message': 'the floor has no canned answer' };

const STATS = '/inference.GRPCInferenceService/ModelStatistics';

/**
 * A statistics message whose counts follow this server's (canned.mjs, advanceStats), built per
 * call from the recorded one with the generated codec (dist/, as tritium encodes it).
 * perf_analyzer asks a few times per window, so its cost is not in the floor's figures.
 */
function statsAnswer(recorded) {
  const message = fromBinary(ModelStatisticsResponseSchema, recorded.data.subarray(5));
  const bytes = toBinary(ModelStatisticsResponseSchema, advanceStats(message, counts.infer));
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(bytes.length, 1);
  return { ...recorded, data: Buffer.concat([prefix, bytes]) };
}

const file = process.argv[2];
if (!file) throw new Error('usage: node bench/floor/grpc-floor.mjs <canned.json>');
const table = loadCanned(file).grpc;
const counts = { infer: 0, other: 0 };

const server = http2.createServer({
  maxSessionMemory: Number.MAX_SAFE_INTEGER,
  settings: { initialWindowSize: 1024 * 1024, maxConcurrentStreams: 1024 },
});

/** A call's whole request is in: the canned headers, message and trailers for its path and model. */
function answerCall(stream, path, chunks) {
  const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
  const key = grpcKey(path, grpcModel(body));
  let answer = table.get(key);
  if (answer !== undefined && path === STATS) answer = statsAnswer(answer);
  if (path === INFER) counts.infer++;
  else counts.other++;
  if (answer === undefined) {
    process.stderr.write(`grpc-floor: no canned answer for ${key}\n`);
    stream.respond(UNIMPLEMENTED, { endStream: true });
    return;
  }
  stream.respond(answer.headers, { waitForTrailers: true });
  stream.once('wantTrailers', function sendTrailers() {
    stream.sendTrailers(answer.trailers);
  });
  stream.end(answer.data);
}

server.on('stream', function readCall(stream, headers) {
  const path = headers[':path'];
  const chunks = [];
  stream.on('data', function onData(c) {
    chunks.push(c);
  });
  stream.on('end', () => answerCall(stream, path, chunks));
  stream.on('error', () => {});
});
server.on('sessionError', () => {});

serveParent(server, counts);
