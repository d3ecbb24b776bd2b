/**
 * PROTOCOL-LAYER test of the HTTP frontend: the real server on port 0 in front of a minimal
 * fake ServerCore (test/http/protocol-core.ts: an identity model, a decoupled one, ...).
 * It checks routing, status codes, headers and body framing — not model execution; the
 * end-to-end tests with Python stubs live elsewhere.
 */
import { request as httpRequest, Agent } from 'node:http';
import net from 'node:net';
import { gunzipSync, gzipSync, inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { joinBytesElements, splitBytesElements } from '../../src/core/tensor.js';
import { startHttpServer, type HttpServerHandle } from '../../src/frontends/http/server.js';
import { waitFor } from '../e2e/infer-helpers.js';
import { createProtocolCore, type ProtocolCore } from './protocol-core.js';

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  text: string;
  json: () => unknown;
}

let server: HttpServerHandle;
let core: ProtocolCore;
const agent = new Agent({ keepAlive: true });

function call(method: string, path: string, body?: Buffer | string, headers: Record<string, string | number> = {}, port = server.port): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const b = Buffer.concat(chunks);
        resolve({ status: res.statusCode!, headers: res.headers, body: b, text: b.toString(), json: () => JSON.parse(b.toString()) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const f32 = (...v: number[]) => Buffer.from(new Float32Array(v).buffer);

beforeAll(async () => {
  core = createProtocolCore();
  server = await startHttpServer(core, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 });
});

afterAll(async () => {
  agent.destroy();
  await server.close();
});

describe('health and metadata', () => {
  it('health: 200 empty, 400 empty when not live/ready, 503 JSON while exiting', async () => {
    let r = await call('GET', '/v2/health/live');
    expect([r.status, r.body.length]).toEqual([200, 0]);
    core.ready = false;
    r = await call('GET', '/v2/health/ready');
    expect([r.status, r.body.length]).toEqual([400, 0]);
    core.ready = true;
    core.exiting = true;
    r = await call('GET', '/v2/health/live');
    expect(r.status).toBe(503);
    expect(r.json()).toHaveProperty('error');
    core.exiting = false;
  });

  it('server metadata', async () => {
    const r = await call('GET', '/v2');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.json()).toMatchObject({ name: 'triton', version: '2.99.0' });
  });

  it('model metadata, lookup errors and version parsing', async () => {
    let r = await call('GET', '/v2/models/identity');
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ name: 'identity', versions: ['1'], platform: 'python' });
    r = await call('GET', '/v2/models/identity/versions/1');
    expect(r.status).toBe(200);
    r = await call('GET', '/v2/models/nope');
    expect([r.status, r.json()]).toEqual([404, { error: "Request for unknown model: 'nope' is not found" }]);
    r = await call('GET', '/v2/models/identity/versions/7');
    expect(r.status).toBe(404);
    r = await call('GET', '/v2/models/identity/versions/99999999999999999999');
    expect(r.status).toBe(400);
    expect((r.json() as { error: string }).error).toMatch(/failed to get model version/);
    r = await call('GET', '/v2/models/identity/versions/x');
    expect([r.status, r.json()]).toEqual([404, { error: 'Not Found' }]);
  });

  it('model ready: 200 empty / 400 "Model version not ready" / 404', async () => {
    let r = await call('GET', '/v2/models/identity/ready');
    expect([r.status, r.body.length]).toEqual([200, 0]);
    r = await call('GET', '/v2/models/broken/ready');
    expect([r.status, r.json()]).toEqual([400, { error: 'Model version not ready' }]);
    r = await call('GET', '/v2/models/nope/ready');
    expect(r.status).toBe(404);
  });

  it('model config keeps 64-bit integers exact', async () => {
    const r = await call('GET', '/v2/models/identity/config');
    expect(r.status).toBe(200);
    expect(r.text).toContain('"big_number":9223372036854775807');
  });

  it('odd Expect headers are ignored, 100-continue is honoured', async () => {
    expect((await call('GET', '/v2', undefined, { Expect: 'something' })).status).toBe(200);
    const r = await call('POST', '/v2/models/identity/infer', '{"inputs":[]}', { Expect: '100-continue' });
    expect(r.status).toBe(200);
  });

  it('404 and 405 bodies', async () => {
    let r = await call('GET', '/v2/nothing');
    expect([r.status, r.json()]).toEqual([404, { error: 'Not Found' }]);
    r = await call('GET', '/v2/models/identity/infer');
    expect([r.status, r.json()]).toEqual([405, { error: 'Method Not Allowed' }]);
    r = await call('POST', '/v2/health/live');
    expect(r.status).toBe(405);
    r = await call('HEAD', '/v2');
    expect(r.status).toBe(405);
  });
});

