/**
 * The HTTP/2 session (native/src/h2_session.cc under src/frontends/grpc/transport) fed damaged
 * connections: fast-check builds each from frames a client may or may not send — gRPC calls
 * (unary, streaming, unknown paths, bodies of any bytes, HPACK blocks of random bytes, a header
 * block split by CONTINUATION or left unfinished), DATA, SETTINGS, WINDOW_UPDATE (increments of
 * 0 and beyond the window included), PING, RST_STREAM, PRIORITY, GOAWAY, PUSH_PROMISE and
 * unknown frame types on any stream id, a declared length that is not the payload's — then
 * flips and cuts bytes, damages the preface now and then, and writes the result in pieces. Each
 * connection ends with a PING the server answers once it has read everything before it (or the
 * server closes the connection first); the client then goes away, sometimes without waiting.
 *
 * Nothing may throw (an uncaught error or an unhandled 'error' event fails the run); when every
 * client is gone no call is left open and no connection remains; and a valid call still works.
 * grpc-fuzz.test.ts does the same one level up, with well-framed HTTP/2 carrying bad gRPC
 * requests to the real server.
 */
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DuplexCall, UnaryCall } from '../../src/frontends/grpc/transport/call.js';
import { createTransport, type Route, type Transport } from '../../src/frontends/grpc/transport/http2-server.js';
import { frameMessage, h2Frame, hpackLiterals } from '../helpers/grpc-raw.js';

// H2_FUZZ_RUNS and H2_FUZZ_DEADLINE_MS make a longer hunt (20 000 connections take about 8 s).
const RUNS = Number(process.env.H2_FUZZ_RUNS ?? 2000);
/** A connection the server neither answers nor closes within this long fails its run. */
const CONNECTION_DEADLINE_MS = Number(process.env.H2_FUZZ_DEADLINE_MS ?? 10_000);

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const PING_MARK = Buffer.from('fuzzdone');
/** The connection's last frame, a PING the server answers once it has read everything before it. */
const FINAL_PING = h2Frame(0x6, 0, 0, PING_MARK);

// ---------------------------------------------------------------------------------------------
// Generators.

const streamId = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(1, 3, 5, 7) },
  { weight: 1, arbitrary: fc.constantFrom(0, 2, 4, 0x7fffffff, 0x80000001) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 0x7fffffff }) },
);
const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a));
const path = fc.constantFrom('/t.S/Echo', '/t.S/Later', '/t.S/Chat', '/t.S/Nope', '', '/', 'x');

/** Mostly `usual`, now and then one of `odd`. */
const mostly = <T>(usual: T, ...odd: T[]) => fc.oneof({ weight: 5, arbitrary: fc.constant(usual) }, { weight: 1, arbitrary: fc.constantFrom(...odd) });

/** A gRPC call, mostly a valid one: its header block (maybe split or unfinished) and its DATA. */
const callSpec = fc.record({
  stream: streamId,
  path: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('/t.S/Echo', '/t.S/Later', '/t.S/Chat') }, { weight: 1, arbitrary: path }),
  method: mostly('POST', 'GET', ''),
  contentType: mostly('application/grpc', 'application/grpc+proto', 'text/plain', ''),
  extra: fc.array(fc.tuple(fc.constantFrom('grpc-timeout', 'grpc-encoding', 'te', 'x-a', ':status', 'Upper'), fc.string({ maxLength: 8 })), {
    maxLength: 2,
  }),
  split: fc.constantFrom('whole', 'whole', 'whole', 'continued', 'unfinished'),
  body: fc.oneof(
    { weight: 4, arbitrary: bytes(40).map((b) => frameMessage(b)) },
    { weight: 1, arbitrary: bytes(40) }, // not a length-prefixed message at all
    {
      weight: 1,
      arbitrary: fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), bytes(12)).map(([n, b]) => {
        const m = frameMessage(b);
        m.writeUInt32BE(n, 1); // a prefix that lies about the length
        return m;
      }),
    },
  ),
  dataFrames: fc.oneof({ weight: 4, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 3 }) }),
  endStream: mostly('on data', 'on headers', 'never'),
  padded: fc.boolean(),
});
type CallSpec = typeof callSpec extends fc.Arbitrary<infer T> ? T : never;

