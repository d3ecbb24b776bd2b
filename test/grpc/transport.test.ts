/**
 * The gRPC transport (src/frontends/grpc/transport, HTTP/2 over Node's nghttp2) against a real gRPC client
 * (@grpc/grpc-js) and raw HTTP/2: message framing across frames, deadlines, cancellation,
 * compression, size limits, unknown methods and requests that are not gRPC.
 */
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DuplexCall, UnaryCall } from '../../src/frontends/grpc/transport/call.js';
import { MessageReader, type RawMessage } from '../../src/frontends/grpc/transport/message-reader.js';
import { parseTimeoutMs } from '../../src/frontends/grpc/transport/metadata.js';
import { createTransport, type Route, type Transport } from '../../src/frontends/grpc/transport/http2-server.js';
import { GrpcStatus, StatusError, encodeGrpcMessage } from '../../src/frontends/grpc/transport/status.js';
import { h2Frame, hpackLiterals } from '../helpers/grpc-raw.js';

const frame = (payload: Buffer, compressed = false): Buffer => {
  const b = Buffer.alloc(5 + payload.length);
  b[0] = compressed ? 1 : 0;
  b.writeUInt32BE(payload.length, 1);
  payload.copy(b, 5);
  return b;
};

/** `mib` MiB of a repeating pattern, so that a misplaced piece shows. */
function bigAnswer(mib: number): Buffer {
  const b = Buffer.alloc(mib << 20);
  for (let i = 0; i < b.length; i += 4) b.writeUInt32LE(i, i);
  return b;
}

describe('MessageReader', () => {
  it('cuts messages split and joined arbitrarily across chunks', () => {
    const payloads = [Buffer.from('a'), Buffer.alloc(0), Buffer.alloc(70_000, 7), Buffer.from('last')];
    const wire = Buffer.concat(payloads.map((p) => frame(p)));
    for (const step of [1, 3, 5, 6, 4096, wire.length]) {
      const reader = new MessageReader(1 << 20);
      const out: RawMessage[] = [];
      for (let off = 0; off < wire.length; off += step) reader.push(wire.subarray(off, off + step), out);
      expect(out.map((m) => m.data)).toEqual(payloads);
      expect(reader.midMessage).toBe(false);
    }
  });

  it('tells the size of a message that has begun to arrive, once its prefix is in, and counts whole ones', () => {
    const wire = Buffer.concat([frame(Buffer.from('ab')), frame(Buffer.alloc(1000, 1))]);
    const reader = new MessageReader(1 << 20);
    const out: RawMessage[] = [];
    reader.push(wire.subarray(0, 10), out); // the first whole, 3 bytes of the second's prefix
    expect([reader.completed, reader.pendingMessageBytes]).toEqual([1, undefined]);
    reader.push(wire.subarray(10, 12), out); // the prefix is whole, split across two chunks
    expect([reader.completed, reader.pendingMessageBytes]).toEqual([1, 1005]);
    reader.push(wire.subarray(12), out);
    expect([reader.completed, reader.pendingMessageBytes]).toEqual([2, undefined]);
  });

  it('refuses a message over the limit from its prefix alone', () => {
    const reader = new MessageReader(10);
    const prefix = Buffer.from([0, 0, 0, 0, 11]);
    expect(() => reader.push(prefix, [])).toThrow(new StatusError(GrpcStatus.RESOURCE_EXHAUSTED, 'Received message larger than max (11 vs. 10)'));
  });
});

describe('grpc-message and grpc-timeout', () => {
  it('percent-encodes what is not printable ASCII, and % itself', () => {
    expect(encodeGrpcMessage('plain text')).toBe('plain text');
    expect(encodeGrpcMessage('100% é\n')).toBe('100%25 %C3%A9%0A');
  });
  it('parses every unit and ignores malformed values', () => {
    expect(parseTimeoutMs('2S')).toBe(2000);
    expect(parseTimeoutMs('1H')).toBe(3_600_000);
    expect(parseTimeoutMs('300m')).toBe(300);
    expect(parseTimeoutMs('5000u')).toBe(5);
    expect(parseTimeoutMs('123456789S')).toBeUndefined();
    expect(parseTimeoutMs('5x')).toBeUndefined();
    expect(parseTimeoutMs(undefined)).toBeUndefined();
  });
});

