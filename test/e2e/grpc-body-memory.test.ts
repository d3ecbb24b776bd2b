/**
 * The gRPC frontend's body budget (`--grpc-max-body-memory`, frontends/body-budget.ts and
 * grpc/transport/body-hold.ts): with 8 MiB, a call whose 6 MiB message is half sent holds 6 MiB;
 * a second 6 MiB call does not fit, so its stream is not read (HTTP/2 flow control stops its
 * client) until the first call ends, and then it is served whole. Its wait, longer than the
 * 1 s read timeout, is the server's and does not end it. Real server, raw HTTP/2
 * client, test/models/byte_count.
 */
import fs from 'node:fs';
import http2 from 'node:http2';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelInferRequestSchema, ModelInferResponseSchema } from '../../src/generated/grpc_service_pb.js';
import { frameMessage, grpcCall, watchCall } from '../helpers/grpc-raw.js';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const MIB = 1 << 20;
let server: Tritium;
let repo: string;

beforeAll(async () => {
  repo = makeRepo(['byte_count']);
  server = await startTritium({ repos: [repo], args: [`--grpc-max-body-memory=${8 * MIB}`, '--grpc-read-timeout-secs=1'] });
});

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(repo, { recursive: true, force: true });
});

/** One gRPC message: a ModelInferRequest for byte_count with `bytes` bytes of DATA. */
function countFrame(bytes: number, fill: number): Buffer {
  const request = create(ModelInferRequestSchema, {
    modelName: 'byte_count',
    inputs: [
      { name: 'DATA', datatype: 'UINT8', shape: [BigInt(bytes)] },
      { name: 'MS', datatype: 'INT32', shape: [1n] },
    ],
    rawInputContents: [Buffer.alloc(bytes, fill), Buffer.from(new Int32Array([0]).buffer)],
  });
  return frameMessage(toBinary(ModelInferRequestSchema, request));
}

/** A ModelInfer call; `done` resolves with its status, byte_count's COUNT and when it closed. */
function call(session: http2.ClientHttp2Session) {
  const stream = grpcCall(session, 'ModelInfer');
  const answer = watchCall(stream);
  const done = answer.done.then((w) => {
    const body = Buffer.concat(w.chunks);
    const raw = body.length > 5 ? fromBinary(ModelInferResponseSchema, body.subarray(5)).rawOutputContents[0] : undefined;
    const count = raw ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).readBigInt64LE(0) : undefined;
    return { status: w.status, count, at: w.closedAt! };
  });
  return { stream, done };
}

describe('gRPC body memory', () => {
  it('holds back a call that does not fit until memory is given back, then serves it whole', async () => {
    const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
    session.on('error', () => {});
    const a = call(session);
    const aFrame = countFrame(6 * MIB, 1);
    a.stream.write(aFrame.subarray(0, 3 * MIB));
    await new Promise((r) => setTimeout(r, 300));

    const b = call(session);
    b.stream.end(countFrame(6 * MIB, 2));
    let bDone = false;
    void b.done.then(() => (bDone = true));
    // The first call trickles a byte every 300 ms (within its 1 s read timeout); the second
    // waits longer than that timeout, on the server, and is not ended for it.
    let sent = 3 * MIB;
    for (let i = 0; i < 8; i++, sent++) {
      await new Promise((r) => setTimeout(r, 300));
      a.stream.write(aFrame.subarray(sent, sent + 1));
    }
    expect(bDone).toBe(false); // not read while the first call holds the memory

    a.stream.end(aFrame.subarray(sent));
    const [ra, rb] = await Promise.all([a.done, b.done]);
    expect([ra.status, rb.status]).toEqual(['0', '0']);
    expect([ra.count, rb.count]).toEqual([BigInt(6 * MIB), BigInt(6 * MIB)]);
    expect(rb.at).toBeGreaterThan(ra.at);

    // Memory was given back: a further call of the same size is served at once.
    const c = call(session);
    c.stream.end(countFrame(6 * MIB, 3));
    expect((await c.done).count).toBe(BigInt(6 * MIB));
    session.destroy();
  }, 30_000);
});