describe('extensions', () => {
  it('statistics: integers, all models and one model', async () => {
    let r = await call('GET', '/v2/models/stats');
    expect(r.status).toBe(200);
    expect(r.text).toContain('"ns":1152921504606846983');
    expect(r.text).toMatch(/^\{"model_stats":\[/);
    r = await call('GET', '/v2/models/identity/versions/1/stats');
    expect((r.json() as { model_stats: Array<{ name: string }> }).model_stats[0]!.name).toBe('identity');
    r = await call('GET', '/v2/models/broken/stats');
    expect([r.status, r.json()]).toEqual([400, { error: "requested model 'broken' is not available" }]);
  });

  it('repository index and refused load/unload', async () => {
    let r = await call('POST', '/v2/repository/index');
    expect(r.status).toBe(200);
    expect((r.json() as unknown[]).length).toBe(3);
    r = await call('POST', '/v2/repository/index', '{"ready":true}');
    expect(r.json()).toEqual([{ name: 'identity', version: '1', state: 'READY' }]);
    // Triton 2.51: TritonJson's own error, 500 (docs/errors.md: jsonValueType); a body that is
    // not an object names nothing and lists everything.
    r = await call('POST', '/v2/repository/index', '{"ready":1}');
    expect([r.status, r.json()]).toEqual([500, { error: 'attempt to access JSON non-boolean as boolean' }]);
    r = await call('POST', '/v2/repository/index', '[1]');
    expect((r.json() as unknown[]).length).toBe(3);
    r = await call('POST', '/v2/repository/models/identity/load');
    expect([r.status, r.json()]).toEqual([503, { error: 'explicit model load / unload is not allowed if polling is enabled' }]);
    r = await call('POST', '/v2/repository/myrepo/models/identity/unload');
    expect(r.status).toBe(501);
  });

  it('shared memory: empty status, register unsupported, unregister no-op', async () => {
    let r = await call('GET', '/v2/systemsharedmemory/status');
    expect([r.status, r.json()]).toEqual([200, []]);
    r = await call('GET', '/v2/cudasharedmemory/region/r0/status');
    expect(r.status).toBe(404);
    expect(r.json()).toEqual({ error: "Unable to find cuda shared memory region: 'r0'" });
    r = await call('POST', '/v2/systemsharedmemory/region/r0/register', '{"key":"/x","offset":0,"byte_size":4}');
    expect(r.status).toBe(501);
    // The same text as gRPC gives (test/grpc/server.test.ts): one core rule for both protocols.
    expect(r.json()).toEqual({ error: "failed to register system shared memory region 'r0': system shared memory is not supported by tritium" });
    r = await call('POST', '/v2/systemsharedmemory/unregister');
    expect(r.status).toBe(200);
    r = await call('POST', '/v2/cudasharedmemory/region/r0/unregister');
    expect(r.status).toBe(200);
  });

  it('logging GET/POST', async () => {
    let r = await call('GET', '/v2/logging');
    expect(r.json()).toEqual({ log_file: '', log_info: true, log_warning: true, log_error: true, log_verbose_level: 0, log_format: 'default' });
    r = await call('POST', '/v2/logging', '{"log_verbose_level":2,"log_info":false,"log_format":"ISO8601"}');
    expect(r.json()).toMatchObject({ log_verbose_level: 2, log_info: false, log_format: 'ISO8601' });
    // Texts and statuses as Triton 2.51 answers them over HTTP (docs/errors.md: logFormatHttp,
    // logFileUpdate, jsonValueType); unknown keys are ignored there too.
    r = await call('POST', '/v2/logging', '{"log_format":"weird"}');
    expect(r.status).toBe(503);
    expect(r.json()).toEqual({ error: 'invalid argument for --log_format, got: weird' });
    r = await call('POST', '/v2/logging', '{"log_file":"/tmp/x.log"}');
    expect(r.status).toBe(501);
    expect(r.json()).toEqual({ error: 'log file location can not be updated through network protocol' });
    r = await call('POST', '/v2/logging', '{"log_info":"yes"}');
    expect(r.status).toBe(500);
    expect(r.json()).toEqual({ error: 'attempt to access JSON non-boolean as boolean' });
    r = await call('POST', '/v2/logging', '{"log_verbose_level":-1}');
    expect(r.json()).toEqual({ error: 'attempt to access JSON non-unsigned-integer as unsigned-integer' });
    r = await call('POST', '/v2/logging', '{"no_such_setting":1,"log_file":null}');
    expect(r.status).toBe(200);
  });

  it('trace settings: off by default; turning tracing on without a trace file is refused as Triton refuses it', async () => {
    let r = await call('GET', '/v2/trace/setting');
    expect((r.json() as { trace_level: string[] }).trace_level).toEqual(['OFF']);
    r = await call('POST', '/v2/models/identity/trace/setting', '{"trace_level":["TIMESTAMPS"]}');
    expect([r.status, r.json()]).toEqual([400, { error: 'Attempting to set invalid trace setting :trace file name is not given' }]);
    r = await call('POST', '/v2/trace/setting', '{"trace_level":["OFF"],"trace_rate":"1"}');
    expect(r.status).toBe(200);
    expect((r.json() as { trace_rate: string }).trace_rate).toBe('1');
    r = await call('POST', '/v2/trace/setting', '{"trace_rate":"abc"}');
    expect([r.status, r.json()]).toEqual([400, { error: "Unable to parse 'trace_rate', got: abc" }]);
    r = await call('POST', '/v2/trace/setting', '{"trace_count":"-5"}');
    expect([r.status, r.json()]).toEqual([400, { error: "Unable to parse 'trace_count'. Expecting value >= -1, got:-5" }]);
    r = await call('POST', '/v2/trace/setting', '{"trace_file":"x"}');
    expect(r.status).toBe(501);
    expect(r.json()).toEqual({ error: 'trace file location can not be updated through network protocol' });
    // Triton 2.51's answer for a model it cannot find, on both protocols.
    r = await call('GET', '/v2/models/nomodel/trace/setting');
    expect([r.status, r.json()]).toEqual([400, { error: 'Request for unknown model : nomodel' }]);
  });

  it('generate endpoints: JSON and server-sent events (end to end in test/e2e/generate.test.ts)', async () => {
    const body = '{"INPUT0":[1,2.5],"INPUT1":"hi","id":"g1"}';
    let r = await call('POST', '/v2/models/identity/generate', body);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.text).toBe('{"OUTPUT0":[1,2.5],"OUTPUT1":"hi","id":"g1","model_name":"identity","model_version":"1"}');
    r = await call('POST', '/v2/models/identity/generate_stream', body);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(r.text).toBe('data: {"OUTPUT0":[1,2.5],"OUTPUT1":"hi","id":"g1","model_name":"identity","model_version":"1"}\n\n');
    expect((await call('POST', '/v2/models/nope/generate', '{}')).status).toBe(404);
    expect((await call('GET', '/v2/models/identity/generate')).status).toBe(405);
  });
});

describe('infer', () => {
  const jsonRequest = {
    id: 'abc',
    inputs: [
      {
        name: 'INPUT0',
        datatype: 'FP32',
        shape: [2, 2],
        data: [
          [1, 2],
          [3, 4.5],
        ],
      },
      { name: 'INPUT1', datatype: 'BYTES', shape: [2], data: ['a', 'héllo'] },
    ],
  };

  it('pure JSON in, JSON out', async () => {
    const r = await call('POST', '/v2/models/identity/infer', JSON.stringify(jsonRequest));
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['inference-header-content-length']).toBeUndefined();
    expect(r.json()).toEqual({
      id: 'abc',
      model_name: 'identity',
      model_version: '1',
      outputs: [
        { name: 'OUTPUT0', datatype: 'FP32', shape: [2, 2], data: [1, 2, 3, 4.5] },
        { name: 'OUTPUT1', datatype: 'BYTES', shape: [2], data: ['a', 'héllo'] },
      ],
    });
  });

  it('binary in, binary out (tritonclient defaults)', async () => {
    const a = f32(1, 2, 3);
    const b = joinBytesElements(['x', 'yz']);
    const json = Buffer.from(
      JSON.stringify({
        parameters: { binary_data_output: true },
        inputs: [
          { name: 'INPUT0', datatype: 'FP32', shape: [3], parameters: { binary_data_size: a.length } },
          { name: 'INPUT1', datatype: 'BYTES', shape: [2], parameters: { binary_data_size: b.length } },
        ],
      }),
    );
    const released = core.released;
    const r = await call('POST', '/v2/models/identity/infer', Buffer.concat([json, a, b]), {
      'Inference-Header-Content-Length': json.length,
      'Content-Type': 'application/octet-stream',
    });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/octet-stream');
    const hl = Number(r.headers['inference-header-content-length']);
    expect(Number(r.headers['content-length'])).toBe(r.body.length);
    const head = JSON.parse(r.body.subarray(0, hl).toString());
    expect(head.outputs.map((o: { parameters: unknown }) => o.parameters)).toEqual([{ binary_data_size: 12 }, { binary_data_size: b.length }]);
    expect(Buffer.compare(r.body.subarray(hl, hl + 12), a)).toBe(0);
    expect(splitBytesElements(r.body.subarray(hl + 12)).map(String)).toEqual(['x', 'yz']);
    expect(core.released).toBe(released + 1);
  });

  it('chunked and multi-chunk request bodies', async () => {
    const a = f32(...Array.from({ length: 50_000 }, (_, i) => i));
    const json = Buffer.from(
      JSON.stringify({
        parameters: { binary_data_output: true },
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [50_000], parameters: { binary_data_size: a.length } }],
      }),
    );
    const whole = Buffer.concat([json, a]);
    for (const chunked of [true, false]) {
      const r = await new Promise<{ status: number; body: Buffer; hl: number }>((resolve, reject) => {
        const headers: Record<string, string | number> = { 'Inference-Header-Content-Length': json.length };
        if (!chunked) headers['Content-Length'] = whole.length;
        const req = httpRequest({ host: '127.0.0.1', port: server.port, method: 'POST', path: '/v2/models/identity/infer', headers, agent }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks), hl: Number(res.headers['inference-header-content-length']) }));
        });
        req.on('error', reject);
        // Several writes: the body reaches the server in several chunks.
        for (let off = 0; off < whole.length; off += 7000) req.write(whole.subarray(off, off + 7000));
        req.end();
      });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body.subarray(0, r.hl).toString()).outputs[0].shape).toEqual([50_000]);
      expect(Buffer.compare(r.body.subarray(r.hl), a)).toBe(0);
    }
  });

  it('raw binary body (Inference-Header-Content-Length: 0)', async () => {
    const r = await call('POST', '/v2/models/single/infer', f32(5, 6), { 'Inference-Header-Content-Length': 0 });
    expect(r.status).toBe(200);
    const hl = Number(r.headers['inference-header-content-length']);
    expect(JSON.parse(r.body.subarray(0, hl).toString()).outputs[0]).toEqual({
      name: 'OUTPUT0',
      datatype: 'FP32',
      shape: [2],
      parameters: { binary_data_size: 8 },
    });
    expect(Buffer.compare(r.body.subarray(hl), f32(5, 6))).toBe(0);
    expect(core.seen.at(-1)!.inputs[0]!.shape).toEqual([2]);
  });

  it('gzip and deflate request bodies; gzip/deflate responses per Accept-Encoding', async () => {
    const body = gzipSync(JSON.stringify(jsonRequest));
    let r = await call('POST', '/v2/models/identity/infer', body, { 'Content-Encoding': 'gzip', 'Accept-Encoding': 'gzip' });
    expect(r.status).toBe(200);
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(r.body).toString()).id).toBe('abc');

    const a = f32(7);
    const json = Buffer.from(
      JSON.stringify({
        inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1], parameters: { binary_data_size: 4 } }],
        outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
      }),
    );
    r = await call('POST', '/v2/models/identity/infer', Buffer.concat([json, a]), {
      'Inference-Header-Content-Length': json.length,
      'Accept-Encoding': 'gzip;q=0.1, deflate;q=0.9',
    });
    expect(r.headers['content-encoding']).toBe('deflate');
    const plain = inflateSync(r.body);
    const hl = Number(r.headers['inference-header-content-length']);
    expect(JSON.parse(plain.subarray(0, hl).toString()).outputs[0].parameters.binary_data_size).toBe(4);
    expect(Buffer.compare(plain.subarray(hl), a)).toBe(0);
  });

  it('unsupported Content-Encoding → 501 with Accept-Encoding', async () => {
    const r = await call('POST', '/v2/models/identity/infer', '{}', { 'Content-Encoding': 'br' });
    expect([r.status, r.json()]).toEqual([501, { error: 'Unsupported compression type' }]);
    expect(r.headers['accept-encoding']).toBe('gzip, deflate');
  });

  it('body over --http-max-input-size → 400', async () => {
    const r = await call('POST', '/v2/models/identity/infer', Buffer.alloc((1 << 20) + 1));
    expect(r.status).toBe(400);
    expect((r.json() as { error: string }).error).toMatch(/--http-max-input-size/);
    const bomb = gzipSync(Buffer.alloc(4 << 20));
    const r2 = await call('POST', '/v2/models/identity/infer', bomb, { 'Content-Encoding': 'gzip' });
    expect(r2.status).toBe(400);
    expect((r2.json() as { error: string }).error).toMatch(/--http-max-input-size/);
  });

  it('decoupled models are refused with 501', async () => {
    const r = await call('POST', '/v2/models/decoupled/infer', '{"inputs":[]}');
    expect([r.status, r.json()]).toEqual([501, { error: "HTTP end point doesn't support models with decoupled transaction policy" }]);
  });

  it('request errors → 400, model errors → 500, unknown model → 404', async () => {
    let r = await call('POST', '/v2/models/identity/infer', '{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1]}]}');
    expect(r.status).toBe(400);
    r = await call('POST', '/v2/models/identity/infer', '{"parameters":{"triton_x":1},"inputs":[]}');
    expect(r.status).toBe(400);
    r = await call('POST', '/v2/models/identity/infer', '{"parameters":{"fail":"boom"},"inputs":[]}');
    expect([r.status, r.json()]).toEqual([500, { error: 'boom' }]);
    r = await call('POST', '/v2/models/nope/infer', '{"inputs":[]}');
    expect(r.status).toBe(404);
    r = await call('POST', '/v2/models/identity/infer', 'not json');
    expect(r.status).toBe(400);
    expect((r.json() as { error: string }).error).toMatch(/^failed to parse the request JSON buffer/);
  });

  it('passes request parameters through and returns response parameters', async () => {
    const r = await call(
      'POST',
      '/v2/models/identity/infer',
      '{"parameters":{"echo_params":true,"priority":1,"custom":"v","seq":18446744073709551615},"inputs":[]}',
    );
    expect(r.status).toBe(200);
    expect(r.text).toContain('"parameters":{"priority":1,"custom":"v","seq":18446744073709551615}');
    expect(core.seen.at(-1)!.parameters.seq).toBe(2n ** 64n - 1n);
  });

  it('a client that resets its connection aborts the request signal', async () => {
    // A reset, not a FIN: a FIN after a whole request is a half-close, and the request is
    // answered (test/e2e/http-half-close.test.ts).
    const before = core.aborted;
    const seen = core.seen.length;
    const body = '{"parameters":{"delay_ms":10000},"inputs":[]}';
    const socket = net.connect(server.port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(`POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await waitFor('the request at the core', () => core.seen.length > seen);
    socket.resetAndDestroy();
    await waitFor('the request signal aborted', () => core.aborted === before + 1);
  });

  it('handles concurrent requests on pooled connections', async () => {
    const replies = await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        call('POST', '/v2/models/identity/infer', JSON.stringify({ id: String(i), inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1], data: [i] }] })),
      ),
    );
    replies.forEach((r, i) => expect((r.json() as { id: string; outputs: Array<{ data: number[] }> }).outputs[0]!.data).toEqual([i]));
  });
});

describe('close()', () => {
  it('lets an in-flight request finish, then stops', async () => {
    const c = createProtocolCore();
    const s = await startHttpServer(c, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 });
    const pending = call('POST', '/v2/models/identity/infer', '{"parameters":{"delay_ms":100},"inputs":[]}', {}, s.port);
    await new Promise((r) => setTimeout(r, 30));
    const closed = s.close();
    const r = await pending;
    expect(r.status).toBe(200);
    await closed;
    await expect(call('GET', '/v2', undefined, {}, s.port)).rejects.toThrow();
  });
});
