/**
 * Requests the HTTP frontend can never serve are answered as soon as that is known, not left
 * to the idle timeout (120 s here, the default): bytes that cannot begin an HTTP/1.1 request
 * head (bare-LF line ends, binary, a TLS ClientHello on the plain port) get a 400 at once, and
 * a body larger than all of `--http-max-body-memory` is refused from its head, naming the
 * flag, without being read. Each client keeps its sending side open, so only the server can
 * end the exchange.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseResponses, rawExchange, type RawReply } from '../helpers/raw-http.js';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const MIB = 1024 * 1024;
/** Below the default --http-max-input-size (64 MiB), so the budget is the bound that applies. */
const BODY_MEMORY = 8 * MIB;
const INFER = '/v2/models/add_sub/infer';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['add_sub'])], args: [`--http-max-body-memory=${BODY_MEMORY}`] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

/** The one response of a refused exchange, which the server must have closed. */
function refusal(reply: RawReply): { status: number; headers: Record<string, string>; body: string } {
  expect(reply.closed, `no close; got ${JSON.stringify(reply.bytes.toString('latin1').slice(0, 200))}`).toBe(true);
  const responses = parseResponses(reply.bytes);
  expect(responses.length).toBe(1);
  const r = responses[0]!;
  return { status: r.status, headers: r.headers, body: r.body.toString() };
}

async function stillServes(): Promise<void> {
  const res = await fetch(`${server.http}${INFER}`, {
    method: 'POST',
    body: JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 1, 1, 1] },
      ],
    }),
  });
  expect(res.status).toBe(200);
}

describe('a head that cannot be HTTP/1.1', () => {
  const body = '{"inputs":[]}';
  const cases: Array<[string, string | Buffer]> = [
    ['bare-LF line ends throughout', `POST ${INFER} HTTP/1.1\nHost: x\nContent-Type: application/json\nContent-Length: ${body.length}\n\n${body}`],
    ['a bare LF after the request line only', `GET /v2/health/live HTTP/1.1\nHost: x\r\n`],
    [
      'a TLS ClientHello',
      Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x00, 0xf8, 0x01, 0x00, 0x00, 0xf4, 0x03, 0x03]), Buffer.alloc(32, 0xa5), Buffer.from([0x20])]),
    ],
    ['binary garbage', Buffer.from([0x00, 0xff, 0x13, 0x37, 0x0a, 0x0a, 0x7f, 0x80])],
    ['a control byte in a field value', `GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-A: a\x01b`],
    ['a space before a field name (folding)', `GET /v2/health/live HTTP/1.1\r\nHost: x\r\n folded`],
  ];
  for (const [what, bytes] of cases) {
    it(`is answered 400 with Connection: close at once: ${what}`, async () => {
      const r = refusal(await rawExchange(server.httpPort, [bytes]));
      expect([r.status, r.headers.connection]).toEqual([400, 'close']);
      await stillServes();
    }, 60_000);
  }

  it('a valid head sent a byte at a time is still served', async () => {
    const json = JSON.stringify({
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 1, 1, 1] },
      ],
    });
    const request = `POST ${INFER} HTTP/1.1\r\nHost: x\r\nContent-Length: ${json.length}\r\nConnection: close\r\n\r\n${json}`;
    const reply = await rawExchange(server.httpPort, [...request]);
    expect(reply.closed).toBe(true);
    expect(parseResponses(reply.bytes).map((r) => r.status)).toEqual([200]);
  }, 60_000);
});

describe('a body larger than --http-max-body-memory', () => {
  const overBudget = `Request size of ${BODY_MEMORY + MIB} bytes exceeds the ${BODY_MEMORY} bytes tritium may hold for HTTP request bodies at once. Use --http-max-body-memory to increase it.`;

  it('is refused from its head when it is plain JSON (no Inference-Header-Content-Length), and not read', async () => {
    const head = `POST ${INFER} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${BODY_MEMORY + MIB}\r\n\r\n`;
    const r = refusal(await rawExchange(server.httpPort, [head, '{"inputs":[']));
    expect([r.status, r.headers.connection]).toEqual([400, 'close']);
    expect(JSON.parse(r.body)).toEqual({ error: overBudget });
    await stillServes();
  }, 60_000);

  it('is refused once its chunks pass the budget when it is chunked', async () => {
    const chunk = Buffer.alloc(MIB, 0x20);
    const parts: Array<string | Buffer> = [`POST ${INFER} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`];
    // More than the budget, and never the last chunk: only the server can end this.
    for (let i = 0; i < BODY_MEMORY / MIB + 2; i++) parts.push(`${chunk.length.toString(16)}\r\n`, chunk, '\r\n');
    const r = refusal(await rawExchange(server.httpPort, parts));
    expect([r.status, r.headers.connection]).toEqual([400, 'close']);
    expect(JSON.parse(r.body).error).toMatch(/exceeds the 8388608 bytes tritium may hold for HTTP request bodies at once\. Use --http-max-body-memory/);
    await stillServes();
  }, 60_000);
});
