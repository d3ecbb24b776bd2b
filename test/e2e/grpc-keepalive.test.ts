/**
 * gRPC keepalive and ping policy from tritonserver's flags, seen from a raw HTTP/2 client on
 * the gRPC port (the frames a gRPC client library would hide). The expected behaviour is what
 * tritonserver 2.51 does with the same client (docs/protocol-notes.md, "gRPC keepalive").
 */
import http2 from 'node:http2';
import { create, toBinary } from '@bufbuild/protobuf';
import { ModelInferRequestSchema } from '../../src/generated/grpc_service_pb.js';
import net from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

interface Client {
  session: http2.ClientHttp2Session;
  /** PING frames the server sent. */
  serverPings: number;
  goaway?: { code: number; data: string };
  ping(): Promise<'ack' | 'failed'>;
}

async function connect(port: number): Promise<Client> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  const c: Client = {
    session,
    serverPings: 0,
    ping: () =>
      new Promise((resolve) => {
        try {
          if (!session.ping((err) => resolve(err ? 'failed' : 'ack'))) resolve('failed');
        } catch {
          resolve('failed');
        }
      }),
  };
  session.on('ping', () => c.serverPings++);
  session.on('goaway', (code, _last, data) => {
    c.goaway ??= { code, data: String(data ?? '') };
  });
  await new Promise((r) => session.once('connect', r));
  // The server's session handler runs once the connection is set up.
  await new Promise((r) => setTimeout(r, 100));
  return c;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(cond: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await sleep(20);
}

beforeAll(() => ensureBuilt());

describe('gRPC keepalive flags', () => {
  let s: Tritium | undefined;
  let client: Client | undefined;
  const repo = makeRepo([]);
  const start = async (args: string[]) => {
    s = await startTritium({ repos: [repo], args: ['--allow-http=true', ...args] });
    client = await connect(s.grpcPort!);
    return client;
  };
  afterEach(async () => {
    client?.session.destroy();
    client = undefined;
    await stopAndExpectNoShm(s);
    s = undefined;
  });

  it('answers a client pinging too often with GOAWAY ENHANCE_YOUR_CALM after the third strike (defaults)', async () => {
    const c = await start([]);
    const results: string[] = [];
    for (let i = 0; i < 6 && c.goaway === undefined; i++) results.push(await c.ping());
    await waitFor(() => c.goaway !== undefined);
    // The first ping is free, the next three are strikes; past two strikes the server goes away.
    expect(results.slice(0, 4)).toEqual(['ack', 'ack', 'ack', 'ack']);
    expect(c.goaway).toEqual({ code: http2.constants.NGHTTP2_ENHANCE_YOUR_CALM, data: 'too_many_pings' });
  });

  it('tolerates any number of pings with --grpc-http2-max-ping-strikes=0', async () => {
    const c = await start(['--grpc-http2-max-ping-strikes=0']);
    const results: string[] = [];
    for (let i = 0; i < 10; i++) results.push(await c.ping());
    expect(results).toEqual(Array(10).fill('ack'));
    expect(c.goaway).toBeUndefined();
  });

  it('counts a ping as a strike only when it comes sooner than --grpc-http2-min-recv-ping-interval-without-data', async () => {
    const c = await start(['--grpc-keepalive-permit-without-calls=true', '--grpc-http2-min-recv-ping-interval-without-data=150']);
    for (let i = 0; i < 6; i++) {
      expect(await c.ping()).toBe('ack');
      await sleep(200);
    }
    expect(c.goaway).toBeUndefined();
  });

  it('sends keepalive pings every --grpc-keepalive-time ms on an idle connection when permitted', async () => {
    const c = await start(['--grpc-keepalive-time=100', '--grpc-keepalive-permit-without-calls=true']);
    // Not limited by --grpc-http2-max-pings-without-data (2), as with tritonserver 2.51.
    await waitFor(() => c.serverPings >= 5);
    expect(c.serverPings).toBeGreaterThanOrEqual(5);
    expect(c.goaway).toBeUndefined();
  });

  it('sends no keepalive ping on an idle connection without --grpc-keepalive-permit-without-calls', async () => {
    const c = await start(['--grpc-keepalive-time=100']);
    await sleep(1000);
    expect(c.serverPings).toBe(0);
  });

  /** A bare HTTP/2 peer: the preface and an empty SETTINGS frame, then silence (no SETTINGS or PING acknowledgement). */
  function silentPeer(port: number) {
    const socket = net.connect(port, '127.0.0.1');
    const peer = { pings: 0, closed: false };
    socket.on('data', (d: Buffer) => {
      for (let i = 0; i + 9 <= d.length; i += 9 + d.readUIntBE(i, 3)) if (d[i + 3] === 0x6 && (d[i + 4]! & 0x1) === 0) peer.pings++;
    });
    socket.on('error', () => {});
    socket.once('close', () => {
      peer.closed = true;
    });
    socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]));
    return { peer, socket };
  }

  it.each([
    ['300', true],
    ['600000', false],
  ])('with --grpc-keepalive-timeout=%s, closes a peer that does not acknowledge a keepalive ping: %s', async (timeout, closes) => {
    s = await startTritium({
      repos: [repo],
      args: ['--grpc-keepalive-time=1000', `--grpc-keepalive-timeout=${timeout}`, '--grpc-keepalive-permit-without-calls=true'],
    });
    const { peer, socket } = silentPeer(s.grpcPort!);
    try {
      if (closes) await waitFor(() => peer.closed);
      else await sleep(3000); // three unanswered pings, far from the timeout
      expect(peer.pings).toBeGreaterThanOrEqual(1);
      expect(peer.closed).toBe(closes);
    } finally {
      socket.destroy();
    }
  });

  it('closes a connection with GOAWAY NO_ERROR once it is --grpc-max-connection-age old', async () => {
    const c = await start(['--grpc-max-connection-age=300']);
    await waitFor(() => c.goaway !== undefined);
    expect(c.goaway?.code).toBe(http2.constants.NGHTTP2_NO_ERROR);
  });
});

