/**
 * A large JSON request must not hold the server: its body is parsed on a worker thread
 * (src/frontends/http/json-parse-worker.ts), so health checks are answered while it is parsed,
 * and its answer and its errors are those of the event-loop parser.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['byte_count'])] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

/** A JSON body of about 2 × `count` bytes: DATA = [1, 2, 3, 1, 2, 3, ...] (`count` elements). */
function bigJson(count: number, last?: string): Buffer {
  const head = '{"inputs":[{"name":"MS","datatype":"INT32","shape":[1],"data":[0]},{"name":"DATA","datatype":"UINT8","shape":[' + count + '],"data":[';
  const parts: string[] = [];
  for (let i = 0; i < count; i++) parts.push(String((i % 3) + 1));
  if (last !== undefined) parts[count - 1] = last;
  return Buffer.from(head + parts.join(',') + ']}]}');
}

function post(body: Buffer, onSent: () => void): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: server.httpPort,
        method: 'POST',
        path: '/v2/models/byte_count/infer',
        agent: false,
        headers: { 'Content-Length': body.length },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body, onSent);
  });
}

async function healthDuring(pending: { done: boolean }): Promise<number> {
  let answered = 0;
  while (!pending.done) {
    const res = await fetch(`${server.http}/v2/health/live`);
    if (res.status === 200 && !pending.done) answered++;
  }
  return answered;
}

describe('a large JSON request', () => {
  it('is answered, and health checks are answered while it is parsed', async () => {
    const count = 25_000_000; // about 50 MiB of JSON, under the default --http-max-input-size
    const body = bigJson(count);
    const pending = { done: false };
    let health: Promise<number> | undefined;
    const reply = await post(body, () => {
      health = healthDuring(pending); // the body is out: the server is parsing it now
    }).finally(() => (pending.done = true));
    expect(reply.status).toBe(200);
    const outputs = JSON.parse(reply.text).outputs as Array<{ name: string; data: number[] }>;
    expect(outputs.find((o) => o.name === 'COUNT')!.data).toEqual([count]);
    let sum = 0;
    for (let i = 0; i < count; i++) sum += (i % 3) + 1;
    expect(outputs.find((o) => o.name === 'SUM')!.data).toEqual([sum]);
    expect(await health).toBeGreaterThanOrEqual(3);
  }, 180_000);

  it('refuses bad data with the same error as the event-loop parser', async () => {
    const reply = await post(bigJson(1_000_000, '1e20'), () => {});
    expect(reply.status).toBe(500);
    expect(JSON.parse(reply.text)).toEqual({ error: "Unable to parse 'data': attempt to access JSON non-unsigned-integer as unsigned-integer" });
  }, 60_000);
});
