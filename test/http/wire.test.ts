/**
 * The HTTP/1.1 connection layer (src/frontends/http/wire) over raw loopback sockets: framing,
 * keep-alive, pipelining, Expect, HEAD, and the requests it must refuse rather than guess at
 * (smuggling shapes, oversized heads, unsupported versions and codings). The server is the real
 * HTTP frontend in front of the protocol test core (test/http/protocol-core.ts).
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer, type HttpServerHandle } from '../../src/frontends/http/server.js';
import { HeadPrefix } from '../../src/frontends/http/wire/head-prefix.js';
import { findHeadEnd, parseRequestHead, WireError } from '../../src/frontends/http/wire/request-head.js';
import { parseResponses, type ParsedResponse as Parsed } from '../helpers/raw-http.js';
import { createProtocolCore } from './protocol-core.js';

let server: HttpServerHandle;

beforeAll(async () => {
  server = await startHttpServer(createProtocolCore(), { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 });
});

afterAll(async () => {
  await server.close();
});

/**
 * Sends `parts` (each written separately, `gapMs` apart) on one connection and collects
 * everything the server writes until it closes the connection or `waitMs` pass.
 */
async function exchange(
  parts: Array<string | Buffer>,
  { gapMs = 0, waitMs = 400, headOnly = new Set<number>() } = {},
): Promise<{ responses: Parsed[]; closed: boolean; raw: Buffer }> {
  const socket = net.connect(server.port, '127.0.0.1');
  const chunks: Buffer[] = [];
  let closed = false;
  socket.on('data', (c) => chunks.push(c));
  const ended = new Promise<void>((resolve) =>
    socket.on('close', () => {
      closed = true;
      resolve();
    }),
  );
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  for (const p of parts) {
    socket.write(p);
    if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
  }
  await Promise.race([ended, new Promise((r) => setTimeout(r, waitMs))]);
  socket.destroy();
  const raw = Buffer.concat(chunks);
  return { responses: parseResponses(raw, headOnly), closed, raw };
}

