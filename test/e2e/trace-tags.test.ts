/**
 * Debug trace tags (`TRITIUM_TRACE`, src/core/trace-tags.ts) end to end: the real CLI, a real
 * stub serving test/models/batch_probe (dynamic batching), real HTTP and gRPC clients. For one
 * request id the log shows the whole way (received → accepted → queued → batched → sent to the
 * stub → answered → released → completed); a client that resets its connection, or a gRPC
 * deadline that runs out, shows the cancellation down to the stub's cancel flag; an unknown tag
 * is warned about once; without the variable none of these lines appear.
 *
 * Requests that must stay in the stub use batch_probe's `hold` parameter (execute() waits for a
 * file the test creates), and every wait is for a log line or a file, never a sleep.
 */
import fs from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { create, toBinary } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelInferRequestSchema } from '../../src/generated/grpc_service_pb.js';
import { logLines, makeRepo, startTritium, type Tritium } from '../helpers/server.js';
import { postThenReset } from '../helpers/raw-http.js';
import { frameMessage, watchCall } from '../helpers/grpc-raw.js';
import { waitFor } from './infer-helpers.js';

const TAGS = ['http', 'grpc', 'request', 'batcher', 'ipc', 'instance', 'model', 'onnx'];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trace-tags-'));

function httpBody(id: string, params?: Record<string, unknown>): string {
  return JSON.stringify({
    id,
    ...(params ? { parameters: params } : {}),
    inputs: [{ name: 'IN', shape: [1, 2], datatype: 'FP32', data: [1, 2] }],
  });
}

function grpcRequest(id: string, params?: Record<string, string>): Uint8Array {
  return toBinary(
    ModelInferRequestSchema,
    create(ModelInferRequestSchema, {
      modelName: 'batch_probe',
      id,
      parameters: Object.fromEntries(Object.entries(params ?? {}).map(([k, v]) => [k, { parameterChoice: { case: 'stringParam' as const, value: v } }])),
      inputs: [{ name: 'IN', datatype: 'FP32', shape: [1n, 2n] }],
      rawInputContents: [new Uint8Array(new Float32Array([1, 2]).buffer)],
    }),
  );
}

/** One ModelInfer (grpc-js); resolves with the status code (0 for OK). */
function grpcInfer(port: number, body: Uint8Array): Promise<number> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise<number>((resolve) => {
    client.makeUnaryRequest(
      '/inference.GRPCInferenceService/ModelInfer',
      (b: Uint8Array) => Buffer.from(b),
      (b: Buffer) => b,
      body,
      (err) => {
        client.close();
        resolve(err ? err.code : 0);
      },
    );
  });
}

/**
 * One ModelInfer with a `grpc-timeout` that only the server enforces (raw HTTP/2: a grpc-js
 * client would cancel at its own deadline, racing the server's); resolves with grpc-status.
 */
async function grpcInferWithServerDeadline(port: number, body: Uint8Array, timeout: string): Promise<string | undefined> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  const stream = session.request({
    ':method': 'POST',
    ':path': '/inference.GRPCInferenceService/ModelInfer',
    'content-type': 'application/grpc',
    te: 'trailers',
    'grpc-timeout': timeout,
  });
  stream.on('error', () => {});
  const watch = watchCall(stream);
  stream.end(frameMessage(body));
  const done = await watch.done;
  session.close();
  return done.status;
}

/** The trace number (`#N`) the log gave the request with client id `id`. */
function traceNo(server: Tritium, id: string): string {
  const m = new RegExp(`(#\\d+) id=${id}[^-\\w]`).exec(server.log());
  if (!m) throw new Error(`no trace line for ${id}`);
  return m[1]!;
}

/**
 * The index of the first log line, at or after `from`, that is a `[tag]` line containing every
 * `parts` (-1 when there is none).
 */
function indexOf(all: string[], tag: string, parts: string[], from = 0): number {
  for (let i = from; i < all.length; i++) {
    const l = all[i]!;
    if (l.includes(`"[${tag}] `) && parts.every((p) => l.includes(p))) return i;
  }
  return -1;
}

/** Asserts that the steps appear in the log in this order; returns their line indices. */
function expectChain(server: Tritium, steps: Array<[string, string[]]>): number[] {
  const all = logLines(server);
  const at: number[] = [];
  let from = 0;
  for (const [tag, parts] of steps) {
    const i = indexOf(all, tag, parts, from);
    expect(
      i,
      `no [${tag}] line with ${JSON.stringify(parts)} after line ${from} in:\n${all.filter((l) => l.includes('"[')).join('\n')}`,
    ).toBeGreaterThanOrEqual(0);
    at.push(i);
    from = i;
  }
  return at;
}

