/**
 * Large outputs requested as JSON (no binary data asked for): one client must not take the
 * server down or hold it. An output past `--http-max-json-output-size` is refused with a clear
 * error naming the binary data extension; a large one under it is streamed a slice at a time,
 * while other requests are answered.
 */
import http from 'node:http';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const MIB = 1024 * 1024;
let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['large_output'])] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

function inferBody(count: number, binary = false): string {
  return JSON.stringify({
    inputs: [{ name: 'COUNT', datatype: 'INT64', shape: [1], data: [count] }],
    outputs: [{ name: 'OUT', parameters: { binary_data: binary } }],
  });
}

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** POSTs `body`; `onHead` runs when the response head arrives, before its body. */
function post(port: number, path: string, body: string, onHead?: () => void, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: 'POST', path, agent: false, headers: { 'Content-Type': 'application/json', ...headers } },
      (res) => {
        onHead?.();
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function getStatus(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

describe('large outputs requested as JSON', () => {
  it('refuses a 1 GiB output with an error that names the binary data extension, and stays up', async () => {
    const reply = await post(server.httpPort, '/v2/models/large_output/infer', inferBody(256 * MIB));
    expect(reply.status).toBe(400);
    const error = JSON.parse(reply.body.toString()).error as string;
    expect(error).toContain("output 'OUT' holds 1073741824 bytes of tensor data");
    expect(error).toContain('binary_data=true');
    expect(error).toContain('--http-max-json-output-size');
    expect(await getStatus(server.httpPort, '/v2/health/ready')).toBe(200);
    expect(server.proc.exitCode).toBeNull();
  }, 180_000);

  it('streams a large output as JSON and answers a health check meanwhile', async () => {
    const count = 6 * MIB; // 24 MiB of INT32, about 50 MiB of JSON text
    let bodyDone = false;
    let answeredDuringBody = 0;
    const reply = await post(server.httpPort, '/v2/models/large_output/infer', inferBody(count), () => {
      // The head is out and the body is being rendered: the loop must still serve others.
      void (async () => {
        while (!bodyDone) {
          const status = await getStatus(server.httpPort, '/v2/health/live');
          if (status === 200 && !bodyDone) answeredDuringBody++;
        }
      })();
    });
    bodyDone = true;
    expect(reply.status).toBe(200);
    expect(reply.headers['transfer-encoding']).toBe('chunked');
    const doc = JSON.parse(reply.body.toString());
    const out = doc.outputs[0];
    expect(out.name).toBe('OUT');
    expect(out.shape).toEqual([count]);
    expect(out.data.length).toBe(count);
    for (let i = 0; i < count; i += 9973) expect(out.data[i]).toBe(i);
    expect(out.data[count - 1]).toBe(count - 1);
    expect(answeredDuringBody).toBeGreaterThan(0);
  }, 180_000);

  it('renders a large JSON output slice by slice into a compressed body', async () => {
    const count = MIB / 2; // 2 MiB of INT32: past the streaming threshold
    const reply = await post(server.httpPort, '/v2/models/large_output/infer', inferBody(count), undefined, { 'Accept-Encoding': 'gzip' });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-encoding']).toBe('gzip');
    expect(Number(reply.headers['content-length'])).toBe(reply.body.length);
    const doc = JSON.parse(zlib.gunzipSync(reply.body).toString());
    expect(doc.outputs[0].data.length).toBe(count);
    expect(doc.outputs[0].data[count - 1]).toBe(count - 1);
  }, 60_000);
});

describe('--http-max-json-output-size', () => {
  let small: Tritium;
  beforeAll(async () => {
    small = await startTritium({ repos: [makeRepo(['large_output'])], args: [`--http-max-json-output-size=${2 * MIB}`] });
  }, 120_000);
  afterAll(async () => {
    await stopAndExpectNoShm(small);
  });

  it('refuses an output past the flag as JSON and serves it as binary data', async () => {
    const count = MIB; // 4 MiB
    const refused = await post(small.httpPort, '/v2/models/large_output/infer', inferBody(count));
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body.toString()).error).toContain(`holds ${4 * MIB} bytes of tensor data, more than the ${2 * MIB} bytes`);
    const binary = await post(small.httpPort, '/v2/models/large_output/infer', inferBody(count, true));
    expect(binary.status).toBe(200);
    const headerLength = Number(binary.headers['inference-header-content-length']);
    const data = binary.body.subarray(headerLength);
    expect(data.length).toBe(4 * MIB);
    expect(data.readInt32LE(4 * (count - 1))).toBe(count - 1);
  }, 60_000);

  it('applies to generate answers, which are JSON only', async () => {
    const refused = await post(small.httpPort, '/v2/models/large_output/generate', JSON.stringify({ COUNT: MIB }));
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body.toString()).error).toContain(`more than the ${2 * MIB} bytes tritium sends as JSON`);
  }, 60_000);
});