const infer = (id: string, extra = ''): string => {
  const body = JSON.stringify({ id, inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [7] }] });
  return `POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
};
const idOf = (r: Parsed): string => (JSON.parse(r.body.toString()) as { id: string }).id;

describe('HTTP/1.1 connection layer', () => {
  it('answers pipelined requests in order on one connection', async () => {
    const { responses, closed } = await exchange([infer('a') + infer('b') + 'GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n' + infer('c')]);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect([idOf(responses[0]!), idOf(responses[1]!), idOf(responses[3]!)]).toEqual(['a', 'b', 'c']);
    expect(closed).toBe(false);
  });

  it('gives each infer answer the head its own fields make, whatever answer came before', async () => {
    // Answer heads are kept from one answer to the next of the same lengths and connection form
    // (exchange.ts, answerHead): a run of them on every form must still read field for field.
    const binary = (id: string, extra = ''): string => {
      const body = JSON.stringify({ id, inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [7] }], parameters: { binary_data_output: true } });
      return `POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    };
    const v10 = (req: string) => req.replace(' HTTP/1.1\r\n', ' HTTP/1.0\r\n');
    const runs: Array<[string[], string, string]> = [
      // requests, HTTP version, Connection field expected ('' for none)
      [[infer('a'), infer('a'), infer('bb'), binary('a'), binary('a'), infer('a')], '1.1', ''],
      [[v10(infer('a', 'Connection: keep-alive\r\n')), v10(infer('a', 'Connection: keep-alive\r\n'))], '1.0', 'keep-alive'],
      [[v10(infer('a'))], '1.0', 'close'],
      [[infer('a'), infer('a', 'Connection: close\r\n')], '1.1', 'close'],
    ];
    for (const [requests, version, connection] of runs) {
      const { responses, raw } = await exchange([requests.join('')]);
      expect(responses).toHaveLength(requests.length);
      let expected = '';
      responses.forEach((r, i) => {
        const last = i === responses.length - 1;
        const bin = r.headers['inference-header-content-length'];
        let head = `HTTP/${version} 200 OK\r\n`;
        head +=
          bin === undefined ? 'Content-Type: application/json\r\n' : `Content-Type: application/octet-stream\r\nInference-Header-Content-Length: ${bin}\r\n`;
        head += `Content-Length: ${r.body.length}\r\n`;
        if (connection === 'keep-alive' || (connection === 'close' && last)) head += `Connection: ${connection}\r\n`;
        expected += head + '\r\n' + r.body.toString('latin1');
      });
      expect(raw.toString('latin1')).toBe(expected);
      if (requests.length === 6)
        expect(responses.map((r) => r.headers['inference-header-content-length'] !== undefined)).toEqual([false, false, false, true, true, false]);
    }
  });

  it('reads a head and body that arrive a few bytes at a time', async () => {
    const whole = infer('slow');
    const parts = whole.match(/[\s\S]{1,7}/g)!;
    const { responses } = await exchange(parts, { gapMs: 1, waitMs: 600 });
    expect(responses.map((r) => [r.status, idOf(r)])).toEqual([[200, 'slow']]);
  });

  it('decodes a chunked body with extensions and trailers', async () => {
    const body = JSON.stringify({ id: 'ch', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [1] }] });
    const a = body.slice(0, 10);
    const b = body.slice(10);
    const req =
      'POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n' +
      `${a.length.toString(16)};ext=1\r\n${a}\r\n${b.length.toString(16)}\r\n${b}\r\n0\r\nX-Trailer: t\r\n\r\n`;
    const { responses } = await exchange([req, infer('after')]);
    expect(responses.map((r) => [r.status, idOf(r)])).toEqual([
      [200, 'ch'],
      [200, 'after'],
    ]);
  });

  it('HTTP/1.0 closes after the answer unless the client asks for keep-alive', async () => {
    const plain = await exchange(['GET /v2/health/live HTTP/1.0\r\n\r\n', 'GET /v2/health/live HTTP/1.0\r\n\r\n']);
    expect(plain.responses.map((r) => r.status)).toEqual([200]);
    expect(plain.responses[0]!.headers.connection).toBe('close');
    expect(plain.closed).toBe(true);
    const kept = await exchange(['GET /v2/health/live HTTP/1.0\r\nConnection: keep-alive\r\n\r\n'], { waitMs: 200 });
    expect(kept.responses[0]!.headers.connection).toBe('keep-alive');
    expect(kept.closed).toBe(false);
  });

  it('closes after a request that says Connection: close', async () => {
    const { responses, closed } = await exchange(['GET /v2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' + infer('never')]);
    expect(responses.map((r) => r.status)).toEqual([200]);
    expect(closed).toBe(true);
  });

  it('sends 100 Continue before reading an expected body', async () => {
    const body = JSON.stringify({ id: 'e', inputs: [] });
    const head = `POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`;
    const { responses } = await exchange([head, body], { gapMs: 50 });
    expect(responses.map((r) => r.status)).toEqual([100, 200]);
  });

  it('answers HEAD with headers only', async () => {
    const { responses, closed } = await exchange(['HEAD /v2 HTTP/1.1\r\nHost: x\r\n\r\nGET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n'], {
      headOnly: new Set([0]),
    });
    // 405 for HEAD (GET-only route, as Triton), with a Content-Length but no body bytes: the
    // next response parses right after the head.
    expect(responses.map((r) => r.status)).toEqual([405, 200]);
    expect(Number(responses[0]!.headers['content-length'])).toBeGreaterThan(0);
    expect(closed).toBe(false);
  });

  it('keeps the connection after answering a request whose body it did not need', async () => {
    const body = 'x'.repeat(5000);
    const { responses, closed } = await exchange([`POST /v2/nope HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}` + infer('next')]);
    expect(responses.map((r) => r.status)).toEqual([404, 200]);
    expect(idOf(responses[1]!)).toBe('next');
    expect(closed).toBe(false);
  });

  it('refuses a body over --http-max-input-size and closes', async () => {
    const { responses, closed } = await exchange([`POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\nContent-Length: ${2 << 20}\r\n\r\n{`], {
      waitMs: 600,
    });
    expect(responses.map((r) => r.status)).toEqual([400]);
    expect(responses[0]!.body.toString()).toMatch(/exceeds the maximum allowed value/);
    expect(closed).toBe(true);
  });

  const refused: Array<[string, string, number]> = [
    ['Content-Length with Transfer-Encoding', 'POST /v2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400],
    ['two different Content-Lengths', 'POST /v2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd', 400],
    ['a signed Content-Length', 'POST /v2 HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\nabc', 400],
    ['a coding other than chunked', 'POST /v2 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n', 501],
    ['chunked, then another coding', 'POST /v2 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n', 501],
    ['obsolete line folding', 'GET /v2 HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n', 400],
    ['a space before the colon', 'GET /v2 HTTP/1.1\r\nHost : x\r\n\r\n', 400],
    ['a bare LF line end', 'GET /v2 HTTP/1.1\nHost: x\n\n\r\n\r\n', 400],
    ['a NUL in a field value', 'GET /v2 HTTP/1.1\r\nHost: x\0y\r\n\r\n', 400],
    ['a space in the target', 'GET /v2 x HTTP/1.1\r\n\r\n', 400],
    ['HTTP/2.0 on an HTTP/1 port', 'GET /v2 HTTP/2.0\r\n\r\n', 505],
    ['garbage', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n', 400],
    ['a head over 16 KiB', `GET /v2 HTTP/1.1\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`, 431],
    ['too many header fields', `GET /v2 HTTP/1.1\r\n${'X-A: 1\r\n'.repeat(200)}\r\n`, 431],
    // No CRLF CRLF ever comes: refused as soon as the bytes cannot begin a head.
    ['bare LF line ends only', 'GET /v2 HTTP/1.1\nHost: x\n\n', 400],
    ['a TLS ClientHello', '\x16\x03\x01\x00\xf8\x01\x00\x00\xf4\x03\x03', 400],
    ['a CR without LF', 'GET /v2 HTTP/1.1\r\nHost: x\rX', 400],
  ];
  for (const [what, bytes, status] of refused) {
    it(`answers ${status} and closes on ${what}`, async () => {
      const { responses, closed } = await exchange([bytes], { waitMs: 600 });
      expect(responses.map((r) => r.status)).toEqual([status]);
      expect(responses[0]!.headers.connection).toBe('close');
      expect(closed).toBe(true);
    });
  }

  it('fails the request, not the server, on a malformed chunk', async () => {
    const { responses, closed } = await exchange(
      ['POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n'],
      { waitMs: 600 },
    );
    expect(responses.map((r) => r.status)).toEqual([400]);
    expect(responses[0]!.body.toString()).toMatch(/malformed request body/);
    expect(closed).toBe(true);
    const { responses: after } = await exchange([infer('ok')]);
    expect(after.map((r) => r.status)).toEqual([200]);
  });
});

