/**
 * The connection limit of the HTTP and gRPC frontends (frontends/connection-limit.ts): past it,
 * a new connection replaces the oldest idle one, so idle clients cannot keep a health probe out;
 * when every connection has a request in flight, a new one is refused, once-per-burst logged and
 * counted. Real sockets, a real server; the limits are set low with the flags.
 */
import fs from 'node:fs';
import net from 'node:net';
import http2 from 'node:http2';
import { create, toBinary } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelInferRequestSchema } from '../../src/generated/grpc_service_pb.js';
import { parsePrometheus, waitFor } from './infer-helpers.js';
import { frameMessage, grpcCall, watchCall } from '../helpers/grpc-raw.js';
import { logLines, makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const LIMIT = 4;
let server: Tritium;
let repo: string;

beforeAll(async () => {
  repo = makeRepo(['slow_execute']);
  // TRITIUM_TRACE=http: the log says when the server has read a request.
  server = await startTritium({ repos: [repo], args: [`--http-max-connections=${LIMIT}`, `--grpc-max-connections=${LIMIT}`], env: { TRITIUM_TRACE: 'http' } });
});

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(repo, { recursive: true, force: true });
});

/** What the server answered to one request on the socket; '' when it closed or reset it unanswered. */
function answered(socket: net.Socket, request: string): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    socket.on('data', (d) => {
      got += d;
      if (/\r\n\r\n/.test(got)) resolve(got);
    });
    socket.once('error', () => resolve(got));
    socket.once('close', () => resolve(got));
    socket.write(request);
  });
}

const closed = (s: net.Socket) => new Promise<void>((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())));

async function metric(name: string, frontend: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
  return parsePrometheus(text).samples.find((s) => s.name === name && s.labels.frontend === frontend)?.value ?? 0;
}

const slowInfer = (ms: number) =>
  JSON.stringify({
    inputs: [
      { name: 'MS', shape: [1], datatype: 'INT32', data: [ms] },
      { name: 'VALUE', shape: [1], datatype: 'INT32', data: [1] },
    ],
  });

