/**
 * Frontend threads (`--http-thread-count`, `--grpc-thread-count`, frontends/threads/): N threads
 * accept and parse connections on one SO_REUSEPORT port and hand requests to the main thread's core. What must
 * hold with them, on the real CLI with real stubs (and, for a failing thread, the real server
 * started in this process so the test can reach one of its threads):
 * requests from connections of different threads meet in one batch (HTTP and gRPC); a client that resets
 * cancels its request; the connection limit is the server's, not each thread's, and idle
 * connections of one thread make room for another's; SIGTERM drains every thread; a thread
 * that throws is replaced while the others keep serving.
 *
 * The HTTP and gRPC suites listed in vitest.config.ts (project `threads`) run again with two
 * threads of each: those are the conformance cases.
 */
import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ModelInferRequestSchema, ModelInferResponseSchema } from '../../src/generated/grpc_service_pb.js';
import type { RunningServer } from '../../src/start-server.js';
import type { ServerOptions } from '../../src/server-options.js';
import { metricValue, scrape, waitFor } from './infer-helpers.js';
import { repoWithTwins, tempDir, waitForJson } from './twin-helpers.js';
import { frameMessage, grpcCall, watchCall } from '../helpers/grpc-raw.js';
import { parseResponses, postThenReset, rawExchange } from '../helpers/raw-http.js';
import { editConfig, ensureBuilt, makeRepo, MODELS, PYTHON, ROOT, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const THREADS = 4;
const LIMIT = 10;

/** One POST on a connection of its own (closed after the answer); status and JSON body, or status 0 if closed unanswered. */
async function postFresh(port: number, url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const text = JSON.stringify(body);
  const reply = await rawExchange(port, [
    `POST ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  ]);
  const [res] = parseResponses(reply.bytes);
  if (res === undefined) return { status: 0, json: {} };
  return { status: res.status, json: res.body.length ? (JSON.parse(res.body.toString()) as Record<string, unknown>) : {} };
}

const probeBody = { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1], data: [1] }] };
const slowBody = (ms: number, value = 1) => ({
  inputs: [
    { name: 'MS', datatype: 'INT32', shape: [1], data: [ms] },
    { name: 'VALUE', datatype: 'INT32', shape: [1], data: [value] },
  ],
});
const output = (json: Record<string, unknown>, name: string) => (json.outputs as Array<{ name: string; data: number[] }>).find((o) => o.name === name)!.data[0];

describe(`--http-thread-count=${THREADS} --grpc-thread-count=${THREADS}`, () => {
  let server: Tritium;
  let repo: string;
  let markers: string;

  beforeAll(async () => {
    repo = repoWithTwins(['batch_probe', 'slow_execute', 'add_sub'], ['cancel_loop']);
    // Ten requests fill a batch and release it at once; the longer delay only gives a loaded
    // machine time to deliver all ten before a partial batch would go.
    editConfig(repo, 'batch_probe', (c) => c.replace('max_queue_delay_microseconds: 200000', 'max_queue_delay_microseconds: 1000000'));
    markers = tempDir('tritium-threads-');
    server = await startTritium({
      repos: [repo],
      args: [`--http-thread-count=${THREADS}`, `--grpc-thread-count=${THREADS}`, `--http-max-connections=${LIMIT}`],
      env: { TRITIUM_TRACE: 'http,grpc' },
    });
  });

  afterAll(async () => {
    await stopAndExpectNoShm(server);
    fs.rmSync(repo, { recursive: true, force: true });
    fs.rmSync(markers, { recursive: true, force: true });
  });

  it('says it serves HTTP and gRPC with the threads', () => {
    expect(server.log()).toMatch(new RegExp(`Started HTTPService at 127\\.0\\.0\\.1:${server.httpPort} \\(${THREADS} threads\\)`));
    expect(server.log()).toMatch(new RegExp(`Started GRPCInferenceService at 127\\.0\\.0\\.1:${server.grpcPort} \\(${THREADS} threads\\)`));
  });

  it('forms one batch from gRPC connections that different threads accepted', async () => {
    const frame = frameMessage(
      toBinary(
        ModelInferRequestSchema,
        create(ModelInferRequestSchema, {
          modelName: 'batch_probe',
          inputs: [{ name: 'IN', datatype: 'FP32', shape: [1n, 1n] }],
          rawInputContents: [new Uint8Array(new Float32Array([2]).buffer)],
        }),
      ),
    );
    const calls = Array.from({ length: 10 }, async () => {
      const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
      session.on('error', () => {});
      const call = grpcCall(session, 'ModelInfer');
      const watch = watchCall(call);
      call.end(frame);
      const done = await watch.done;
      session.close();
      expect(done.status, done.message).toBe('0');
      const reply = fromBinary(ModelInferResponseSchema, Buffer.concat(done.chunks).subarray(5));
      const at = reply.outputs.findIndex((o) => o.name === 'BATCH_LEN');
      return Buffer.from(reply.rawOutputContents[at]!).readInt32LE(0);
    });
    expect(new Set(await Promise.all(calls))).toEqual(new Set([10]));
    const threads = new Set(
      [...server.log().matchAll(/\[grpc\] gRPC thread (\d+): .*received #\d+ id=<id_unknown>: ModelInfer, model batch_probe/g)].map((m) => m[1]),
    );
    expect(threads.size).toBeGreaterThan(1);
  });

  it('forms one batch from connections that different threads accepted', async () => {
    // batch_probe: max_batch_size 10, max_queue_delay 1 s here; ten single-row requests, each on
    // its own connection, which the kernel spreads over the threads' sockets.
    const replies = await Promise.all(Array.from({ length: 10 }, () => postFresh(server.httpPort, '/v2/models/batch_probe/infer', probeBody)));
    for (const r of replies) expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(new Set(replies.map((r) => output(r.json, 'BATCH_LEN')))).toEqual(new Set([10]));
    expect(new Set(replies.map((r) => output(r.json, 'EXEC_ID'))).size).toBe(1);
    // TRITIUM_TRACE=http names the thread of each request it received.
    const threads = new Set(
      [...server.log().matchAll(/\[http\] HTTP thread (\d+): conn \d+: received #\d+ id=<id_unknown>: POST \/v2\/models\/batch_probe\/infer/g)].map(
        (m) => m[1],
      ),
    );
    expect(threads.size).toBeGreaterThan(1);
  });

  it('cancels the request of a client that resets its connection', async () => {
    const body = JSON.stringify({
      inputs: [{ name: 'N', datatype: 'INT32', shape: [1], data: [20000] }],
      parameters: { marker_dir: markers, tag: 'threads-reset' },
    });
    const reset = postThenReset(server.httpPort, '/v2/models/cancel_loop_sync/infer', body);
    await waitFor('the request to reach the model', () => server.log().includes('cancel_loop_sync/infer'));
    await new Promise((r) => setTimeout(r, 300));
    reset();
    expect(await waitForJson(path.join(markers, 'threads-reset'))).toMatchObject({ request: true, sender: true });
  });

  it('refuses a connection past the limit of the server while every connection is busy, whatever thread it reaches', async () => {
    // Per thread, 10 busy connections over 4 threads would leave room on every thread. The ten
    // requests form one batch that batch_probe holds until the file `hold` exists.
    const hold = path.join(markers, 'release-busy');
    const busy = Array.from({ length: LIMIT }, (_, i) =>
      postFresh(server.httpPort, '/v2/models/batch_probe/infer', { ...probeBody, inputs: [{ ...probeBody.inputs[0]!, data: [i] }], parameters: { hold } }),
    );
    await waitFor(`${LIMIT} requests read`, () => received('batch_probe') >= receivedBefore + LIMIT);
    const refusedBefore = await refused();
    const extra = await rawExchange(server.httpPort, ['GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n'], { timeoutMs: 10_000 });
    expect(extra.closed).toBe(true);
    expect(extra.bytes.length).toBe(0);
    expect(await refused()).toBe(refusedBefore + 1);
    fs.writeFileSync(hold, '');
    const answers = await Promise.all(busy);
    for (const [i, a] of answers.entries()) expect(output(a.json, 'OUT')).toBe(i);
  });

  it("makes room for a new connection by closing another thread's idle one", async () => {
    // Fill the limit with idle keep-alive connections that one thread holds (TRITIUM_TRACE=http
    // says which thread accepted each client port), then connect until a connection reaches
    // another thread: that thread has nothing of its own to close.
    const kept: net.Socket[] = [];
    let holder: string | undefined;
    for (let tries = 0; kept.length < LIMIT; tries++) {
      expect(tries).toBeLessThan(400);
      const { socket, thread } = await idleConnection();
      holder ??= thread;
      if (thread === holder) kept.push(socket);
      else socket.destroy();
      await waitFor('the others closed', () => open() === kept.length);
    }
    const evictedBefore = await evicted();
    for (let tries = 0; ; tries++) {
      expect(tries).toBeLessThan(100);
      const { socket, thread } = await idleConnection();
      socket.destroy();
      if (thread === holder) continue; // room made on its own thread; try again
      expect(await evicted()).toBeGreaterThan(evictedBefore);
      await waitFor("one of the holder's connections closed", () => kept.some((k) => k.destroyed));
      break;
    }
    for (const k of kept) k.destroy();
    await waitFor('every connection closed', () => open() === 0);
  });

  /** Connections the threads hold now, from TRITIUM_TRACE=http's opened/closed lines. */
  function open(): number {
    const log = server.log();
    return (
      (log.match(/\[http\] HTTP thread \d+: conn \d+: opened from/g) ?? []).length - (log.match(/\[http\] HTTP thread \d+: conn \d+: closed/g) ?? []).length
    );
  }

  /** A new keep-alive connection that was answered once, and the thread that accepted it. */
  async function idleConnection(): Promise<{ socket: net.Socket; thread: string }> {
    // Only lines logged from here on: a port may have served a connection of an earlier case.
    const mark = server.log().length;
    const socket = net.connect(server.httpPort, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((resolve) => {
      socket.once('data', () => resolve());
      socket.write('GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n');
    });
    const pattern = new RegExp(`\\[http\\] HTTP thread (\\d+): conn \\d+: opened from 127\\.0\\.0\\.1:${socket.localPort}\\b`);
    await waitFor('its accepting thread logged', () => pattern.test(server.log().slice(mark)));
    return { socket, thread: pattern.exec(server.log().slice(mark))![1]! };
  }

  let receivedBefore = 0;
  beforeEach(() => {
    receivedBefore = received('batch_probe');
  });

  /** Infer requests for `model` the threads received so far (TRITIUM_TRACE=http lines). */
  function received(model: string): number {
    return (server.log().match(new RegExp(`received #\\d+ id=\\S+: POST /v2/models/${model}/infer`, 'g')) ?? []).length;
  }

  async function refused(): Promise<number> {
    return metricValue((await scrape(server.metricsPort!)).samples, 'tritium_connections_refused_total', { frontend: 'http' }) ?? 0;
  }

  async function evicted(): Promise<number> {
    return metricValue((await scrape(server.metricsPort!)).samples, 'tritium_connections_evicted_total', { frontend: 'http' }) ?? 0;
  }
});

describe('large outputs with frontend threads', () => {
  let lender: Tritium;
  let repo: string;

  beforeAll(async () => {
    repo = makeRepo(['large_output']);
    lender = await startTritium({ repos: [repo], args: ['--http-thread-count=2'] });
  });

  afterAll(async () => {
    await stopAndExpectNoShm(lender);
    fs.rmSync(repo, { recursive: true, force: true });
  });

  it("lends large outputs to the thread where the stub wrote them, and takes the stub's blocks back after the write", async () => {
    // 60 answers of 4 MiB: were the blocks not given back, the stub's output arena would grow
    // by 240 MiB; lent and released, it stays near one answer's size.
    const count = 1 << 20;
    const body = JSON.stringify({
      inputs: [{ name: 'COUNT', datatype: 'INT64', shape: [1], data: [count] }],
      outputs: [{ name: 'OUT', parameters: { binary_data: true } }],
    });
    for (let round = 0; round < 15; round++) {
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          const res = await fetch(`${lender.http}/v2/models/large_output/infer`, { method: 'POST', body });
          expect(res.status).toBe(200);
          const all = Buffer.from(await res.arrayBuffer());
          const header = Number(res.headers.get('inference-header-content-length'));
          const out = all.subarray(header);
          expect(out.length).toBe(count * 4);
          expect([out.readInt32LE(0), out.readInt32LE(4 * 12345), out.readInt32LE(out.length - 4)]).toEqual([0, 12345, count - 1]);
        }),
      );
    }
    const m = await scrape(lender.metricsPort!);
    const shm = m.samples.filter((x) => x.name === 'tritium_shm_bytes' && x.labels.model === 'large_output').reduce((a, x) => a + x.value, 0);
    expect(shm).toBeGreaterThan(0);
    expect(shm).toBeLessThan(64 * 2 ** 20);
  });
});

