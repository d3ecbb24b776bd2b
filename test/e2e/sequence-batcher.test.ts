/**
 * The sequence batcher end to end, with real stubs over HTTP (fetch) and tritonclient (gRPC
 * sync, async and streaming; HTTP): a sequence's requests reach one slot in order with the
 * controls Triton sets, direct batches carry fillers in empty rows (counted as Triton counts
 * them), sequences beyond the slots wait, idle sequences are released, cancelled and lost ones
 * free their slot, the oldest strategy, iterative sequences, and Triton 2.51's error texts.
 * The expected rows, batch sizes and statistics of the direct case were read off Triton 2.51
 * running the same model and requests.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWindows, perfAnalyzer, SEQUENCES_OVER_HTTP } from '../helpers/perf-analyzer.js';
import { editConfig, makeRepo, pythonResult, startTritium, stopAndExpectNoShm, type Tritium, writeModel } from '../helpers/server.js';

let server: Tritium;
let repo: string;

/** A copy of test model `from` named `name`, with its config edited. */
function variant(from: string, name: string, edit: (config: string) => string): void {
  fs.cpSync(path.join(repo, from), path.join(repo, name), { recursive: true });
  editConfig(repo, name, edit);
}

beforeAll(async () => {
  repo = makeRepo(['sequence_accum', 'sequence_iterative']);
  variant('sequence_accum', 'seq_oldest', (c) => c.replace('sequence_batching {', 'sequence_batching {\n  oldest { max_candidate_sequences: 2 }'));
  variant('sequence_accum', 'seq_one_slot', (c) => c.replace('max_batch_size: 4', 'max_batch_size: 1').replace('5000000', '1000000'));
  // One slot that no idle timeout frees during a test: only cancellation can.
  variant('sequence_accum', 'seq_cancel', (c) => c.replace('max_batch_size: 4', 'max_batch_size: 1').replace('5000000', '600000000'));
  variant('sequence_accum', 'seq_string', (c) => c.replace('data_type: TYPE_UINT64', 'data_type: TYPE_STRING'));
  // Holds a batch for up to 2 s until half of the 4 slots are ready.
  variant('sequence_accum', 'seq_delay', (c) =>
    c.replace('sequence_batching {', 'sequence_batching {\n  direct { max_queue_delay_microseconds: 2000000 minimum_slot_utilization: 0.5 }'),
  );
  variant('sequence_iterative', 'seq_iterative_plain', (c) => c.replace('decoupled: true', 'decoupled: false'));
  variant('sequence_iterative', 'seq_resched_off', (c) => c.replace('iterative_sequence: true', '').replace('decoupled: true', 'decoupled: false'));
  // Warmup samples reach an instance directly, without controls or an id (as in Triton 2.51).
  variant('sequence_accum', 'seq_warm', (c) =>
    c.replace(
      'instance_group',
      'model_warmup [{ name: "w" batch_size: 1 inputs { key: "INPUT" value: { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } } }]\ninstance_group',
    ),
  );
  // An ensemble whose step is a sequence model: the step sees the client's sequence parameters.
  writeModel(
    repo,
    'seq_ensemble',
    `platform: "ensemble"
max_batch_size: 4
input [{ name: "X" data_type: TYPE_INT32 dims: [ 1 ] }]
output [{ name: "SUM" data_type: TYPE_INT32 dims: [ 1 ] }]
ensemble_scheduling { step [{ model_name: "sequence_accum" model_version: -1 input_map { key: "INPUT" value: "X" } output_map { key: "OUTPUT" value: "SUM" } }] }
`,
  );
  server = await startTritium({ repos: [repo] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(repo, { recursive: true, force: true });
});

interface Info {
  start: number;
  end: number;
  ready: boolean;
  corrid: number | string;
  correlation_id: number | string;
  flags: number;
  row: number;
  batch: number;
  pid: number;
}

interface Answer {
  status: number;
  output?: number;
  info?: Info;
  error?: string;
}

async function infer(model: string, parameters: Record<string, unknown>, value: number, signal?: AbortSignal): Promise<Answer> {
  const body = JSON.stringify({ parameters, inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }] });
  const res = await fetch(`${server.http}/v2/models/${model}/infer`, { method: 'POST', body, signal });
  const json = (await res.json()) as { error?: string; outputs?: Array<{ name: string; data: unknown[] }> };
  if (json.error !== undefined) return { status: res.status, error: json.error };
  const out = Object.fromEntries(json.outputs!.map((o) => [o.name, o.data[0]]));
  return { status: res.status, output: out.OUTPUT as number, info: out.INFO === undefined ? undefined : (JSON.parse(out.INFO as string) as Info) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function stats(model: string) {
  const res = await fetch(`${server.http}/v2/models/${model}/stats`);
  const s = ((await res.json()) as { model_stats: any[] }).model_stats[0];
  return {
    executions: s.execution_count as number,
    inferences: s.inference_count as number,
    success: s.inference_stats.success.count as number,
    batches: (s.batch_stats as any[]).map((b) => [b.batch_size, b.compute_infer.count]),
  };
}

describe('one sequence over HTTP', () => {
  it('reaches the model in order with START, END, READY and CORRID, correlation_id() and flags()', async () => {
    const a = await infer('sequence_accum', { sequence_id: 7, sequence_start: true }, 5);
    const b = await infer('sequence_accum', { sequence_id: 7 }, 6);
    const c = await infer('sequence_accum', { sequence_id: 7, sequence_end: true }, 1);
    expect([a.output, b.output, c.output]).toEqual([5, 11, 12]);
    expect(a.info).toMatchObject({ start: 1, end: 0, ready: true, corrid: 7, correlation_id: 7, flags: 1 });
    expect(b.info).toMatchObject({ start: 0, end: 0, ready: true, corrid: 7, correlation_id: 7, flags: 0 });
    expect(c.info).toMatchObject({ start: 0, end: 1, ready: true, corrid: 7, correlation_id: 7, flags: 2 });
    // A one-request sequence: START and END together.
    const d = await infer('sequence_accum', { sequence_id: 8, sequence_start: true, sequence_end: true }, 3);
    expect(d.info).toMatchObject({ start: 1, end: 1, flags: 3 });
  });

  it("refuses with Triton 2.51's texts: no id, no START, a batch of 2", async () => {
    expect(await infer('sequence_accum', {}, 1)).toEqual({
      status: 400,
      error: "inference request to model 'sequence_accum' must specify a non-zero or non-empty correlation ID",
    });
    expect(await infer('sequence_accum', { sequence_id: 0, sequence_start: true }, 1)).toMatchObject({ status: 400 });
    // After END the id is free: its next request needs START again.
    await infer('sequence_accum', { sequence_id: 9, sequence_start: true, sequence_end: true }, 1);
    expect(await infer('sequence_accum', { sequence_id: 9 }, 1)).toEqual({
      status: 400,
      error: "inference request for sequence 9 to model 'sequence_accum' must specify the START flag on the first request of the sequence",
    });
    const body = JSON.stringify({
      parameters: { sequence_id: 10, sequence_start: true },
      inputs: [{ name: 'INPUT', shape: [2, 1], datatype: 'INT32', data: [1, 2] }],
    });
    const res = await fetch(`${server.http}/v2/models/sequence_accum/infer`, { method: 'POST', body });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe(
      "inference request to model 'sequence_accum' must specify batch-size 1 due to requirements of sequence batcher",
    );
  });

  it('refuses a string id for a numeric CORRID, and the reverse (Triton 2.51 passes the bytes through)', async () => {
    expect(await infer('sequence_accum', { sequence_id: 'abc', sequence_start: true }, 1)).toEqual({
      status: 400,
      error: "sequence batching control 'CORRID' data-type is 'BYTES', but model 'sequence_accum' expects 'UINT64'",
    });
    const body = JSON.stringify({
      id: 'r1',
      parameters: { sequence_id: 5, sequence_start: true },
      inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [1] }],
    });
    const res = await fetch(`${server.http}/v2/models/seq_string/infer`, { method: 'POST', body });
    expect(((await res.json()) as { error: string }).error).toBe(
      "[request id: r1] sequence batching control 'CORRID' data-type is 'UINT64', but model 'seq_string' expects 'BYTES'",
    );
  });

  it('keeps string ids apart from numeric ones, and gives a string CORRID the string', async () => {
    const s = await infer('seq_string', { sequence_id: 'user-42', sequence_start: true }, 2);
    expect(s.info).toMatchObject({ corrid: 'user-42', correlation_id: 'user-42', flags: 1 });
    const t = await infer('seq_string', { sequence_id: 'user-42', sequence_end: true }, 3);
    expect(t.output).toBe(5);
    // 42 and "42" are two sequences: "42" was never started.
    await infer('sequence_accum', { sequence_id: 42, sequence_start: true }, 1);
    const mixed = await infer('seq_string', { sequence_id: '42' }, 1);
    expect(mixed.error).toContain("inference request for sequence 42 to model 'seq_string' must specify the START flag");
    await infer('sequence_accum', { sequence_id: 42, sequence_end: true }, 1);
  });
});