describe('transport against @grpc/grpc-js', () => {
  let transport: Transport;
  let port: number;
  let client: grpc.Client;
  const cancelled: string[] = [];
  let refuse: StatusError | undefined;

  const routes = new Map<string, Route>([
    ['/t.S/Echo', { kind: 'unary', decode: (b) => Buffer.from(b), run: (call: UnaryCall) => call.sendLast(call.request as Buffer) }],
    ['/t.S/Fail', { kind: 'unary', decode: (b) => b, run: (call: UnaryCall) => call.sendStatus(new StatusError(GrpcStatus.NOT_FOUND, 'no such thing: ü')) }],
    [
      '/t.S/Never',
      {
        kind: 'unary',
        decode: (b) => b.toString(),
        run: (call: UnaryCall) => {
          call.canceller = { abort: () => cancelled.push(String(call.request)) };
        },
      },
    ],
    [
      '/t.S/Chat',
      {
        kind: 'bidi',
        decode: (b) => b.toString(),
        run: (call: DuplexCall) => {
          call.on('data', (m: unknown) => call.write(Buffer.from(`re:${String(m)}`)));
          call.on('end', () => call.end());
          call.on('cancelled', () => cancelled.push('chat'));
        },
      },
    ],
  ]);

  beforeAll(async () => {
    transport = createTransport(routes, { maxMessageBytes: 1 << 20, refuseWith: () => refuse });
    await new Promise<void>((r) => transport.server.listen(0, '127.0.0.1', r));
    port = (transport.server.address() as AddressInfo).port;
    client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
      'grpc.max_send_message_length': -1,
      'grpc.max_receive_message_length': -1,
    });
  });

  afterAll(async () => {
    client.close();
    await transport.close(1000);
  });

  const unary = (method: string, body: Buffer, options: grpc.CallOptions = {}, c = client): Promise<Buffer> =>
    new Promise((resolve, reject) => {
      c.makeUnaryRequest(
        method,
        (b: Buffer) => b,
        (b: Buffer) => b,
        body,
        new grpc.Metadata(),
        options,
        (err, res) => (err ? reject(err) : resolve(res!)),
      );
    });

  it('answers unary calls, small and large', async () => {
    expect((await unary('/t.S/Echo', Buffer.from('hi'))).toString()).toBe('hi');
    const big = Buffer.alloc(900_000, 3);
    expect((await unary('/t.S/Echo', big)).equals(big)).toBe(true);
  });

  it('sends error statuses with their text', async () => {
    await expect(unary('/t.S/Fail', Buffer.alloc(0))).rejects.toMatchObject({ code: grpc.status.NOT_FOUND, details: 'no such thing: ü' });
  });

  it('answers UNIMPLEMENTED for an unknown method', async () => {
    await expect(unary('/t.S/Nope', Buffer.alloc(0))).rejects.toMatchObject({
      code: grpc.status.UNIMPLEMENTED,
      details: 'The server does not implement the method /t.S/Nope',
    });
  });

  it('refuses a message over the limit with RESOURCE_EXHAUSTED', async () => {
    await expect(unary('/t.S/Echo', Buffer.alloc((1 << 20) + 1))).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
  });

  it('ends a call at its deadline with DEADLINE_EXCEEDED and tells the handler', async () => {
    const err = await unary('/t.S/Never', Buffer.from('deadline'), { deadline: Date.now() + 200 }).catch((e: grpc.ServiceError) => e);
    expect(err).toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED });
    for (let i = 0; i < 50 && !cancelled.includes('deadline'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(cancelled).toContain('deadline');
  });

  it('tells the handler when the client cancels', async () => {
    const call = client.makeUnaryRequest(
      '/t.S/Never',
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.from('cancel'),
      () => {},
    );
    await new Promise((r) => setTimeout(r, 100));
    call.cancel();
    for (let i = 0; i < 50 && !cancelled.includes('cancel'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(cancelled).toContain('cancel');
    expect(transport.active).toBe(0);
  });

  it('inflates gzip-compressed requests', async () => {
    const gz = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.default_compression_algorithm': 2 });
    const body = Buffer.alloc(10_000, 'x');
    expect((await unary('/t.S/Echo', body, {}, gz)).equals(body)).toBe(true);
    gz.close();
  });

  it('streams both ways and ends OK after the client half-closes', async () => {
    const stream = client.makeBidiStreamRequest(
      '/t.S/Chat',
      (b: Buffer) => b,
      (b: Buffer) => b.toString(),
    );
    const got: string[] = [];
    stream.on('data', (m: string) => got.push(m));
    const status = new Promise<grpc.StatusObject>((r) => stream.on('status', r));
    for (const m of ['a', 'b', 'c']) stream.write(Buffer.from(m));
    stream.end();
    expect((await status).code).toBe(grpc.status.OK);
    expect(got).toEqual(['re:a', 're:b', 're:c']);
  });

  it('refuses new calls with the status the server gives while shutting down', async () => {
    refuse = new StatusError(GrpcStatus.UNAVAILABLE, 'going away');
    await expect(unary('/t.S/Echo', Buffer.from('x'))).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE, details: 'going away' });
    refuse = undefined;
  });
});

