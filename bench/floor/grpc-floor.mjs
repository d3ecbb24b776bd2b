#!/usr/bin/env node
/**
 * The gRPC floor: an HTTP/2 server that reads each call's request message and answers with
 * the canned headers, message and trailers tritium sent for the same path and model
 * (canned.mjs): ServerLive, ServerMetadata, ModelMetadata, ModelConfig, ModelStatistics and
 * ModelInfer, whatever perf_analyzer asked when the table was recorded. No protobuf decoding
 * beyond the model name, no validation, no model: what a unary call costs on HTTP/2 itself.
 * The connections are tritium's own HTTP/2 sessions (dist/frontends/grpc/transport/h2-session.js,
 * over the nghttp2 inside Node) with tritium's settings, and the answer takes the same path as
 * tritium's (`answer`: headers, the message and the trailers in one call, and one write).
 *
 *   node bench/floor/grpc-floor.mjs <canned.json>
 *
 * Started by bench/floor.mjs with an IPC channel: sends { port } once it listens, answers
 * { op: 'count' } with { infer, other } and exits on { op: 'exit' }.
 */
import net from 'node:net';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { ModelStatisticsResponseSchema } from '../../dist/generated/grpc_service_pb.js';
import { H2Session, headerBlock } from '../../dist/frontends/grpc/transport/h2-session.js';
import { advanceStats, grpcKey, grpcModel, loadCanned, serveParent } from './canned.mjs';

const INFER = '/inference.GRPCInferenceService/ModelInfer';
const UNIMPLEMENTED = [':status', '200', 'content-type', 'application/grpc', 'grpc-status', '12', 'grpc-message', 'the floor has no canned answer'];

/** A header block converted once for the native session, as tritium's constant blocks are. */
const block = (headers) => headerBlock(Object.entries(headers).flatMap(([k, v]) => [k, String(v)]));

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
const table = new Map([...loadCanned(file).grpc].map(([k, v]) => [k, { ...v, headers: block(v.headers), trailers: block(v.trailers) }]));
const counts = { infer: 0, other: 0 };

const SETTINGS = { maxConcurrentStreams: 1024, initialWindowSize: 1024 * 1024, sessionWindow: 16 * 1024 * 1024 };
const server = net.createServer(function connected(socket) {
  const session = new H2Session(socket, SETTINGS);
  session.onStream = readCall;
  session.start();
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
    stream.respond(UNIMPLEMENTED, false);
    return;
  }
  // One framed, uncompressed message (every recorded unary answer): tritium's unary path, answer().
  const data = answer.data;
  if (data.length >= 5 && data[0] === 0 && data.readUInt32BE(1) === data.length - 5) {
    stream.answer(answer.headers, data.subarray(5), answer.trailers);
    return;
  }
  stream.respond(answer.headers, true);
  stream.write(data);
  stream.end(answer.trailers);
}

/** A call's reading: the stream's handler (h2-session's H2StreamHandler), as tritium's calls are. */
class CallRead {
  constructor(stream, path) {
    this.stream = stream;
    this.path = path;
    this.chunks = [];
  }
  data(chunk) {
    this.chunks.push(chunk);
  }
  end() {
    answerCall(this.stream, this.path, this.chunks);
  }
  closed() {}
}

function readCall(stream, headers) {
  stream.handler = new CallRead(stream, headers[':path']);
  stream.resume();
}

serveParent(server, counts);
