/**
 * A client that shuts down its sending side (FIN) once its requests are out still gets every
 * answer, in order, and no interim response it did not ask for; the connection closes after
 * the last. A client that half-closes in the middle of a body is gone. (A client that resets
 * the connection is found out and its request cancelled: test/http/server.test.ts, "a client
 * that disconnects aborts the request signal".)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseResponses, rawExchange } from '../helpers/raw-http.js';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['slow_execute', 'add_sub'])] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

/** Writes `request`, half-closes, and collects what the server sends until it closes. */
async function sendAndHalfClose(request: string): Promise<string> {
  const reply = await rawExchange(server.httpPort, [request], { halfClose: true });
  expect(reply.closed).toBe(true);
  return reply.bytes.toString('latin1');
}

/** An add_sub request whose OUTPUT0 is [x + 1, x + 2, x + 3, x + 4]. */
function addSub(x: number): string {
  const body = JSON.stringify({
    inputs: [
      { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [x, x, x, x] },
      { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
    ],
    outputs: [{ name: 'OUTPUT0' }],
  });
  return `POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

const output0 = (body: Buffer): number[] => (JSON.parse(body.toString()) as { outputs: Array<{ data: number[] }> }).outputs[0]!.data;

describe('HTTP half-close', () => {
  it('answers a whole request sent before the FIN, while the model is still working', async () => {
    const body = JSON.stringify({
      inputs: [
        { name: 'MS', datatype: 'INT32', shape: [1], data: [300] },
        { name: 'VALUE', datatype: 'INT32', shape: [1], data: [41] },
      ],
    });
    const request = `POST /v2/models/slow_execute/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const got = await sendAndHalfClose(request);
    // The answer and nothing before it: no interim 100 the client did not ask for.
    expect(got.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
    expect(got).toContain('"data":[42]');
  }, 30_000);

  it('answers every pipelined request sent before the FIN, in order, then closes', async () => {
    const reply = await rawExchange(server.httpPort, [[1, 10, 100, 1000].map(addSub).join('')], { halfClose: true });
    expect(reply.closed).toBe(true);
    const responses = parseResponses(reply.bytes);
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(responses.map((r) => output0(r.body))).toEqual([
      [2, 3, 4, 5],
      [11, 12, 13, 14],
      [101, 102, 103, 104],
      [1001, 1002, 1003, 1004],
    ]);
    // No more requests can come: the last answer says the connection closes.
    expect(responses.map((r) => r.headers.connection)).toEqual([undefined, undefined, undefined, 'close']);
  }, 30_000);

  it('answers the whole requests before a FIN and closes on the one cut short', async () => {
    const cut = addSub(5);
    const reply = await rawExchange(server.httpPort, [addSub(1) + addSub(2) + cut.slice(0, cut.length - 10)], { halfClose: true });
    expect(reply.closed).toBe(true);
    const responses = parseResponses(reply.bytes);
    expect(responses.map((r) => [r.status, output0(r.body)])).toEqual([
      [200, [2, 3, 4, 5]],
      [200, [3, 4, 5, 6]],
    ]);
  }, 30_000);

  it('closes a connection whose client half-closed in the middle of a body', async () => {
    const request = 'POST /v2/models/slow_execute/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"inputs":';
    expect(await sendAndHalfClose(request)).toBe('');
    // The server goes on serving.
    const res = await fetch(`${server.http}/v2/health/live`);
    expect(res.status).toBe(200);
  }, 30_000);
});
