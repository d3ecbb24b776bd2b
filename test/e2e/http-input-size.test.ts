/**
 * `--http-max-input-size` as Triton applies it: the JSON header, a raw binary body and an
 * inflated body count; binary tensor data behind `Inference-Header-Content-Length` does not.
 * What bounds memory instead is the body budget (`--http-max-body-memory`): a body larger
 * than all of it is refused before it is read, and bodies that do not fit at once wait, with
 * their sockets paused, rather than being buffered.
 */
import http from 'node:http';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, pythonResult, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const MIB = 1024 * 1024;
/** The body budget of this server: less than three of the concurrent uploads below. */
const BODY_MEMORY = 128 * MIB;

let server: Tritium;

beforeAll(async () => {
  // The default --http-max-input-size (64 MiB), as in the Triton comparison of the issue.
  server = await startTritium({ repos: [makeRepo(['byte_count'])], args: [`--http-max-body-memory=${BODY_MEMORY}`] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

const URL_PATH = '/v2/models/byte_count/infer';

/** A binary-extension body: JSON header, then DATA's bytes, then MS. */
function binaryBody(bytes: number, ms: number, params: Record<string, string> = {}): { body: Buffer; headerLength: number } {
  const header = Buffer.from(
    JSON.stringify({
      parameters: params,
      inputs: [
        { name: 'DATA', datatype: 'UINT8', shape: [bytes], parameters: { binary_data_size: bytes } },
        { name: 'MS', datatype: 'INT32', shape: [1], parameters: { binary_data_size: 4 } },
      ],
      outputs: [{ name: 'COUNT', parameters: { binary_data: false } }],
    }),
  );
  const data = Buffer.alloc(bytes, 1);
  const msBuf = Buffer.alloc(4);
  msBuf.writeInt32LE(ms);
  return { body: Buffer.concat([header, data, msBuf]), headerLength: header.length };
}

interface Reply {
  status: number;
  text: string;
}

function post(headers: Record<string, string | number>, body?: Buffer): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.httpPort, method: 'POST', path: URL_PATH, headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString() }));
    });
    // The server may answer and close before a refused body is sent: that is the point.
    req.on('error', (err) => (String(err).includes('EPIPE') || String(err).includes('ECONNRESET') ? undefined : reject(err)));
    if (body) req.end(body);
    else req.flushHeaders();
  });
}

function countOf(r: Reply): number {
  expect(r.status, r.text).toBe(200);
  const doc = JSON.parse(r.text) as { outputs: Array<{ name: string; data: number[] }> };
  return doc.outputs.find((o) => o.name === 'COUNT')!.data[0]!;
}

describe('--http-max-input-size and binary tensor data', () => {
  it('serves a 100 MiB binary input through tritonclient (Triton does too)', async () => {
    const res = await pythonResult(
      `import json, numpy as np, tritonclient.http as httpclient\nc = httpclient.InferenceServerClient('127.0.0.1:${server.httpPort}', network_timeout=120)`,
      `data = np.ones(100 * 1024 * 1024, dtype=np.uint8)
a = httpclient.InferInput('DATA', list(data.shape), 'UINT8'); a.set_data_from_numpy(data, binary_data=True)
m = httpclient.InferInput('MS', [1], 'INT32'); m.set_data_from_numpy(np.array([0], dtype=np.int32), binary_data=True)
r = c.infer('byte_count', [a, m])
res['count'] = int(r.as_numpy('COUNT')[0]); res['sum'] = int(r.as_numpy('SUM')[0])`,
    );
    expect(res).toEqual({ count: 100 * MIB, sum: 100 * MIB });
  }, 120_000);

  it('refuses a JSON header over the limit before reading the body', async () => {
    const headerLength = 65 * MIB;
    const r = await post({ 'Content-Type': 'application/octet-stream', 'Content-Length': headerLength + 10, 'Inference-Header-Content-Length': headerLength });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).error).toBe(
      `Request JSON size of ${headerLength} bytes exceeds the maximum allowed value of ${64 * MIB} bytes. Use --http-max-input-size to increase the limit.`,
    );
  });

  it('counts a raw binary body (header length 0) and a plain JSON body whole', async () => {
    for (const headers of [{ 'Inference-Header-Content-Length': 0 }, {}] as Array<Record<string, number>>) {
      const r = await post({ 'Content-Length': 65 * MIB, ...headers });
      expect(r.status).toBe(400);
      expect(JSON.parse(r.text).error).toContain(`Request size of ${65 * MIB} bytes exceeds the maximum allowed value of ${64 * MIB} bytes`);
    }
  });

  it('holds an inflated binary body to the limit', async () => {
    const { body, headerLength } = binaryBody(65 * MIB, 0);
    const r = await post({ 'Content-Encoding': 'gzip', 'Inference-Header-Content-Length': headerLength }, zlib.gzipSync(body, { level: 1 }));
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).error).toContain('Decompressed request size exceeds the maximum allowed value');
  });

  it('refuses a binary body larger than the whole body budget, naming the flag', async () => {
    const r = await post({ 'Content-Length': BODY_MEMORY + 1, 'Inference-Header-Content-Length': 100 });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text).error).toBe(
      `Request size of ${BODY_MEMORY + 1} bytes exceeds the ${BODY_MEMORY} bytes tritium may hold for HTTP request bodies at once. Use --http-max-body-memory to increase it.`,
    );
    // The server goes on serving.
    const small = binaryBody(1000, 0);
    expect(countOf(await post({ 'Inference-Header-Content-Length': small.headerLength }, small.body))).toBe(1000);
  });

  it('makes bodies that do not fit the budget together wait instead of buffering them', async () => {
    // Three 50 MiB uploads against a 128 MiB budget: two fit; the third is not read (its
    // socket is paused, so its upload cannot finish: a socket buffer holds a few MiB) until
    // one of the first two is answered and gives its memory back. Without the budget all three
    // uploads would finish at once, long before the model (1 s per request) answers any.
    const one = binaryBody(50 * MIB, 1000);
    const events: Array<{ what: 'uploaded' | 'answered'; at: bigint }> = [];
    const replies = await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<Reply>((resolve, reject) => {
            const headers = {
              'Content-Type': 'application/octet-stream',
              'Content-Length': one.body.length,
              'Inference-Header-Content-Length': one.headerLength,
            };
            const req = http.request({ host: '127.0.0.1', port: server.httpPort, method: 'POST', path: URL_PATH, headers, agent: false }, (res) => {
              const parts: Buffer[] = [];
              res.on('data', (d: Buffer) => parts.push(d));
              res.on('end', () => {
                events.push({ what: 'answered', at: process.hrtime.bigint() });
                resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString() });
              });
            });
            req.on('error', reject);
            req.on('finish', () => events.push({ what: 'uploaded', at: process.hrtime.bigint() }));
            req.end(one.body);
          }),
      ),
    );
    for (const r of replies) expect(countOf(r)).toBe(50 * MIB);
    const order = events.sort((a, b) => (a.at < b.at ? -1 : 1)).map((e) => e.what);
    // Some upload completed only after a response had come back.
    expect(order.indexOf('answered')).toBeLessThan(order.lastIndexOf('uploaded'));
  }, 60_000);
});