describe('the direct strategy', () => {
  it('gives each sequence a row of its own, fills empty rows, and counts as Triton counts', async () => {
    const before = await stats('sequence_accum');
    // Sequence 1 holds the instance for a second; 2 and 3 start meanwhile, and 1 sends again.
    const first = infer('sequence_accum', { sequence_id: 101, sequence_start: true, delay_ms: 1000 }, 10);
    await sleep(100);
    const two = infer('sequence_accum', { sequence_id: 102, sequence_start: true }, 20);
    await sleep(20);
    const three = infer('sequence_accum', { sequence_id: 103, sequence_start: true }, 30);
    await sleep(20);
    const again = infer('sequence_accum', { sequence_id: 101 }, 1);
    const [a, b, c, d] = await Promise.all([first, two, three, again]);
    // Then sequence 3 alone: rows 0 and 1 are fillers.
    const e = await infer('sequence_accum', { sequence_id: 103, sequence_end: true }, 3);
    const f = await infer('sequence_accum', { sequence_id: 101, sequence_end: true }, 2);
    const g = await infer('sequence_accum', { sequence_id: 102, sequence_end: true }, 2);
    const row = (x: Answer) => [x.output, x.info!.row, x.info!.batch];
    expect(row(a)).toEqual([10, 0, 1]);
    expect([row(d), row(b), row(c)]).toEqual([
      [11, 0, 3],
      [20, 1, 3],
      [30, 2, 3],
    ]);
    expect(row(e)).toEqual([33, 2, 3]);
    expect(row(f)).toEqual([13, 0, 1]);
    expect(row(g)).toEqual([22, 1, 2]);
    const after = await stats('sequence_accum');
    // Triton 2.51 on the same requests: 5 executions, 7 inferences; batch sizes count fillers.
    expect(after.executions - before.executions).toBe(5);
    expect(after.inferences - before.inferences).toBe(7);
    expect(after.success - before.success).toBe(7);
    const grown = (size: number) => (after.batches.find((x) => x[0] === size)?.[1] ?? 0) - (before.batches.find((x) => x[0] === size)?.[1] ?? 0);
    expect([grown(1), grown(2), grown(3)]).toEqual([2, 1, 2]);
  });

  it('waits up to max_queue_delay_microseconds for minimum_slot_utilization, and no longer once it is reached', async () => {
    const started = performance.now();
    const first = infer('seq_delay', { sequence_id: 1, sequence_start: true }, 1);
    await sleep(100);
    const second = infer('seq_delay', { sequence_id: 2, sequence_start: true }, 2);
    const [a, b] = await Promise.all([first, second]);
    // Two of four slots ready (0.5): one batch, sent when the second arrived, not after 2 s.
    expect([a.info!.batch, b.info!.batch]).toEqual([2, 2]);
    expect(performance.now() - started).toBeLessThan(1900);
    // One ready slot alone waits the whole delay, then runs.
    const t0 = performance.now();
    const c = await infer('seq_delay', { sequence_id: 1, sequence_end: true }, 1);
    expect(c.output).toBe(2);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(1900);
    await infer('seq_delay', { sequence_id: 2, sequence_end: true }, 1);
  });

  it('holds a sequence beyond the slots in the backlog until a slot frees, never dropping it', async () => {
    const a = await infer('seq_one_slot', { sequence_id: 1, sequence_start: true }, 1);
    expect(a.output).toBe(1);
    let settled = false;
    const waiting = infer('seq_one_slot', { sequence_id: 2, sequence_start: true }, 100).finally(() => (settled = true));
    await sleep(100);
    expect(settled).toBe(false);
    const b = await infer('seq_one_slot', { sequence_id: 1, sequence_end: true }, 2);
    expect(b.output).toBe(3);
    expect((await waiting).output).toBe(100);
    expect((await infer('seq_one_slot', { sequence_id: 2, sequence_end: true }, 1)).output).toBe(101);
  });

  it('releases a sequence idle past max_sequence_idle_microseconds: its next request needs START, and the backlog moves', async () => {
    await infer('seq_one_slot', { sequence_id: 11, sequence_start: true }, 1);
    const waiting = infer('seq_one_slot', { sequence_id: 12, sequence_start: true }, 7);
    // One second idle: sequence 11 loses its slot and sequence 12 gets it.
    expect((await waiting).output).toBe(7);
    expect(await infer('seq_one_slot', { sequence_id: 11 }, 1)).toEqual({
      status: 400,
      error: "inference request for sequence 11 to model 'seq_one_slot' must specify the START flag on the first request of the sequence",
    });
    await infer('seq_one_slot', { sequence_id: 12, sequence_end: true }, 0);
  });

  it('fails a backlogged sequence at its timeout with Triton 2.51 text', async () => {
    await infer('seq_one_slot', { sequence_id: 21, sequence_start: true }, 1);
    const timedOut = await infer('seq_one_slot', { sequence_id: 22, sequence_start: true, timeout: 100_000 }, 1);
    expect(timedOut).toEqual({ status: 503, error: 'timeout of the corresponding sequence has been expired' });
    await infer('seq_one_slot', { sequence_id: 21, sequence_end: true }, 1);
  });

  it('cancels the rest of a sequence whose queued request was cancelled (gRPC), and frees its slot', async () => {
    const res = await pythonResult(
      `import json, queue, time, numpy as np\nimport tritonclient.grpc as g\nc = g.InferenceServerClient('127.0.0.1:${server.grpcPort}')`,
      `
def inp(v):
    t = g.InferInput("INPUT", [1, 1], "INT32"); t.set_data_from_numpy(np.array([[v]], np.int32)); return [t]
out = lambda r: int(r.as_numpy("OUTPUT").reshape(-1)[0])
c.infer("seq_cancel", inp(1), sequence_id=31, sequence_start=True)
done = queue.Queue()
c.async_infer("seq_cancel", inp(1), lambda result, error: done.put(("busy", result, error)), sequence_id=31, parameters={"delay_ms": 800})
time.sleep(0.1)
queued = c.async_infer("seq_cancel", inp(1), lambda result, error: done.put(("cancelled", result, error)), sequence_id=31)
time.sleep(0.1)
queued.cancel()
# Sequence 32 waits for the one slot: only the cancellation frees it (no idle timeout will).
c.async_infer("seq_cancel", inp(5), lambda result, error: done.put(("next", result, error)), sequence_id=32, sequence_start=True)
got = {}
for _ in range(3):
    name, result, error = done.get(timeout=30)
    got[name] = str(error) if error is not None else out(result)
res["got"] = got
try:
    c.infer("seq_cancel", inp(1), sequence_id=31)
except Exception as ex:
    res["after"] = ex.message()
c.infer("seq_cancel", inp(1), sequence_id=32, sequence_end=True)
`,
    );
    expect(res.got.busy).toBe(2);
    expect(res.got.cancelled).toMatch(/CANCELLED/i);
    expect(res.got.next).toBe(5);
    expect(res.after).toContain("inference request for sequence 31 to model 'seq_cancel' must specify the START flag");
  });
});