describe('gRPC ping policy on a long stream', () => {
  it('forgives pings while a stream sends responses: a client pinging after each one is never told too_many_pings', async () => {
    const repo = makeRepo(['repeat_int32']);
    const server = await startTritium({ repos: [repo] });
    const c = await connect(server.grpcPort!);
    try {
      const n = 12;
      const request = create(ModelInferRequestSchema, {
        modelName: 'repeat_int32',
        inputs: [
          { name: 'IN', datatype: 'INT32', shape: [BigInt(n)] },
          { name: 'DELAY', datatype: 'UINT32', shape: [BigInt(n)] },
          { name: 'WAIT', datatype: 'UINT32', shape: [1n] },
        ],
        rawInputContents: [
          Buffer.from(new Int32Array(n).fill(7).buffer),
          Buffer.from(new Uint32Array(n).fill(50).buffer),
          Buffer.from(new Uint32Array([0]).buffer),
        ],
      });
      const bytes = toBinary(ModelInferRequestSchema, request);
      const frame = Buffer.alloc(5 + bytes.length);
      frame.writeUInt32BE(bytes.length, 1);
      frame.set(bytes, 5);
      const stream = c.session.request({
        ':method': 'POST',
        ':path': '/inference.GRPCInferenceService/ModelStreamInfer',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      stream.on('error', () => {});
      let pings = 0;
      // As a gRPC client's BDP probe does: a ping when response data arrives.
      stream.on('data', () => {
        pings++;
        void c.ping();
      });
      stream.write(frame);
      await waitFor(() => pings >= n || c.goaway !== undefined, 30_000);
      expect(c.goaway).toBeUndefined();
      expect(pings).toBeGreaterThanOrEqual(n);
      stream.close();
    } finally {
      c.session.destroy();
      await stopAndExpectNoShm(server);
    }
  }, 60_000);
});