describe('TRITIUM_TRACE=all (and an unknown tag)', () => {
  let server: Tritium;

  beforeAll(async () => {
    server = await startTritium({ repos: [makeRepo(['batch_probe'])], env: { TRITIUM_TRACE: 'all,no_such_tag' } });
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('warns once about the unknown tag, naming the known ones, and says what it traces', () => {
    const warnings = logLines(server, 'no_such_tag');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^W/);
    expect(warnings[0]).toContain(`known tags: ${TAGS.join(', ')}, all`);
    expect(logLines(server, `TRITIUM_TRACE: tracing ${TAGS.join(', ')}`)).toHaveLength(1);
  });

  it('traced the model load and the stub start-up', () => {
    expectChain(server, [
      ['model', ["'batch_probe': load requested"]],
      ['model', ["'batch_probe': load started"]],
      ['instance', ['batch_probe/batch_probe_0_0: instance stub spawned, pid']],
      ['instance', ['said hello; running initialize']],
      ['instance', ['initialize returned; the stub can serve']],
      ['model', ["'batch_probe' version 1: loaded"]],
      ['model', ["'batch_probe': load ended: loaded in"]],
    ]);
  });

  it('shows the whole way of one HTTP request, printed at --log-verbose 0', async () => {
    const res = await fetch(`${server.http}/v2/models/batch_probe/infer`, { method: 'POST', body: httpBody('trace-http-1') });
    expect(res.status).toBe(200);
    await res.text();
    const id = 'id=trace-http-1';
    await waitFor(
      'the request released and completed',
      () => logLines(server, id).some((l) => l.includes('released')) && logLines(server, id).some((l) => l.includes('completed')),
    );
    const no = traceNo(server, 'trace-http-1');
    const who = `${no} ${id}`;
    expectChain(server, [
      ['http', ['received', who, 'POST /v2/models/batch_probe/infer', 'model batch_probe']],
      ['request', [who, 'accepted by model batch_probe version 1']],
      ['batcher', ['batch_probe: queued', who, 'priority level 1', 'queue: ']],
      ['batcher', ['batch_probe: batch of 1 request(s)', 'for instance batch_probe_0_0', '(closed: max_queue_delay reached)', who]],
      ['ipc', ['batch_probe_0_0: sent batch', `= ${who}`]],
      ['ipc', ['batch_probe_0_0: exec_done of batch', 'µs in the stub)']],
      ['ipc', [`(${who}) answered: 5 output(s), final=true`]],
      ['http', [who, 'answered 200 (ok)']],
      ['request', [who, 'completed (ok) in']],
    ]);
    // The stub's rid of the request, from the line that sent it, names the release.
    const rid = new RegExp(`rid (\\d+) = ${no} `).exec(server.log())![1];
    expectChain(server, [
      ['ipc', [`rid ${rid} = ${who}`]],
      ['ipc', [`rid ${rid} (${who}) released: 1 input block(s) freed`]],
    ]);
    // The connection it came on: opened before, named by the received line.
    const conn = new RegExp(`\\[http\\] (conn \\d+): received ${no} `).exec(server.log())![1];
    expectChain(server, [
      ['http', [`${conn}: opened from 127.0.0.1:`]],
      ['http', [`${conn}: POST /v2/models/batch_probe/infer`]],
      ['http', [`${conn}: received ${who}`]],
    ]);
    // Verbose lines, as the other verbose lines are: I-prefixed, with the message quoted.
    for (const l of logLines(server, id)) expect(l).toMatch(/^I\d{4} [\d:.]+ \d+ tritium\] "\[(http|request|batcher|ipc)\] /);
  });

  it('shows the whole way of one gRPC request', async () => {
    expect(await grpcInfer(server.grpcPort!, grpcRequest('trace-grpc-1'))).toBe(0);
    const id = 'id=trace-grpc-1';
    await waitFor(
      'the request released and completed',
      () => logLines(server, id).some((l) => l.includes('released')) && logLines(server, id).some((l) => l.includes('completed')),
    );
    const who = `${traceNo(server, 'trace-grpc-1')} ${id}`;
    const [received] = expectChain(server, [
      ['grpc', ['received', who, 'ModelInfer, model batch_probe']],
      ['request', [who, 'accepted by model batch_probe version 1']],
      ['batcher', ['batch_probe: queued', who]],
      ['batcher', ['batch_probe: batch of', who]],
      ['ipc', ['sent batch', `= ${who}`]],
      ['ipc', [`(${who}) answered: 5 output(s), final=true`]],
      ['grpc', [who, 'final response (ok)']],
      ['request', [who, 'completed (ok) in']],
      ['ipc', [`(${who}) released`]],
    ]);
    // The call (connection and stream) the request came on, and its answer.
    const call = /\[grpc\] (conn \d+ stream \d+): received/.exec(logLines(server)[received!]!)![1]!;
    expectChain(server, [
      ['grpc', [`${call}: call /inference.GRPCInferenceService/ModelInfer`]],
      ['grpc', [`${call}: received ${who}`]],
      ['grpc', [`${call}: answered OK`]],
    ]);
  });

  it('shows an HTTP client that resets its connection, down to the stub’s cancel flag', async () => {
    const hold = path.join(tmp, 'release-http');
    const reset = postThenReset(server.httpPort, '/v2/models/batch_probe/infer', httpBody('trace-cancel-1', { hold }));
    const id = 'id=trace-cancel-1';
    // In the stub (held there by the model) before the client goes.
    await waitFor('the request sent to the stub', () => logLines(server, id).some((l) => l.includes('"[ipc]') && l.includes('sent batch')));
    reset();
    await waitFor('the stub told', () => logLines(server, id).some((l) => l.includes('cancel flag set for the stub')));
    fs.writeFileSync(hold, '');
    await waitFor('the request released', () => logLines(server, id).some((l) => l.includes('released')));
    const no = traceNo(server, 'trace-cancel-1');
    const who = `${no} ${id}`;
    const conn = new RegExp(`\\[http\\] (conn \\d+): received ${no} `).exec(server.log())![1];
    expectChain(server, [
      ['http', [`${conn}: received ${who}`]],
      ['ipc', ['sent batch', `= ${who}`]],
      ['http', [`${conn}: closed`, 'with POST /v2/models/batch_probe/infer unanswered']],
      ['http', [`${conn}: ${who}: client gone before the answer; cancelling the request`]],
      ['ipc', [`(${who}) cancelled: cancel flag set for the stub`]],
      ['ipc', [`(${who}) answered`]],
      ['ipc', [`(${who}) released`]],
    ]);
  });

  it('shows a gRPC deadline that runs out while the stub holds the request', async () => {
    const hold = path.join(tmp, 'release-grpc');
    const id = 'id=trace-deadline-1';
    const answer = grpcInferWithServerDeadline(server.grpcPort!, grpcRequest('trace-deadline-1', { hold }), '4S');
    await waitFor('the request sent to the stub', () => logLines(server, id).some((l) => l.includes('"[ipc]') && l.includes('sent batch')));
    expect(await answer).toBe(String(grpc.status.DEADLINE_EXCEEDED));
    await waitFor('the stub told', () => logLines(server, id).some((l) => l.includes('cancel flag set for the stub')));
    fs.writeFileSync(hold, '');
    await waitFor('the request released', () => logLines(server, id).some((l) => l.includes('released')));
    const who = `${traceNo(server, 'trace-deadline-1')} ${id}`;
    const call = new RegExp(`\\[grpc\\] (conn \\d+ stream \\d+): received ${who.split(' ')[0]} `).exec(server.log())![1];
    expectChain(server, [
      ['grpc', [`${call}: call /inference.GRPCInferenceService/ModelInfer, grpc-timeout`]],
      ['grpc', [`${call}: received ${who}`]],
      ['grpc', [`${call}: deadline of`, 'exceeded; cancelling']],
      ['grpc', [`${call}: ${who}: call ended before the answer; cancelling the request`]],
      ['ipc', [`(${who}) cancelled: cancel flag set for the stub`]],
      ['ipc', [`(${who}) released`]],
    ]);
  });
});

describe('TRITIUM_TRACE unset', () => {
  let server: Tritium;

  beforeAll(async () => {
    server = await startTritium({ repos: [makeRepo(['batch_probe'])], env: { TRITIUM_TRACE: undefined } });
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('prints none of the trace lines', async () => {
    const res = await fetch(`${server.http}/v2/models/batch_probe/infer`, { method: 'POST', body: httpBody('quiet-http-1') });
    expect(res.status).toBe(200);
    await res.text();
    expect(await grpcInfer(server.grpcPort!, grpcRequest('quiet-grpc-1'))).toBe(0);
    // A later request proves the earlier ones' lines would have been written by now.
    const res2 = await fetch(`${server.http}/v2/health/ready`);
    expect(res2.status).toBe(200);
    const log = server.log();
    expect(log).toContain('Started HTTPService');
    for (const tag of TAGS) expect(log).not.toContain(`"[${tag}] `);
    expect(log).not.toContain('TRITIUM_TRACE');
    expect(log).not.toContain('quiet-');
  });
});