describe('HTTP connection limit', () => {
  it('a new connection replaces the oldest idle one: a probe gets through while idle clients hold the limit', async () => {
    const idle: net.Socket[] = [];
    for (let i = 0; i < LIMIT * 3; i++) {
      const s = net.connect(server.httpPort, '127.0.0.1');
      s.on('error', () => {});
      await answered(s, 'GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n');
      idle.push(s);
    }
    if (process.env.TRITIUM_TEST_HTTP_THREADS === undefined) {
      // The oldest ones made room for the newer ones.
      await Promise.all(idle.slice(0, LIMIT * 2).map(closed));
      expect(idle.slice(LIMIT * 2).every((s) => !s.destroyed)).toBe(true);
    } else {
      // Frontend threads: each closes its own oldest idle connection first (docs/design.md).
      await waitFor(`${LIMIT * 2} closed`, () => idle.filter((s) => s.destroyed).length === LIMIT * 2);
      await new Promise((r) => setTimeout(r, 100));
      expect(idle.filter((s) => !s.destroyed)).toHaveLength(LIMIT);
    }
    const probe = await fetch(`${server.http}/v2/health/ready`);
    expect(probe.status).toBe(200);
    expect(await metric('tritium_connections_evicted_total', 'http')).toBeGreaterThanOrEqual(LIMIT * 2);
    for (const s of idle) s.destroy();
  });

  it('a new connection replaces one stuck in a request head (slowloris): those hold no request', async () => {
    const stuck: net.Socket[] = [];
    for (let i = 0; i < LIMIT * 3; i++) {
      const s = net.connect(server.httpPort, '127.0.0.1');
      s.on('error', () => {});
      s.write('GET /v2/health/live HTTP/1.1\r\nHo');
      stuck.push(s);
      await new Promise((r) => setTimeout(r, 20));
    }
    const probe = await fetch(`${server.http}/v2/health/ready`);
    expect(probe.status).toBe(200);
    for (const s of stuck) s.destroy();
  });

  it('refuses a new connection while every one has a request in flight, and logs it once', async () => {
    const received = () => (server.log().match(/\[http\] (?:HTTP thread \d+: )?conn \d+: received #/g) ?? []).length;
    const receivedBefore = received();
    const body = slowInfer(3000);
    const busy: net.Socket[] = [];
    const answers: Promise<string>[] = [];
    // One at a time, each read by the server before the next connects (the model sleeps 3 s in
    // each): a connection that has not sent its request yet is idle, and may make room for a
    // newer one while the previous test's connections are still closing on the server's side.
    for (let i = 0; i < LIMIT; i++) {
      const s = net.connect(server.httpPort, '127.0.0.1');
      s.on('error', () => {});
      answers.push(answered(s, `POST /v2/models/slow_execute/infer HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`));
      busy.push(s);
      await waitFor(`request ${i + 1} read`, () => received() >= receivedBefore + i + 1);
    }
    for (let k = 0; k < 3; k++) {
      const extra = net.connect(server.httpPort, '127.0.0.1');
      extra.on('error', () => {});
      const got = await answered(extra, 'GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(got).toBe('');
    }
    expect(await metric('tritium_connections_refused_total', 'http')).toBeGreaterThanOrEqual(3);
    // With frontend threads the line is posted to the main thread, which writes it: it may
    // follow the refusals by a moment on a loaded machine.
    const refusal = 'HTTP: 4 connections are open and every one has a request in flight';
    await waitFor('the refusal logged', () => logLines(server, refusal).length > 0);
    expect(logLines(server, refusal)).toHaveLength(1);
    // The busy ones are answered normally.
    for (const a of await Promise.all(answers)) expect(a).toMatch(/^HTTP\/1\.1 200/);
    for (const s of busy) s.destroy();
  }, 60_000);
});

describe('gRPC connection limit', () => {
  it('a new connection replaces the oldest idle HTTP/2 session', async () => {
    const sessions: http2.ClientHttp2Session[] = [];
    for (let i = 0; i < LIMIT * 2; i++) {
      const s = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
      s.on('error', () => {});
      await new Promise<void>((resolve) => s.once('connect', () => resolve()));
      sessions.push(s);
      await new Promise((r) => setTimeout(r, 50));
    }
    const gone = (s: http2.ClientHttp2Session) => s.destroyed || s.closed;
    // The client learns of an eviction when the server's GOAWAY or FIN arrives: wait for it.
    await waitFor(`${LIMIT} sessions closed`, () => sessions.filter(gone).length >= LIMIT);
    if (process.env.TRITIUM_TEST_GRPC_THREADS === undefined) {
      expect(sessions.slice(0, LIMIT).every(gone)).toBe(true);
      expect(sessions.slice(LIMIT).some((s) => !gone(s))).toBe(true);
    } else {
      // Frontend threads: each closes its own oldest idle session first (docs/design.md).
      expect(sessions.filter(gone)).toHaveLength(LIMIT);
    }
    expect(await metric('tritium_connections_evicted_total', 'grpc')).toBeGreaterThanOrEqual(LIMIT);
    for (const s of sessions) s.destroy();
  });
});

/** One gRPC message (5-byte prefix + ModelInferRequest) asking slow_execute to sleep `ms`. */
function slowExecuteFrame(ms: number): Buffer {
  const request = create(ModelInferRequestSchema, {
    modelName: 'slow_execute',
    inputs: [
      { name: 'MS', datatype: 'INT32', shape: [1n] },
      { name: 'VALUE', datatype: 'INT32', shape: [1n] },
    ],
    rawInputContents: [Buffer.from(new Int32Array([ms]).buffer), Buffer.from(new Int32Array([1]).buffer)],
  });
  return frameMessage(toBinary(ModelInferRequestSchema, request));
}

/** Open descriptors and resident memory (bytes) of the server process. */
function footprint(pid: number): { fds: number; rss: number } {
  const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
  return { fds: fs.readdirSync(`/proc/${pid}/fd`).length, rss };
}

describe('a flood of connections', () => {
  // A limit of a realistic order: with 4, a flood outruns the grace a new connection gets.
  const FLOOD_LIMIT = 128;
  let flooded: Tritium;
  beforeAll(async () => {
    flooded = await startTritium({ repos: [repo], args: [`--http-max-connections=${FLOOD_LIMIT}`, `--grpc-max-connections=${FLOOD_LIMIT}`] });
  });
  afterAll(async () => {
    await stopAndExpectNoShm(flooded);
  });

  it('keeps the server’s descriptors and memory bounded and serves a valid client throughout', async () => {
    const server = flooded;
    const pid = server.proc.pid!;
    const before = footprint(pid);
    // A valid client polls health and runs inferences the whole time on fresh connections.
    let flooding = true;
    const served: number[] = [];
    const client = (async () => {
      while (flooding) {
        const r = await fetch(`${server.http}/v2/health/ready`, { headers: { connection: 'close' } });
        served.push(r.status);
        await new Promise((r2) => setTimeout(r2, 20));
      }
    })();
    let peak = before;
    const sample = () => {
      const now = footprint(pid);
      peak = { fds: Math.max(peak.fds, now.fds), rss: Math.max(peak.rss, now.rss) };
    };
    const sockets: net.Socket[] = [];
    const sessions: http2.ClientHttp2Session[] = [];
    // 200 HTTP connections a second: a connection is evicted only after 128 newer ones came,
    // 640 ms later, well past the 250 ms a new one is spared (frontends/connection-limit.ts), so
    // the valid client's requests get read even when the machine is busy.
    for (let round = 0; round < 20; round++) {
      // 20 HTTP clients per round: half idle after one answer, half stuck in a request head.
      for (let i = 0; i < 20; i++) {
        const s = net.connect(server.httpPort, '127.0.0.1');
        s.on('error', () => {});
        s.write(i % 2 ? 'GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n' : 'GET /v2/health/live HTTP/1.1\r\nHo');
        sockets.push(s);
      }
      // 10 HTTP/2 sessions per round that never open a call.
      for (let i = 0; i < 10; i++) {
        const h = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
        h.on('error', () => {});
        sessions.push(h);
      }
      await new Promise((r) => setTimeout(r, 100));
      sample();
    }
    await new Promise((r) => setTimeout(r, 500));
    sample();
    flooding = false;
    await client;
    // 400 HTTP connections and 200 sessions were opened; each frontend kept at most its limit
    // (the server's descriptors say so: the flood's clients do not read, so they would not see it).
    expect(peak.fds - before.fds).toBeLessThanOrEqual(2 * FLOOD_LIMIT + 8);
    expect(peak.rss - before.rss).toBeLessThan(64 * 1024 * 1024);
    expect(served.length).toBeGreaterThan(10);
    expect(served.every((status) => status === 200)).toBe(true);

    for (const s of sockets) s.destroy();
    for (const h of sessions) h.destroy();
    await new Promise((r) => setTimeout(r, 500));
    // And after: back to where it was.
    expect(footprint(pid).fds - before.fds).toBeLessThanOrEqual(4);
    const infer = await fetch(`${server.http}/v2/models/slow_execute/infer`, { method: 'POST', body: slowInfer(1) });
    expect(infer.status).toBe(200);
  }, 60_000);
});

describe('gRPC connection limit and stuck calls', () => {
  it('a new connection replaces one whose only calls are still waiting for their request', async () => {
    const open = (port: number) => {
      const s = http2.connect(`http://127.0.0.1:${port}`);
      s.on('error', () => {});
      return s;
    };
    // Sessions that each open a call and send nothing more (a gRPC slowloris).
    const stuck: http2.ClientHttp2Session[] = [];
    for (let i = 0; i < LIMIT * 3; i++) {
      const s = open(server.grpcPort!);
      grpcCall(s, 'ModelInfer');
      stuck.push(s);
      await new Promise((r) => setTimeout(r, 30));
    }
    const client = open(server.grpcPort!);
    const call = grpcCall(client, 'ModelInfer');
    const answer = watchCall(call);
    call.end(slowExecuteFrame(1));
    expect((await answer.done).status).toBe('0');
    client.destroy();
    for (const s of stuck) s.destroy();
  });
});

describe('HTTP idle and slow-sender timeout', () => {
  let timed: Tritium;
  beforeAll(async () => {
    timed = await startTritium({ repos: [repo], args: ['--http-idle-timeout-secs=1'] });
  });
  afterAll(async () => {
    await stopAndExpectNoShm(timed);
  });

  /** Resolves once the server closed the socket (bounded by the test timeout). */
  const closedByServer = (s: net.Socket) => new Promise<void>((resolve) => s.once('close', () => resolve()));

  it('closes an idle keep-alive connection, a slow request head and a slow body', async () => {
    const idle = net.connect(timed.httpPort, '127.0.0.1');
    idle.on('error', () => {});
    expect(await answered(idle, 'GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n')).toMatch(/^HTTP\/1\.1 200/);
    const slowHead = net.connect(timed.httpPort, '127.0.0.1');
    slowHead.on('error', () => {});
    slowHead.write('GET /v2/health/live HTTP/1.1\r\nHo');
    const slowBody = net.connect(timed.httpPort, '127.0.0.1');
    slowBody.on('error', () => {});
    slowBody.write('POST /v2/models/slow_execute/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"inputs":');
    await Promise.all([closedByServer(idle), closedByServer(slowHead), closedByServer(slowBody)]);
  }, 30_000);

  it('does not bound a request whose model runs longer than the timeout', async () => {
    const s = net.connect(timed.httpPort, '127.0.0.1');
    s.on('error', () => {});
    const body = slowInfer(2500);
    const closed = closedByServer(s);
    const got = await answered(s, `POST /v2/models/slow_execute/infer HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    expect(got).toMatch(/^HTTP\/1\.1 200/);
    // The answer's write restarted the idle timer: the connection, idle from then on, is closed.
    await closed;
  }, 30_000);
});

describe('gRPC slow senders', () => {
  let timed: Tritium;
  let session: http2.ClientHttp2Session;
  beforeAll(async () => {
    timed = await startTritium({ repos: [repo], args: ['--grpc-read-timeout-secs=1'] });
    session = http2.connect(`http://127.0.0.1:${timed.grpcPort}`);
    session.on('error', () => {});
  });
  afterAll(async () => {
    session?.destroy();
    await stopAndExpectNoShm(timed);
  });

  /** Opens a call; the test decides what the client sends and when. */
  function open(method: 'ModelInfer' | 'ModelStreamInfer') {
    const stream = grpcCall(session, method);
    const outcome = watchCall(stream);
    return { stream, outcome, closed: outcome.done };
  }

  it('ends a unary call whose request stops arriving, with DEADLINE_EXCEEDED and the flag', async () => {
    const nothing = open('ModelInfer'); // headers only
    const part = open('ModelInfer');
    part.stream.write(slowExecuteFrame(1).subarray(0, 12)); // a prefix and a few bytes of the message
    for (const c of [await nothing.closed, await part.closed]) {
      expect(c.status).toBe('4');
      expect(c.message).toMatch(/^The request message stopped arriving: no data for \d+ s \(--grpc-read-timeout-secs=1\)$/);
    }
  }, 20_000);

  it('leaves a quiet stream alone between messages, and ends one stuck in the middle of a message', async () => {
    const quiet = open('ModelStreamInfer');
    quiet.stream.write(slowExecuteFrame(1));
    await new Promise((r) => setTimeout(r, 2_500));
    expect(quiet.outcome.closed).toBe(false);
    quiet.stream.write(slowExecuteFrame(1));
    quiet.stream.end();
    const q = await quiet.closed;
    expect(q.status).toBe('0');
    expect(q.chunks.length).toBeGreaterThanOrEqual(2);

    const stuck = open('ModelStreamInfer');
    stuck.stream.write(slowExecuteFrame(1));
    stuck.stream.write(slowExecuteFrame(1).subarray(0, 9));
    const s = await stuck.closed;
    expect(s.status).toBe('4');
    expect(s.chunks.length).toBeGreaterThanOrEqual(1);
    // The connection keeps serving.
    const ok = open('ModelInfer');
    ok.stream.end(slowExecuteFrame(1));
    expect((await ok.closed).status).toBe('0');
  }, 20_000);
});

describe('gRPC concurrent streams per connection', () => {
  const remoteMax = async (port: number) => {
    const s = http2.connect(`http://127.0.0.1:${port}`);
    s.on('error', () => {});
    const settings = await new Promise<http2.Settings>((resolve) => s.once('remoteSettings', resolve));
    s.destroy();
    return settings.maxConcurrentStreams;
  };

  it('announces the limit in its HTTP/2 SETTINGS (1024 by default) and runs calls past it only as earlier ones end', async () => {
    expect(await remoteMax(server.grpcPort!)).toBe(1024);
    const limited = await startTritium({ repos: [repo], args: ['--grpc-max-concurrent-streams=1'] });
    try {
      expect(await remoteMax(limited.grpcPort!)).toBe(1);
      // Two slow calls on one connection: the second starts once the first has ended, so the
      // pair takes at least two executions (the model has two instances, so without the limit
      // they would overlap).
      const session = http2.connect(`http://127.0.0.1:${limited.grpcPort}`);
      session.on('error', () => {});
      await new Promise((r) => session.once('remoteSettings', r));
      const frame = slowExecuteFrame(700);
      const call = () => {
        const stream = grpcCall(session, 'ModelInfer');
        const answer = watchCall(stream);
        stream.end(frame);
        return answer.done;
      };
      const t0 = performance.now();
      const [a, b] = await Promise.all([call(), call()]);
      expect([a.status, b.status]).toEqual(['0', '0']);
      expect(Math.max(a.closedAt!, b.closedAt!) - t0).toBeGreaterThanOrEqual(1400);
      session.destroy();
    } finally {
      await stopAndExpectNoShm(limited);
    }
  }, 60_000);
});