describe('the oldest strategy', () => {
  it('batches the heads of several sequences, each in order, and backlogs beyond the candidates', async () => {
    const seqs = [201, 202, 203];
    const results = await Promise.all(
      seqs.map(async (id, k) => {
        const sums: number[] = [];
        for (let step = 0; step < 5; step++) {
          const params: Record<string, unknown> = { sequence_id: id, delay_ms: 20 };
          if (step === 0) params.sequence_start = true;
          if (step === 4) params.sequence_end = true;
          const r = await infer('seq_oldest', params, k + 1);
          expect(r.error).toBeUndefined();
          expect(r.info!.correlation_id).toBe(id);
          sums.push(r.output!);
        }
        return sums;
      }),
    );
    expect(results).toEqual([1, 2, 3].map((v) => [1, 2, 3, 4, 5].map((n) => n * v)));
    const s = await stats('seq_oldest');
    expect(s.success).toBe(15);
    // Two candidates: batches of one or two, never three.
    expect(s.batches.every(([size]) => size <= 2)).toBe(true);
  });
});

describe('iterative sequences', () => {
  it('runs a request until the model stops rescheduling it (non-decoupled, HTTP, auto id)', async () => {
    const body = JSON.stringify({ inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [4] }] });
    const res = await fetch(`${server.http}/v2/models/seq_iterative_plain/infer`, { method: 'POST', body });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).outputs[0].data).toEqual([4]);
    const s = await stats('seq_iterative_plain');
    expect(s.executions).toBe(4);
    expect(s.success).toBe(1);
  });

  it('streams every iteration of a decoupled model over gRPC, two sequences at once', async () => {
    const res = await pythonResult(
      `import json, queue, numpy as np\nimport tritonclient.grpc as g\nc = g.InferenceServerClient('127.0.0.1:${server.grpcPort}')`,
      `
q = queue.Queue()
c.start_stream(callback=lambda result, error: q.put((result, error)))
def inp(v):
    t = g.InferInput("INPUT", [1, 1], "INT32"); t.set_data_from_numpy(np.array([[v]], np.int32)); return t
c.async_stream_infer("sequence_iterative", [inp(3)], request_id="a")
c.async_stream_infer("sequence_iterative", [inp(2)], request_id="b")
got = {"a": [], "b": []}
finals = 0
while finals < 2:
    r, e = q.get(timeout=30)
    if e is not None:
        res["error"] = str(e); break
    resp = r.get_response()
    final = resp.parameters["triton_final_response"].bool_param
    got[resp.id].append([int(r.as_numpy("OUTPUT")[0]), final])
    finals += final
c.stop_stream()
res["got"] = got
`,
    );
    expect(res.error).toBeUndefined();
    expect(res.got).toEqual({
      a: [
        [1, false],
        [2, false],
        [3, true],
      ],
      b: [
        [1, false],
        [2, true],
      ],
    });
  });

  it("answers RESCHEDULE on a model that is not iterative with Triton's text", async () => {
    const r = await infer('seq_resched_off', { sequence_id: 1, sequence_start: true }, 3);
    expect(r).toEqual({
      status: 400,
      error: 'Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a flag.',
    });
  });
});