/** The frames of a call. */
function callFrames(c: CallSpec): Buffer {
  const fields: [string, string][] = [
    [':method', c.method],
    [':scheme', 'http'],
    [':path', c.path],
    [':authority', 'x'],
    ['content-type', c.contentType],
    ...c.extra,
  ];
  const block = hpackLiterals(fields);
  const out: Buffer[] = [];
  const endHeaders = c.split === 'whole' ? 0x4 : 0;
  const headersEnd = c.endStream === 'on headers' ? 0x1 : 0;
  if (c.split === 'continued') {
    const cut = block.length >> 1;
    out.push(h2Frame(0x1, headersEnd, c.stream, block.subarray(0, cut)), h2Frame(0x9, 0x4, c.stream, block.subarray(cut)));
  } else {
    out.push(h2Frame(0x1, endHeaders | headersEnd, c.stream, block));
  }
  for (let i = 0; i < c.dataFrames; i++) {
    const last = i === c.dataFrames - 1 && c.endStream === 'on data';
    const chunk = c.body.subarray(Math.floor((i * c.body.length) / c.dataFrames), Math.floor(((i + 1) * c.body.length) / c.dataFrames));
    // PADDED: a pad-length byte, the data, then that many zero bytes (the pad may lie too).
    const payload = c.padded ? Buffer.concat([Buffer.from([3]), chunk, Buffer.alloc(3)]) : chunk;
    out.push(h2Frame(0x0, (last ? 0x1 : 0) | (c.padded ? 0x8 : 0), c.stream, payload));
  }
  return Buffer.concat(out);
}

const call = callSpec.map(callFrames);

/** Calls as a conforming client opens them: rising odd stream ids, each header block finished. */
const conformingCalls = (max: number) =>
  fc
    .array(callSpec, { minLength: 1, maxLength: max })
    .map((calls) => calls.map((c, i) => callFrames({ ...c, stream: 2 * i + 1, split: c.split === 'unfinished' ? 'whole' : c.split })));

/** Any frame: any type (the ten of RFC 9113 and unknown ones), flags, stream and payload. */
const anyFrame = fc
  .record({
    type: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 9 }) }, { weight: 1, arbitrary: fc.integer({ min: 10, max: 255 }) }),
    flags: fc.oneof(fc.constantFrom(0, 0x1, 0x4, 0x5, 0x8, 0x20), fc.integer({ min: 0, max: 255 })),
    stream: streamId,
    payload: bytes(48),
    lie: fc.oneof({ weight: 8, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: -8, max: 64 }) }),
  })
  .map((f) => h2Frame(f.type, f.flags, f.stream, f.payload, Math.max(0, f.payload.length + f.lie)));

/** Frames with well-formed payloads and values at their edges. */
const controlFrame = fc.oneof(
  fc
    .array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.constantFrom(0, 1, 2, 16383, 16384, 65535, 2 ** 24, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1)), {
      maxLength: 4,
    })
    .map((params) => {
      const p = Buffer.alloc(6 * params.length);
      params.forEach(([id, v], i) => {
        p.writeUInt16BE(id, 6 * i);
        p.writeUInt32BE(v, 6 * i + 2);
      });
      return h2Frame(0x4, 0, 0, p);
    }),
  fc.constant(h2Frame(0x4, 0x1, 0, Buffer.alloc(0))), // SETTINGS ACK nobody asked for
  fc.tuple(streamId, fc.constantFrom(0, 1, 65535, 2 ** 31 - 1)).map(([s, inc]) => {
    const p = Buffer.alloc(4);
    p.writeUInt32BE(inc, 0);
    return h2Frame(0x8, 0, s, p);
  }),
  fc.tuple(streamId, fc.integer({ min: 0, max: 14 })).map(([s, code]) => {
    const p = Buffer.alloc(4);
    p.writeUInt32BE(code, 0);
    return h2Frame(0x3, 0, s, p);
  }),
  fc.tuple(fc.constantFrom(0, 0x1), bytes(8)).map(([flags, b]) => h2Frame(0x6, flags, 0, Buffer.concat([b, Buffer.alloc(8 - b.length)]))),
  fc.tuple(streamId, streamId, fc.boolean()).map(([s, dep, excl]) => {
    const p = Buffer.alloc(5);
    p.writeUInt32BE(((excl ? 0x80000000 : 0) | dep) >>> 0, 0);
    p[4] = 16;
    return h2Frame(0x2, 0, s, p);
  }),
  fc.tuple(streamId, fc.integer({ min: 0, max: 14 })).map(([last, code]) => {
    const p = Buffer.alloc(8);
    p.writeUInt32BE(last >>> 0, 0);
    p.writeUInt32BE(code, 4);
    return h2Frame(0x7, 0, 0, p);
  }),
);