describe('transport against raw HTTP/2', () => {
  let transport: Transport;
  /** Calls /t.S/Later has answered, and who wants to hear of each. */
  let answered = 0;
  let onAnswered = (): void => {};
  let session: http2.ClientHttp2Session;

  beforeAll(async () => {
    const routes = new Map<string, Route>([
      ['/t.S/Echo', { kind: 'unary', decode: (b) => b, run: (call: UnaryCall) => call.sendLast(call.request as Buffer) }],
      // Echo a turn later: each answer leaves in a flush of its own.
      [
        '/t.S/Later',
        {
          kind: 'unary',
          decode: (b) => b,
          run: (call: UnaryCall) =>
            void setImmediate(() => {
              call.sendLast(call.request as Buffer);
              answered++;
              onAnswered();
            }),
        },
      ],
      // The call's own `x-tag` metadata: repeated header blocks are reused per connection, changed ones are not.
      ['/t.S/Tag', { kind: 'unary', decode: (b) => b, run: (call: UnaryCall) => call.sendLast(Buffer.from(String(call.metadata.get('x-tag')[0]))) }],
      // An answer of `n` MiB for a request naming n: more than one flush of the session (1 MiB) holds.
      ['/t.S/Big', { kind: 'unary', decode: (b) => Number(b.toString()), run: (call: UnaryCall) => call.sendLast(bigAnswer(call.request as number)) }],
    ]);
    transport = createTransport(routes, { maxMessageBytes: 1 << 16, refuseWith: () => undefined });
    await new Promise<void>((r) => transport.server.listen(0, '127.0.0.1', r));
    session = http2.connect(`http://127.0.0.1:${(transport.server.address() as AddressInfo).port}`);
  });

  afterAll(async () => {
    session.close();
    await transport.close(1000);
  });

  const request = (
    headers: http2.OutgoingHttpHeaders,
    body: Buffer,
  ): Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const req = session.request(headers);
      let h: http2.IncomingHttpHeaders = {};
      let t: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      req.on('response', (x) => (h = x));
      req.on('trailers', (x) => (t = x));
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve({ headers: h, trailers: t, body: Buffer.concat(chunks) }));
      req.on('error', reject);
      if (body.length > 0) req.end(body);
      else req.end();
    });
  const grpcHeaders = { ':method': 'POST', ':path': '/t.S/Echo', 'content-type': 'application/grpc' };

  it('answers 415 to a request that is not gRPC and 405 to a GET', async () => {
    expect((await request({ ':method': 'POST', ':path': '/t.S/Echo', 'content-type': 'application/json' }, Buffer.alloc(0))).headers[':status']).toBe(415);
    expect((await request({ ':method': 'GET', ':path': '/t.S/Echo' }, Buffer.alloc(0))).headers[':status']).toBe(405);
  });

  it('refuses a compressed message without grpc-encoding, and unknown encodings', async () => {
    const r = await request(grpcHeaders, frame(gzipSync(Buffer.from('x')), true));
    expect(r.headers['grpc-status']).toBe(String(GrpcStatus.INTERNAL));
    const z = await request({ ...grpcHeaders, 'grpc-encoding': 'zstd' }, frame(Buffer.from('x')));
    expect(z.headers['grpc-status']).toBe(String(GrpcStatus.UNIMPLEMENTED));
  });

  it('bounds a decompression bomb by the message limit', async () => {
    const bomb = gzipSync(Buffer.alloc(10 << 20));
    const r = await request({ ...grpcHeaders, 'grpc-encoding': 'gzip' }, frame(bomb, true));
    expect(r.headers['grpc-status']).toBe(String(GrpcStatus.RESOURCE_EXHAUSTED));
  });

  it('refuses a truncated message and two messages on a unary call', async () => {
    const truncated = await request(grpcHeaders, frame(Buffer.from('hello')).subarray(0, 7));
    expect(truncated.headers['grpc-status']).toBe(String(GrpcStatus.UNIMPLEMENTED));
    const two = await request(grpcHeaders, Buffer.concat([frame(Buffer.from('a')), frame(Buffer.from('b'))]));
    expect(two.headers['grpc-status']).toBe(String(GrpcStatus.UNIMPLEMENTED));
  });

  it('gives each call its own headers when a connection repeats or changes its header block', async () => {
    const tags = ['a', 'a', 'b', 'b', 'a'];
    const answers: string[] = [];
    for (const tag of tags) {
      const r = await request({ ...grpcHeaders, ':path': '/t.S/Tag', 'x-tag': tag }, frame(Buffer.from('x')));
      answers.push(r.body.subarray(5).toString());
    }
    expect(answers).toEqual(tags);
  });

  it('answers a burst of calls larger than one batch of session events, each with its own headers', async () => {
    // 400 calls written at once reach the server in a few reads: each read reports more events
    // (about ten fields a call) than one batch holds (1024 fields), and the answers' closes
    // follow in batches too (h2_session.cc, more()). Tags change every call or two, so new
    // header blocks (objects handed over by index) fall in every batch.
    const tags = Array.from({ length: 400 }, (_, i) => `t${Math.floor(i / 2) % 7}`);
    const answers = await Promise.all(tags.map((tag) => request({ ...grpcHeaders, ':path': '/t.S/Tag', 'x-tag': tag }, frame(Buffer.from('x')))));
    expect(answers.map((r) => r.body.subarray(5).toString())).toEqual(tags);
    expect(answers.every((r) => r.trailers['grpc-status'] === '0' && r.body.readUInt32BE(1) === r.body.length - 5)).toBe(true);
  });

  it('keeps answers intact that wait in the socket while the client does not read', async () => {
    // A raw HTTP/2 client opens wide windows, sends 1000 calls of 7000 bytes in one write and
    // stops reading its socket. Each answer leaves in a flush of its own (/t.S/Later), the
    // kernel's buffers fill and the answers queue in the server's socket, where each flush's
    // bytes must stay as they were while the next flush is made (h2-session.ts then gives the
    // next flush a buffer of its own). Then the client reads everything and checks each answer.
    const N = 1000;
    const SIZE = 7000;
    const bodies = Array.from({ length: N }, (_, i) => {
      const b = Buffer.alloc(SIZE, i % 251);
      b.writeUInt32BE(i, 0);
      return b;
    });
    const block = hpackLiterals([
      [':method', 'POST'],
      [':scheme', 'http'],
      [':path', '/t.S/Later'],
      [':authority', 'x'],
      ['content-type', 'application/grpc'],
      ['te', 'trailers'],
    ]);
    const settings = Buffer.alloc(6);
    settings.writeUInt16BE(0x4, 0); // SETTINGS_INITIAL_WINDOW_SIZE
    settings.writeUInt32BE(2 ** 31 - 1, 2);
    const increment = Buffer.alloc(4);
    increment.writeUInt32BE(2 ** 31 - 1 - 65535, 0);
    const wire = [Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), h2Frame(0x4, 0, 0, settings), h2Frame(0x8, 0, 0, increment)];
    for (let i = 0; i < N; i++) {
      wire.push(h2Frame(0x1, 0x4, 2 * i + 1, block), h2Frame(0x0, 0x1, 2 * i + 1, frame(bodies[i]!)));
    }
    const port = (transport.server.address() as AddressInfo).port;
    const socket = net.connect(port, '127.0.0.1');
    socket.pause(); // reads nothing until every answer is out
    const got: Buffer[] = [];
    socket.on('data', (c: Buffer) => got.push(c));
    answered = 0;
    const allAnswered = new Promise<void>((resolve) => (onAnswered = () => answered === N && resolve()));
    socket.write(Buffer.concat(wire));
    await allAnswered;
    // Every answer is written or queued; now read them all.
    const ended = new Map<number, Buffer[]>();
    let done = 0;
    await new Promise<void>((resolve, reject) => {
      let buf = Buffer.alloc(0);
      socket.on('data', () => {
        buf = Buffer.concat([buf, ...got.splice(0)]);
        while (buf.length >= 9) {
          const length = buf.readUIntBE(0, 3);
          if (buf.length < 9 + length) break;
          const [type, flags, stream] = [buf[3]!, buf[4]!, buf.readUInt32BE(5) & 0x7fffffff];
          if (type === 0x0) ended.set(stream, [...(ended.get(stream) ?? []), buf.subarray(9, 9 + length)]);
          if (type === 0x3) reject(new Error(`RST_STREAM on stream ${stream}`));
          if ((type === 0x0 || type === 0x1) && (flags & 0x1) !== 0 && ++done === N) resolve();
          buf = buf.subarray(9 + length);
        }
      });
      socket.resume();
    });
    socket.destroy();
    const wrong = bodies.filter((b, i) => !Buffer.concat(ended.get(2 * i + 1) ?? []).equals(frame(b)));
    expect(wrong.length).toBe(0);
  });

  it('sends an answer larger than one flush whole, paced by the socket', async () => {
    const r = await request({ ...grpcHeaders, ':path': '/t.S/Big' }, frame(Buffer.from('6')));
    expect(r.trailers['grpc-status']).toBe('0');
    expect(r.body.equals(frame(bigAnswer(6)))).toBe(true);
  });

  it('resets a call whose header block is over the bound (128 fields) and keeps the connection', async () => {
    const many: http2.OutgoingHttpHeaders = { ...grpcHeaders };
    for (let i = 0; i < 200; i++) many[`x-field-${i}`] = 'v';
    await expect(request(many, frame(Buffer.from('x')))).rejects.toThrow(/RST_STREAM|stream/i);
    const ok = await request(grpcHeaders, frame(Buffer.from('still here')));
    expect(ok.body).toEqual(frame(Buffer.from('still here')));
  });

  it('closes a connection that does not speak HTTP/2, and serves the next one', async () => {
    const port = (transport.server.address() as AddressInfo).port;
    const closed = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write('POST /t.S/Echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n'));
      let got = '';
      socket.on('data', (c) => (got += c.toString('latin1')));
      socket.on('error', () => {});
      socket.on('close', () => resolve(got));
    });
    expect(closed.startsWith('HTTP/1.1')).toBe(false); // no HTTP/1 answer: the connection is just closed
    const ok = await request(grpcHeaders, frame(Buffer.from('next')));
    expect(ok.body).toEqual(frame(Buffer.from('next')));
  });

  it('frames the answer and sends the status as trailers', async () => {
    const r = await request(grpcHeaders, frame(Buffer.from('ok')));
    expect(r.headers[':status']).toBe(200);
    expect(r.headers['content-type']).toBe('application/grpc+proto');
    expect(r.body).toEqual(frame(Buffer.from('ok')));
    expect(r.trailers['grpc-status']).toBe('0');
  });
});