describe('SIGTERM with requests in flight on every thread', () => {
  let repo: string;
  let server: Tritium | undefined;
  // A failing case must not leave its server running.
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(repo, { recursive: true, force: true });
  });

  it('answers every one, then exits 0 with no shared memory left', async () => {
    repo = makeRepo(['slow_execute']);
    const s = await startTritium({ repos: [repo], args: [`--http-thread-count=${THREADS}`], env: { TRITIUM_TRACE: 'http' } });
    server = s;
    const inflight = Array.from({ length: 8 }, (_, i) => postFresh(s.httpPort, '/v2/models/slow_execute/infer', slowBody(1500, i)));
    await waitFor('8 requests read', () => (s.log().match(/received #\d+ id=\S+: POST \/v2\/models\/slow_execute\/infer/g) ?? []).length >= 8);
    const exit = stopAndExpectNoShm(s);
    const answers = await Promise.all(inflight);
    for (const [i, a] of answers.entries()) {
      expect(a.status, JSON.stringify(a.json)).toBe(200);
      expect(output(a.json, 'OUT')).toBe(i + 1);
    }
    expect(await exit).toEqual({ code: 0, signal: null });
  });
});

describe('a frontend thread that throws (server in this process)', () => {
  let running: RunningServer | undefined;
  const lines: string[] = [];

  beforeAll(async () => {
    ensureBuilt();
    // The compiled server: its threads run dist/frontends/threads/thread-main.js.
    const { startServer } = (await import(path.join(ROOT, 'dist', 'start-server.js'))) as typeof import('../../src/start-server.js');
    const { parseOptions } = (await import(path.join(ROOT, 'dist', 'cli', 'options.js'))) as typeof import('../../src/cli/options.js');
    const { createLogger } = (await import(path.join(ROOT, 'dist', 'core', 'logger.js'))) as typeof import('../../src/core/logger.js');
    const options: ServerOptions = parseOptions([
      `--model-repository=${MODELS}`,
      '--load-model=add_sub',
      '--model-control-mode=explicit',
      '--http-port=0',
      '--http-address=127.0.0.1',
      '--allow-grpc=false',
      '--allow-metrics=false',
      '--http-thread-count=2',
      `--backend-config=python,python-executable=${PYTHON}`,
    ]);
    const log = createLogger({ info: true, warning: true, error: true, verbose: 0, format: 'default', file: '' }, (l) => void lines.push(l));
    running = await startServer(options, log);
  });

  afterAll(async () => {
    await running?.shutdown();
  });

  const addSub = (port: number) =>
    postFresh(port, '/v2/models/add_sub/infer', {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 1, 1, 1] },
      ],
    });

  it('is logged and replaced, and the server keeps answering on its port', async () => {
    const port = running!.httpPort!;
    expect((await addSub(port)).status).toBe(200);
    const [victim, other] = running!.httpThreads!();
    expect(other).toBeDefined();
    // A message the thread's code cannot take: the exception escapes into the thread's loop.
    victim!.postMessage({ t: 'no-such-message' });
    await waitFor('the failure logged', () =>
      lines.some((l) => /HTTP frontend thread \d failed: Error: frontend thread: unknown message 'no-such-message'/.test(l)),
    );
    // Meanwhile and afterwards, every connection is answered (the other thread, then both).
    const during = await Promise.all(Array.from({ length: 8 }, () => addSub(port)));
    for (const r of during)
      expect(r.json.outputs).toEqual([
        { name: 'OUTPUT0', datatype: 'FP32', shape: [4], data: [2, 3, 4, 5] },
        { name: 'OUTPUT1', datatype: 'FP32', shape: [4], data: [0, 1, 2, 3] },
      ]);
    await waitFor('the thread restarted', () => lines.some((l) => /HTTP frontend thread \d restarted/.test(l)));
    expect(running!.httpThreads!()).toHaveLength(2);
    expect(running!.httpThreads!()).not.toContain(victim);
    const after = await Promise.all(Array.from({ length: 8 }, () => addSub(port)));
    for (const r of after) expect(r.status).toBe(200);
  });
});