/** How a connection's bytes are damaged after they are built. */
interface Damage {
  preface: 'good' | 'flipped' | 'missing';
  settingsFirst: boolean;
  /** [position, xor mask] */
  flips: [number, number][];
  cutAt: number | null;
  /** Where the bytes are cut into writes. */
  pieces: number[];
  leave: 'after the answer' | 'at once';
}

const damage: fc.Arbitrary<Damage> = fc.record({
  preface: fc.constantFrom('good', 'good', 'good', 'good', 'flipped', 'missing'),
  settingsFirst: fc.constantFrom(true, true, true, false),
  flips: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { maxLength: 3 }),
  cutAt: fc.option(fc.nat(), { freq: 6 }),
  pieces: fc.array(fc.nat(), { maxLength: 3 }),
  leave: fc.constantFrom('after the answer', 'after the answer', 'after the answer', 'at once'),
});

const undamaged = fc.constant<Damage>({ preface: 'good', settingsFirst: true, flips: [], cutAt: null, pieces: [], leave: 'after the answer' });

/**
 * A connection: a third conforming gRPC calls (undamaged or damaged), a third such calls with
 * control frames after them, a third anything.
 */
const connection: fc.Arbitrary<Connection> = fc.oneof(
  fc.record({ frames: conformingCalls(8), damage: fc.oneof(undamaged, damage) }),
  fc.record({
    frames: fc.tuple(conformingCalls(6), fc.array(controlFrame, { maxLength: 4 })).map(([calls, control]) => [...calls, ...control]),
    damage: undamaged,
  }),
  fc.record({
    frames: fc.array(fc.oneof({ weight: 4, arbitrary: call }, { weight: 2, arbitrary: controlFrame }, { weight: 2, arbitrary: anyFrame }), {
      minLength: 1,
      maxLength: 12,
    }),
    damage,
  }),
);

interface Connection {
  frames: Buffer[];
  damage: Damage;
}

// ---------------------------------------------------------------------------------------------