describe('request head fields', () => {
  const parse = (text: string) => {
    const buf = Buffer.from(text, 'latin1');
    return parseRequestHead(buf, 0, findHeadEnd(buf, 0));
  };

  it('lower-cases names, joins a repeated field with ", " and keeps one of equal Content-Lengths', () => {
    const head = parse('POST /v2/models/m/infer HTTP/1.1\r\nX-Tag: a\r\nContent-Length: 5\r\nx-tag: b \r\nContent-Length: 5\r\nHost: h\r\n\r\n');
    expect({ ...head.headers }).toEqual({ 'x-tag': 'a, b', 'content-length': '5', host: 'h' });
    expect(head.contentLength).toBe(5);
  });

  it("keeps a field named __proto__ as data, not as the record's prototype", () => {
    const head = parse('GET /v2 HTTP/1.1\r\n__proto__: x\r\nconstructor: y\r\n\r\n');
    expect(Object.getPrototypeOf(head.headers)).toBeNull();
    expect(Object.getOwnPropertyDescriptor(head.headers, '__proto__')?.value).toBe('x');
    expect(head.headers.constructor).toBe('y');
  });

  it('lets every prefix of a head the parser accepts through, however it is split', () => {
    const heads = [
      "POST /v2/models/m/infer?x=%20 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nX-Empty:\r\nX-Tab:\ta\tb \r\n!#$%&'*+-.^_`|~0aZ: \xe9\x80\r\n\r\n",
      'GET /\xc3\xa9 HTTP/1.0\r\n\r\n',
    ];
    for (const text of heads) {
      const buf = Buffer.from(text, 'latin1');
      expect(() => parseRequestHead(buf, 0, findHeadEnd(buf, 0))).not.toThrow();
      const check = new HeadPrefix();
      for (let n = 1; n <= buf.length; n++) check.check(buf.subarray(0, n));
      const inTwo = new HeadPrefix();
      inTwo.check(buf.subarray(0, 7));
      inTwo.check(buf);
    }
  });

  it('refuses a head at the first byte that cannot be in one', () => {
    // Each ends with that byte.
    const cases = [
      'GET /v2 HTTP/1.1\n',
      'GET /v2 HTTP/1.1\r\nHost: x\n',
      '\x16',
      ' ',
      'GET  ',
      'GET /v2 HTTP/1.x',
      'GET /v2 HTTP/1.1\r\n ',
      'GET /v2 HTTP/1.1\r\nHost ',
      'GET /v2 HTTP/1.1\r\nX: a\x00',
      'GET /v2 HTTP/1.1\r\n\rX',
    ];
    for (const text of cases) {
      const buf = Buffer.from(text, 'latin1');
      const check = new HeadPrefix();
      check.check(buf.subarray(0, buf.length - 1));
      expect(() => check.check(buf), JSON.stringify(text)).toThrow(WireError);
    }
  });

  it('parses the same head alike however often it is parsed (the optimized parser too)', () => {
    // Two heads in turn, so that every parse misses the memo of the last head and runs the parser.
    const text = 'POST /v2/models/m/infer HTTP/1.1\r\nContent-Type: application/json\r\nConnection: keep-alive\r\nContent-Length: 67\r\n\r\n';
    const other = text.replace('67', '68');
    const first = parse(text);
    const firstOther = parse(other);
    let last = first;
    let lastOther = firstOther;
    for (let i = 0; i < 10_000; i++) {
      last = parse(text);
      lastOther = parse(other);
    }
    expect(last).toEqual(first);
    expect(last.keepAlive).toBe(true);
    expect(lastOther).toEqual({ ...first, headers: { ...first.headers, 'content-length': '68' }, contentLength: 68 });
  });

  it('answers the last head again for the same bytes, and parses any other bytes anew', () => {
    const text = 'POST /v2/models/m/infer HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n';
    const first = parse(text);
    // Equal bytes in another buffer, at another offset: the same object.
    const buf = Buffer.from(`xx${text}`, 'latin1');
    expect(parseRequestHead(buf, 2, findHeadEnd(buf, 2))).toBe(first);
    // One byte different: a new parse, with that byte's meaning.
    const longer = parse(text.replace('Length: 5', 'Length: 6'));
    expect(longer).not.toBe(first);
    expect(longer.contentLength).toBe(6);
    // The same length with a byte no head may have is refused, never answered from the memo.
    expect(() => parse(text.replace('Host: h', 'Host:\x01h'))).toThrow(WireError);
    expect(() => parse(text.replace('HTTP/1.1', 'HTTP/2.1'))).toThrow(WireError);
    // And the head before is still parsed the same after those.
    expect(parse(text)).toEqual(first);
  });
});
