/**
 * `--grpc-infer-response-compression-level` (docs/protocol-notes.md, "gRPC response
 * compression"): inference responses announce the algorithm tritonserver 2.51 picks from the
 * client's `grpc-accept-encoding` and carry compressed messages when that makes them smaller;
 * tritonclient.grpc reads them as usual.
 */
import fs from 'node:fs';
import http2 from 'node:http2';
import { gunzipSync, inflateSync } from 'node:zlib';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelInferRequestSchema, ModelInferResponseSchema } from '../../src/generated/grpc_service_pb.js';
import { makeRepo, python, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const N = 4096;
let s: Tritium;
const repo = makeRepo(['identity_all']);

/** One ModelInfer of N zeros over a raw HTTP/2 stream: the response's grpc-encoding and its message. */
async function rawInfer(port: number, acceptEncoding: string | undefined) {
  const request = create(ModelInferRequestSchema, {
    modelName: 'identity_all',
    inputs: [{ name: 'IN_FP32', datatype: 'FP32', shape: [BigInt(N)] }],
    rawInputContents: [new Uint8Array(N * 4)],
  });
  const body = toBinary(ModelInferRequestSchema, request);
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  frame.set(body, 5);
  const session = http2.connect(`http://127.0.0.1:${port}`);
  try {
    const headers: http2.OutgoingHttpHeaders = {
      ':method': 'POST',
      ':path': '/inference.GRPCInferenceService/ModelInfer',
      'content-type': 'application/grpc',
      te: 'trailers',
    };
    if (acceptEncoding !== undefined) headers['grpc-accept-encoding'] = acceptEncoding;
    const stream = session.request(headers);
    const encoding = new Promise<string | undefined>((r) => stream.once('response', (h) => r(h['grpc-encoding'] as string | undefined)));
    const chunks: Buffer[] = [];
    stream.on('data', (d: Buffer) => chunks.push(d));
    const ended = new Promise<void>((r) => stream.once('end', () => r()));
    stream.end(frame);
    await ended;
    const message = Buffer.concat(chunks);
    const flag = message[0]!;
    const payload = message.subarray(5, 5 + message.readUInt32BE(1));
    const enc = await encoding;
    const plain = flag === 0 ? payload : enc === 'gzip' ? gunzipSync(payload) : inflateSync(payload);
    const response = fromBinary(ModelInferResponseSchema, plain);
    return { encoding: enc, compressed: flag === 1, size: payload.length, outputBytes: response.rawOutputContents[0]?.length };
  } finally {
    session.close();
  }
}

beforeAll(async () => {
  s = await startTritium({ repos: [repo], args: ['--grpc-infer-response-compression-level=low'] });
});
afterAll(async () => {
  await stopAndExpectNoShm(s);
  fs.rmSync(repo, { recursive: true, force: true });
});

describe('--grpc-infer-response-compression-level', () => {
  it('compresses an inference response with the algorithm the level picks from what the client accepts', async () => {
    const gz = await rawInfer(s.grpcPort!, 'identity,deflate,gzip');
    expect(gz).toMatchObject({ encoding: 'gzip', compressed: true, outputBytes: N * 4 });
    expect(gz.size).toBeLessThan(N * 4);
    const plain = await rawInfer(s.grpcPort!, undefined);
    expect(plain).toMatchObject({ encoding: undefined, compressed: false, outputBytes: N * 4 });
  });

  it('is read by tritonclient.grpc', () => {
    const out = python(`
import numpy as np, tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${s.grpcPort}")
i = g.InferInput("IN_FP32", [${N}], "FP32"); i.set_data_from_numpy(np.arange(${N}, dtype=np.float32))
r = c.infer("identity_all", [i], outputs=[g.InferRequestedOutput("OUT_FP32")])
print(int(r.as_numpy("OUT_FP32").sum()))
`);
    expect(Number(out)).toBe((N * (N - 1)) / 2);
  });
});

describe('the level’s algorithm', () => {
  it.each([
    ['medium', 'identity,deflate,gzip', 'deflate'],
    ['high', 'identity,deflate,gzip', 'deflate'],
    ['high', 'identity,gzip', 'gzip'],
  ])('%s with %s is %s, as tritonserver 2.51 chooses', async (level, accept, algorithm) => {
    const t = await startTritium({ repos: [repo], args: [`--grpc-infer-response-compression-level=${level}`] });
    try {
      expect((await rawInfer(t.grpcPort!, accept)).encoding).toBe(algorithm);
    } finally {
      await stopAndExpectNoShm(t);
    }
  });
});