describe('HTTP/2 session under damaged connections', () => {
  let transport: Transport;
  let port: number;
  /** Calls that reached their handler. */
  let handled = 0;

  const routes = new Map<string, Route>([
    [
      '/t.S/Echo',
      {
        kind: 'unary',
        decode: (b) => Buffer.from(b),
        run: (c: UnaryCall) => {
          handled++;
          c.sendLast(c.request as Buffer);
        },
      },
    ],
    // Answers a turn later, after the connection may be gone.
    [
      '/t.S/Later',
      {
        kind: 'unary',
        decode: (b) => Buffer.from(b),
        run: (c: UnaryCall) => {
          handled++;
          setImmediate(() => c.sendLast(c.request as Buffer));
        },
      },
    ],
    [
      '/t.S/Chat',
      {
        kind: 'bidi',
        decode: (b) => Buffer.from(b),
        run: (c: DuplexCall) => {
          handled++;
          c.on('data', (m: unknown) => c.write(m as Buffer));
          c.on('end', () => c.end());
        },
      },
    ],
  ]);

  beforeAll(async () => {
    transport = createTransport(routes, { maxMessageBytes: 1 << 10, refuseWith: () => undefined, maxConcurrentStreams: 8 });
    await new Promise<void>((r) => transport.server.listen(0, '127.0.0.1', r));
    port = (transport.server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await transport?.close(1000);
  });

  /** The connection's bytes: preface, SETTINGS, the frames, the final PING; then the damage. */
  function wire(c: Connection): { bytes: Buffer; intact: boolean } {
    const d = c.damage;
    const preface = d.preface === 'missing' ? Buffer.alloc(0) : Buffer.from(PREFACE);
    if (d.preface === 'flipped') preface[5] ^= 0x20;
    const parts: Buffer[] = [preface];
    if (d.settingsFirst) parts.push(h2Frame(0x4, 0, 0, Buffer.alloc(0)));
    parts.push(...c.frames, FINAL_PING);
    const bytes = Buffer.concat(parts);
    const after = PREFACE.length; // flips land after the preface: its damage is the option above
    for (const [at, x] of d.flips) if (bytes.length > after) bytes[after + (at % (bytes.length - after))] ^= x;
    const cut = d.cutAt === null ? bytes.length : d.cutAt % bytes.length;
    const sent = bytes.subarray(0, cut);
    return { bytes: sent, intact: d.preface === 'good' && endsWithPing(sent.subarray(PREFACE.length)) };
  }

  /**
   * Whether the frames, cut as the server cuts them (by their declared lengths), end exactly
   * with the final PING, undamaged: else (a cut, or a length that lies) the server may rightly wait for
   * the rest of a frame, and the client half-closes instead of waiting for the answer.
   */
  function endsWithPing(frames: Buffer): boolean {
    let at = 0;
    let last = -1;
    while (frames.length - at >= 9) {
      last = at;
      at += 9 + frames.readUIntBE(at, 3);
    }
    return at === frames.length && last >= 0 && frames.subarray(last).equals(FINAL_PING);
  }

  /** Sends one connection; resolves once the server answered the final PING or closed, and the socket is gone. */
  function run(c: Connection): Promise<{ answeredPing: boolean; closedByServer: boolean }> {
    const { bytes, intact } = wire(c);
    const cuts = [...new Set(c.damage.pieces.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b);
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      let got = Buffer.alloc(0);
      let answeredPing = false;
      let closedByServer = false;
      let leaving = false;
      const deadline = setTimeout(() => {
        socket.destroy();
        reject(new Error(`the server neither answered nor closed within ${CONNECTION_DEADLINE_MS} ms`));
      }, CONNECTION_DEADLINE_MS);
      const leave = (): void => {
        if (leaving) return;
        leaving = true;
        socket.destroy();
      };
      socket.on('error', () => {}); // a reset by the server is one of the outcomes
      socket.on('data', (chunk: Buffer) => {
        got = Buffer.concat([got, chunk]);
        // Frames the server sent: look for the PING ACK carrying our mark.
        let at = 0;
        while (got.length - at >= 9) {
          const length = got.readUIntBE(at, 3);
          if (got.length - at < 9 + length) break;
          if (got[at + 3] === 0x6 && (got[at + 4]! & 0x1) !== 0 && got.subarray(at + 9, at + 9 + length).equals(PING_MARK)) answeredPing = true;
          at += 9 + length;
        }
        got = got.subarray(at);
        if (answeredPing) leave();
      });
      socket.on('end', () => {
        closedByServer = !leaving;
        leave();
      });
      socket.on('close', () => {
        clearTimeout(deadline);
        resolve({ answeredPing, closedByServer });
      });
      socket.on('connect', () => {
        void (async () => {
          let from = 0;
          for (const to of [...cuts, bytes.length]) {
            if (socket.destroyed) return;
            socket.write(bytes.subarray(from, to));
            from = to;
            await new Promise((r) => setImmediate(r));
          }
          if (c.damage.leave === 'at once') leave();
          // The server may rightly wait for the rest of a frame: half-close, and it must close.
          else if (!intact) socket.end();
        })();
      });
    });
  }

  /** Resolves once `done()` holds; fails after `ms`. */
  async function until(done: () => Promise<boolean>, ms: number, what: string): Promise<void> {
    const end = Date.now() + ms;
    while (!(await done())) {
      if (Date.now() > end) throw new Error(`still ${what} after ${ms} ms`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  const connections = (): Promise<number> => new Promise((resolve, reject) => transport.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));

  it(`${RUNS} damaged connections: none throws or hangs; no call or connection is left; a valid call still works`, async () => {
    let answered = 0;
    let closed = 0;
    await fc.assert(
      fc.asyncProperty(connection, async (c) => {
        const r = await run(c);
        if (r.answeredPing) answered++;
        if (r.closedByServer) closed++;
      }),
      { numRuns: RUNS },
    );
    // Both outcomes occurred: the generators reach the session's answer path and its refusals.
    expect(answered).toBeGreaterThan(RUNS / 10);
    expect(closed).toBeGreaterThan(RUNS / 10);
    expect(handled).toBeGreaterThan(RUNS / 4);

    await until(async () => transport.active === 0, 5000, 'a call open');
    await until(async () => (await connections()) === 0, 5000, 'a connection open');

    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const body = await new Promise<Buffer>((resolve, reject) => {
        const req = session.request({ ':method': 'POST', ':path': '/t.S/Echo', 'content-type': 'application/grpc' });
        const chunks: Buffer[] = [];
        req.on('data', (b: Buffer) => chunks.push(b));
        req.on('end', () => resolve(Buffer.concat(chunks)));
        req.on('error', reject);
        req.end(frameMessage(Buffer.from('still here')));
      });
      expect(body).toEqual(frameMessage(Buffer.from('still here')));
    } finally {
      session.close();
    }
  }, 180_000);
});