describe('transport with routes loaded on the first connection', () => {
  const echo: Route = { kind: 'unary', decode: (b) => Buffer.from(b), run: (call: UnaryCall) => call.sendLast(call.request as Buffer) };
  const grpcHeaders = { ':method': 'POST', ':path': '/t.S/Echo', 'content-type': 'application/grpc' };

  /** A transport whose loader waits for `release` (or fails, while `fail` is set); counts its runs. */
  async function lazyTransport(): Promise<{ transport: Transport; port: number; loads: () => number; release: () => void; fail: (on: boolean) => void }> {
    let runs = 0;
    let failing = false;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const transport = createTransport(
      async () => {
        runs++;
        await released;
        if (failing) throw new Error('no descriptors');
        return new Map([['/t.S/Echo', echo]]);
      },
      { maxMessageBytes: 1 << 20, refuseWith: () => undefined },
    );
    await new Promise<void>((r) => transport.server.listen(0, '127.0.0.1', r));
    return { transport, port: (transport.server.address() as AddressInfo).port, loads: () => runs, release, fail: (on) => (failing = on) };
  }

  const call = (session: http2.ClientHttp2Session, path = '/t.S/Echo'): Promise<{ status: string | undefined; body: Buffer }> =>
    new Promise((resolve, reject) => {
      const req = session.request({ ...grpcHeaders, ':path': path });
      let status: string | undefined;
      const chunks: Buffer[] = [];
      const take = (h: http2.IncomingHttpHeaders): void => {
        if (h['grpc-status'] !== undefined) status = String(h['grpc-status']);
      };
      req.on('response', take);
      req.on('trailers', take);
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve({ status, body: Buffer.concat(chunks) }));
      req.on('error', reject);
      req.end(frame(Buffer.from(path)));
    });

  it('holds the calls that arrive while the routes load and answers them in order, loading once', async () => {
    const t = await lazyTransport();
    const session = http2.connect(`http://127.0.0.1:${t.port}`);
    try {
      const first = call(session);
      const second = call(session);
      const unknown = call(session, '/t.S/Nope');
      await new Promise((r) => setTimeout(r, 50));
      expect(t.loads()).toBe(1);
      t.release();
      expect(await first).toEqual({ status: '0', body: frame(Buffer.from('/t.S/Echo')) });
      expect((await second).status).toBe('0');
      expect((await unknown).status).toBe(String(GrpcStatus.UNIMPLEMENTED));
      expect((await call(session)).status).toBe('0');
      expect(t.loads()).toBe(1);
    } finally {
      session.close();
      await t.transport.close(1000);
    }
  });

  it('answers INTERNAL while the routes fail to load, and loads them again on the next call', async () => {
    const t = await lazyTransport();
    t.fail(true);
    t.release();
    const session = http2.connect(`http://127.0.0.1:${t.port}`);
    try {
      expect((await call(session)).status).toBe(String(GrpcStatus.INTERNAL));
      t.fail(false);
      expect((await call(session)).status).toBe('0');
      expect(t.loads()).toBeGreaterThanOrEqual(2);
    } finally {
      session.close();
      await t.transport.close(1000);
    }
  });
});