describe('tritonclient', () => {
  it('sync and async gRPC, a stream, and HTTP, with numeric and string ids', async () => {
    const res = await pythonResult(
      `import json, queue, numpy as np\nimport tritonclient.grpc as g\nimport tritonclient.http as h
gc = g.InferenceServerClient('127.0.0.1:${server.grpcPort}')
hc = h.InferenceServerClient('127.0.0.1:${server.httpPort}')
def inp(mod, v):
    t = mod.InferInput("INPUT", [1, 1], "INT32"); t.set_data_from_numpy(np.array([[v]], np.int32)); return [t]`,
      `
out = lambda r: int(r.as_numpy("OUTPUT")[0])
seq = []
seq.append(out(gc.infer("sequence_accum", inp(g, 1), sequence_id=301, sequence_start=True)))
seq.append(out(hc.infer("sequence_accum", inp(h, 2), sequence_id=301)))
done = queue.Queue()
gc.async_infer("sequence_accum", inp(g, 3), lambda result, error: done.put((result, error)), sequence_id=301)
r, e = done.get(timeout=30)
seq.append(out(r))
seq.append(out(hc.async_infer("sequence_accum", inp(h, 4), sequence_id=301, sequence_end=True).get_result()))
res["numeric"] = seq
q = queue.Queue()
gc.start_stream(callback=lambda result, error: q.put((result, error)))
for k, v in enumerate([5, 6, 7]):
    gc.async_stream_infer("seq_string", inp(g, v), sequence_id="s-301", sequence_start=(k == 0), sequence_end=(k == 2))
stream = []
for _ in range(3):
    r, e = q.get(timeout=30)
    stream.append(str(e) if e is not None else out(r))
gc.stop_stream()
res["stream"] = stream
try:
    gc.infer("sequence_accum", inp(g, 1), sequence_id=302)
except Exception as ex:
    res["grpc_error"] = [ex.status(), ex.message()]
`,
    );
    expect(res.numeric).toEqual([1, 3, 6, 10]);
    expect(res.stream).toEqual([5, 11, 18]);
    expect(res.grpc_error).toEqual([
      'StatusCode.INVALID_ARGUMENT',
      "inference request for sequence 302 to model 'sequence_accum' must specify the START flag on the first request of the sequence",
    ]);
  });
});

