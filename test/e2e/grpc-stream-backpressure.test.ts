/**
 * A ModelStreamInfer client that sends and never reads must not grow the server without bound:
 * the stream stops reading requests while its responses wait (HTTP/2 flow control then holds
 * the client back), so the server's memory stays bounded however long the client keeps sending,
 * and a cancel frees the stream. The client here is raw node:http2, so that "never reads" is
 * exact: its stream is paused from the start.
 */
import fs from 'node:fs';
import http2 from 'node:http2';
import { create, toBinary } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelInferRequestSchema } from '../../src/generated/grpc_service_pb.js';
import { frameMessage } from '../../src/frontends/grpc/transport/message-reader.js';
import { grpcCall } from '../helpers/grpc-raw.js';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const MIB = 1024 * 1024;
let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['large_output', 'decoupled_flood'])] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

/** Resident memory of the server process (Node only; stubs are processes of their own). */
function openStream(): { session: http2.ClientHttp2Session; stream: http2.ClientHttp2Stream } {
  const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
  session.on('error', () => {});
  return { session, stream: grpcCall(session, 'ModelStreamInfer') };
}

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

/** One framed ModelInferRequest asking large_output for `count` INT32 elements (4 × count bytes). */
function requestMessage(id: number, count: number, flood?: number): Buffer {
  const int64 = (v: number): Buffer => {
    const b = Buffer.alloc(8);
    b.writeBigInt64LE(BigInt(v));
    return b;
  };
  const msg = create(ModelInferRequestSchema, {
    modelName: flood === undefined ? 'large_output' : 'decoupled_flood',
    id: String(id),
    inputs: [{ name: 'COUNT', datatype: 'INT64', shape: [1n] }, ...(flood === undefined ? [] : [{ name: 'N', datatype: 'INT64', shape: [1n] }])],
    rawInputContents: flood === undefined ? [int64(count)] : [int64(count), int64(flood)],
  });
  return frameMessage(toBinary(ModelInferRequestSchema, msg));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('ModelStreamInfer with a client that never reads', () => {
  it('keeps server memory bounded while the client keeps sending, and serves others after the cancel', async () => {
    const pid = server.proc.pid!;
    const { session, stream } = openStream();
    stream.pause(); // never read a response

    const before = rssBytes(pid);
    let peak = before;
    let sent = 0;
    const deadline = Date.now() + 12_000;
    // Each request asks for 1 MiB of output: unbounded, a few hundred would take gigabytes.
    while (Date.now() < deadline) {
      for (let i = 0; i < 16; i++) stream.write(requestMessage(sent++, MIB / 4));
      peak = Math.max(peak, rssBytes(pid));
      await sleep(20);
    }
    peak = Math.max(peak, rssBytes(pid));
    expect(sent).toBeGreaterThan(500);
    expect(peak - before).toBeLessThan(200 * MIB);

    stream.close(http2.constants.NGHTTP2_CANCEL);
    session.close();

    // The server serves a fresh stream after the cancel, and its memory did not keep growing.
    const res = await fetch(`${server.http}/v2/models/large_output/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'COUNT', datatype: 'INT64', shape: [1], data: [4] }] }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()).outputs[0].data).toEqual([0, 1, 2, 3]);
    await sleep(1000);
    expect(rssBytes(pid) - before).toBeLessThan(200 * MIB);
  }, 60_000);

  it('ends a stream whose decoupled model answers faster than its client reads, cancelling the request', async () => {
    const pid = server.proc.pid!;
    const before = rssBytes(pid);
    const { session, stream } = openStream();
    stream.pause();
    // One request, up to 100000 responses of 1 MiB: far more than a stream may hold unread.
    stream.write(requestMessage(1, MIB / 4, 100_000));
    const deadline = Date.now() + 30_000;
    let peak = before;
    while (!server.log().includes('decoupled_flood: cancelled after') && Date.now() < deadline) {
      peak = Math.max(peak, rssBytes(pid));
      await sleep(50);
    }
    expect(server.log()).toMatch(/decoupled_flood: cancelled after \d+/);
    expect(peak - before).toBeLessThan(400 * MIB);
    // Reading now drains what was queued and ends with the status that says why.
    const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve) => {
      stream.on('trailers', resolve);
      stream.on('data', () => {});
      stream.resume();
    });
    expect(trailers['grpc-status']).toBe('14');
    expect(decodeURIComponent(String(trailers['grpc-message']))).toContain('does not read its responses');
    session.close();
  }, 60_000);
});