describe('--reuse-http-port and --reuse-grpc-port', () => {
  let repo: string;
  const started: Tritium[] = [];
  // A failing case must not leave its servers running.
  afterAll(async () => {
    await Promise.all(started.map((t) => t.stop()));
    fs.rmSync(repo, { recursive: true, force: true });
  });

  it('lets a second server listen on the same ports, which answers once the first is gone', async () => {
    repo = makeRepo(['add_sub']);
    const reuse = ['--reuse-http-port=true', '--reuse-grpc-port=true'];
    const first = await startTritium({ repos: [repo], args: reuse });
    started.push(first);
    const ports = [`--http-port=${first.httpPort}`, `--grpc-port=${first.grpcPort}`];
    // Without the flag the port is taken, in Triton's words (gRPC is checked first, as tritonserver does).
    const refused = await startTritium({ repos: [repo], args: ports, expectFailure: true });
    started.push(refused);
    expect(await refused.exited).toMatchObject({ code: 1 });
    expect(refused.log()).toContain(`failed to start GRPC service: Unavailable - Socket '127.0.0.1:${first.grpcPort}' already in use`);
    const second = await startTritium({ repos: [repo], args: [...reuse, ...ports] });
    started.push(second);
    expect([second.httpPort, second.grpcPort]).toEqual([first.httpPort, first.grpcPort]);
    await stopAndExpectNoShm(first);
    const body = {
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [4], data: [1, 1, 1, 1] },
      ],
    };
    const r = await postFresh(first.httpPort, '/v2/models/add_sub/infer', body);
    expect(r.status).toBe(200);
    expect(output(r.json, 'OUTPUT0')).toBe(2);
    await stopAndExpectNoShm(second);
  });
});