describe('around the batcher', () => {
  it('warms a sequence model up (samples without controls) and serves it', async () => {
    const index = (await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as Array<{ name: string; state: string }>;
    expect(index.find((m) => m.name === 'seq_warm')?.state).toBe('READY');
    expect((await infer('seq_warm', { sequence_id: 1, sequence_start: true, sequence_end: true }, 4)).output).toBe(4);
  });

  it('runs a sequence model as an ensemble step with the sequence of the request to the ensemble', async () => {
    const step = async (parameters: Record<string, unknown>, x: number) => {
      const body = JSON.stringify({ parameters, inputs: [{ name: 'X', shape: [1, 1], datatype: 'INT32', data: [x] }] });
      const json = (await (await fetch(`${server.http}/v2/models/seq_ensemble/infer`, { method: 'POST', body })).json()) as any;
      return json.error ?? json.outputs[0].data[0];
    };
    expect(await step({ sequence_id: 501, sequence_start: true }, 2)).toBe(2);
    expect(await step({ sequence_id: 501 }, 3)).toBe(5);
    expect(await step({ sequence_id: 501, sequence_end: true }, 4)).toBe(9);
    expect(await step({ sequence_id: 501 }, 1)).toContain('must specify the START flag');
  });

  it('lists the sequence extension and shows the batcher in the model config', async () => {
    const meta = (await (await fetch(`${server.http}/v2`)).json()) as { extensions: string[] };
    expect(meta.extensions).toContain('sequence');
    const config = (await (await fetch(`${server.http}/v2/models/seq_oldest/config`)).json()) as any;
    expect(config.sequence_batching.oldest).toMatchObject({ max_candidate_sequences: 2, preferred_batch_size: [4] });
    expect(config.sequence_batching.max_sequence_idle_microseconds).toBe(5000000);
    expect(config.sequence_batching.control_input.map((c: { name: string }) => c.name)).toEqual(['START', 'END', 'READY', 'CORRID']);
  });

  it('fails the queued requests of a sequence whose stub died, says why to its next request, and serves new sequences after the restart', async () => {
    const a = await infer('seq_one_slot', { sequence_id: 41, sequence_start: true }, 1);
    const busy = infer('seq_one_slot', { sequence_id: 41, delay_ms: 1000 }, 1);
    await sleep(100);
    const queued = infer('seq_one_slot', { sequence_id: 41 }, 1);
    await sleep(50);
    process.kill(a.info!.pid, 'SIGKILL');
    expect((await busy).status).toBe(500);
    const q = await queued;
    expect(q.status).toBe(503);
    expect(q.error).toMatch(/^sequence 41 of model 'seq_one_slot' is lost: its instance seq_one_slot_0_0 stopped \(.+\) and its state went with it/);
    const next = await infer('seq_one_slot', { sequence_id: 41 }, 1);
    expect(next.error).toMatch(/^sequence 41 of model 'seq_one_slot' is lost/);
    // Once the instance is back, a new sequence runs on it.
    let fresh: Answer | undefined;
    for (let i = 0; i < 200; i++) {
      fresh = await infer('seq_one_slot', { sequence_id: 42, sequence_start: true, sequence_end: true }, 9);
      if (fresh.output !== undefined) break;
      await sleep(50);
    }
    expect(fresh?.output).toBe(9);
    expect(fresh?.info?.pid).not.toBe(a.info!.pid);
  });
});

describe('perf_analyzer --sequence-length=8', () => {
  // Sequences of 8 requests with random values (the model wraps its sums as int32), 4 at once;
  // over HTTP with synchronous calls (SEQUENCES_OVER_HTTP says why).
  const cases: Array<[string, string[]]> = [
    ['HTTP, direct', ['-m', 'sequence_accum', '-i', 'http', ...SEQUENCES_OVER_HTTP]],
    ['gRPC, oldest', ['-m', 'seq_oldest', '-i', 'grpc']],
    ['gRPC streaming, direct', ['-m', 'sequence_accum', '-i', 'grpc', '--streaming']],
  ];
  for (const [what, args] of cases) {
    it(what, async () => {
      const port = args.includes('grpc') ? server.grpcPort : server.httpPort;
      const { code, out } = await perfAnalyzer([...args, '-u', `127.0.0.1:${port}`, '--sequence-length=8', '--concurrency-range', '4', ...countWindows(100)]);
      expect(code, out).toBe(0);
      expect(out).not.toMatch(/error|failed/i);
      expect(out).toMatch(/Concurrency: 4, throughput: [\d.]+ infer\/sec/);
    });
  }
});
