/**
 * Ensembles end to end, with the real CLI, real stubs and real clients (docs/design.md,
 * "Ensembles"; Triton facts in docs/protocol-notes.md, "Ensembles"):
 * - add_sub + an ensemble of it, the shape of Triton's python_backend example, through
 *   tritonclient.http and tritonclient.grpc unchanged (infer, metadata, the config fields
 *   perf_analyzer reads), and perf_analyzer profiling it with its composing model;
 * - parallel branches that overlap (from the timestamps the models record) and a join that
 *   starts after both;
 * - a decoupled step whose every response flows on (gRPC stream; HTTP refuses the ensemble);
 * - a failing step failing the ensemble request with its error, the step after it never run;
 * - a client that goes away cancelling the ensemble request and the steps not started;
 * - statistics of the ensemble (compute = the sums of its steps', as Triton 2.51) and of the
 *   composing models;
 * - warmup of an ensemble with real intermediate tensors (beyond Triton);
 * - readiness that follows the composing model's (a step's stub that dies and restarts);
 * - every load-time check with its text, in the index and the log;
 * - explicit mode: loading an ensemble loads its composing models, the index shows them,
 *   unloading a composing model unloads the ensemble, and unload_dependents on the ensemble
 *   unloads its composing models.
 *
 * Models: test/models/{stamp_sleep, stamp_join, count_up, negative_fails, ensemble_*} and
 * python_models/add_sub.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWindows, perfAnalyzer } from '../helpers/perf-analyzer.js';
import { postThenReset } from '../helpers/raw-http.js';
import { makeRepo, pythonResult, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const MODELS = [
  'add_sub',
  'stamp_sleep',
  'stamp_join',
  'count_up',
  'negative_fails',
  'ensemble_add_sub',
  'ensemble_parallel',
  'ensemble_decoupled',
  'ensemble_step_error',
  'ensemble_warmup',
  'ensemble_nested',
  'ensemble_decoupled_join',
];

async function post(t: Tritium, p: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${t.http}${p}`, { method: 'POST', body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

async function get(t: Tritium, p: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`${t.http}${p}`);
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const index = async (t: Tritium) => (await post(t, '/v2/repository/index')).json as Array<Record<string, string>>;
const stats = async (t: Tritium, model: string) => (await get(t, `/v2/models/${model}/stats`)).json.model_stats[0];

async function eventuallyReady(t: Tritium, model: string): Promise<boolean> {
  for (let i = 0; i < 600; i++) {
    if ((await get(t, `/v2/models/${model}/ready`)).status === 200) return true;
    await new Promise((res) => setTimeout(res, 50));
  }
  return false;
}

function outputs(json: any): Record<string, number[]> {
  return Object.fromEntries((json.outputs as Array<{ name: string; data: number[] }>).map((o) => [o.name, o.data]));
}

const addSubBody = (a: number[], b: number[], requested?: string[]) => ({
  inputs: [
    { name: 'A', datatype: 'FP32', shape: [4], data: a },
    { name: 'B', datatype: 'FP32', shape: [4], data: b },
  ],
  ...(requested ? { outputs: requested.map((name) => ({ name })) } : {}),
});

/** Every input value the stamp_sleep instances of `repo` recorded (one `seen-<pid>` file each). */
function stampSleepSeen(repo: string): string[] {
  const dir = path.join(repo, 'stamp_sleep');
  return fs
    .readdirSync(dir)
    .filter((f) => f.startsWith('seen-'))
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').trim().split('\n'));
}
describe('ensembles served', () => {
  let t: Tritium;
  let repo: string;

  beforeAll(async () => {
    repo = makeRepo(MODELS);
    t = await startTritium({ repos: [repo] });
  }, 120_000);

  afterAll(async () => {
    await stopAndExpectNoShm(t);
  });

  it('warms an ensemble up with real intermediate tensors before it serves (beyond Triton)', async () => {
    // The sample X = 5 reached step 0 (saw 5, wrote 6), then step 1 (saw 6); nothing else ran yet.
    expect(stampSleepSeen(repo).sort()).toEqual(['5', '6']);
    expect(t.log()).toContain("successfully loaded 'ensemble_warmup'");
    // Warmup requests are not the ensemble's statistics.
    expect((await stats(t, 'ensemble_warmup')).inference_stats.success.count).toBe(0);
  });

  it('answers an ensemble over HTTP like any model: metadata, config, readiness, outputs', async () => {
    const meta = await get(t, '/v2/models/ensemble_add_sub');
    expect(meta.json).toEqual({
      name: 'ensemble_add_sub',
      versions: ['1'],
      platform: 'ensemble',
      inputs: [
        { name: 'A', datatype: 'FP32', shape: [4] },
        { name: 'B', datatype: 'FP32', shape: [4] },
      ],
      outputs: [
        { name: 'SUM', datatype: 'FP32', shape: [4] },
        { name: 'DIFF', datatype: 'FP32', shape: [4] },
        { name: 'FIRST_DIFF', datatype: 'FP32', shape: [4] },
      ],
    });
    const config = (await get(t, '/v2/models/ensemble_add_sub/config')).json;
    // As tritonserver 2.51 renders an ensemble: no optimization, no instance groups, the policy always.
    expect(config.platform).toBe('ensemble');
    expect(config.backend).toBe('');
    expect(config.instance_group).toEqual([]);
    expect(config.optimization).toBeUndefined();
    expect(config.model_transaction_policy).toEqual({ decoupled: false });
    expect(config.ensemble_scheduling.step.map((s: any) => s.model_version)).toEqual([-1, 1]);
    // Ready as its composing model is (which a loaded host may see restarting: wait, bounded).
    expect(await eventuallyReady(t, 'ensemble_add_sub'), t.log().slice(-2000)).toBe(true);

    const r = await post(t, '/v2/models/ensemble_add_sub/infer', addSubBody([1, 2, 3, 4], [0.5, 0.5, 0.5, 0.5]));
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.model_name).toBe('ensemble_add_sub');
    expect(r.json.model_version).toBe('1');
    expect(outputs(r.json)).toEqual({ SUM: [2, 4, 6, 8], DIFF: [1, 1, 1, 1], FIRST_DIFF: [0.5, 1.5, 2.5, 3.5] });

    const some = await post(t, '/v2/models/ensemble_add_sub/infer', addSubBody([1, 2, 3, 4], [1, 1, 1, 1], ['FIRST_DIFF']));
    expect(outputs(some.json)).toEqual({ FIRST_DIFF: [0, 1, 2, 3] });

    const bad = await post(t, '/v2/models/ensemble_add_sub/infer', { inputs: [addSubBody([1, 2, 3, 4], [1, 1, 1, 1]).inputs[0]] });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toContain("expected 2 inputs but got 1 inputs for model 'ensemble_add_sub'");
  });

  it('serves an ensemble of an ensemble, whose compute time includes the inner steps', async () => {
    const r = await post(t, '/v2/models/ensemble_nested/infer', addSubBody([1, 2, 3, 4], [9, 9, 9, 9]));
    expect(r.status).toBe(200);
    expect(outputs(r.json)).toEqual({ OUT: [2, 4, 6, 8] });
    const s = await stats(t, 'ensemble_nested');
    expect(s.execution_count).toBe(1);
    expect(s.inference_stats.compute_infer.count).toBe(1);
    expect(s.inference_stats.compute_infer.ns).toBeGreaterThan(0);
  });

  it('runs independent branches at the same time and a join after both', async () => {
    const r = await post(t, '/v2/models/ensemble_parallel/infer', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1], data: [1] }] });
    expect(r.status).toBe(200);
    const o = outputs(r.json);
    expect(o.SUM).toEqual([4]);
    const [aStart, aEnd, bStart, bEnd, join] = [o.A_START![0]!, o.A_END![0]!, o.B_START![0]!, o.B_END![0]!, o.JOIN_START![0]!];
    // Each branch started before the other ended: their executions overlapped.
    expect(aStart).toBeLessThan(bEnd);
    expect(bStart).toBeLessThan(aEnd);
    expect(join).toBeGreaterThanOrEqual(Math.max(aEnd, bEnd));
  });

  it('feeds every response of a decoupled step to the next step (gRPC stream); HTTP refuses the decoupled ensemble', async () => {
    const config = (await get(t, '/v2/models/ensemble_decoupled/config')).json;
    expect(config.model_transaction_policy).toEqual({ decoupled: true });
    const http = await post(t, '/v2/models/ensemble_decoupled/infer', { inputs: [{ name: 'N', datatype: 'INT32', shape: [1], data: [3] }] });
    expect(http.status).toBe(501);
    const res = await pythonResult(
      String.raw`
import json, queue
import numpy as np
import tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${t.grpcPort}")`,
      String.raw`
q = queue.Queue()
def on_item(result, error):
    if error:
        q.put(("error", error.message()))
    else:
        out = result.as_numpy("OUT")
        final = result.get_response().parameters["triton_final_response"].bool_param
        q.put(("out", None if out is None else out.tolist(), final))
c.start_stream(callback=on_item)
t = g.InferInput("N", [1], "INT32")
t.set_data_from_numpy(np.array([3], dtype=np.int32))
c.async_stream_infer("ensemble_decoupled", [t], enable_empty_final_response=True)
items = []
while True:
    item = q.get(timeout=60)
    items.append(item)
    if item[0] == "error" or item[2]:
        break
c.stop_stream()
res["items"] = items`,
    );
    const values = res.items.filter((i: any[]) => i[0] === 'out' && i[1] !== null).map((i: any[]) => i[1][0]);
    expect(values.sort()).toEqual([1, 2, 3]);
    expect(res.items.at(-1)).toEqual(['out', null, true]);
  });

  it('cancels an ensemble request whose client went away: it fails, and the steps not started never run', async () => {
    const join = await stats(t, 'stamp_join');
    const own = await stats(t, 'ensemble_parallel');
    const branches = await stats(t, 'stamp_sleep');
    const body = JSON.stringify({ inputs: [{ name: 'X', datatype: 'FP32', shape: [1], data: [7] }] });
    const reset = postThenReset(t.httpPort, '/v2/models/ensemble_parallel/infer', body);
    // Reset the connection once both branches run (each records its input before sleeping 300 ms).
    const seen = () => stampSleepSeen(repo).filter((v) => v === '7').length;
    for (let i = 0; i < 600 && seen() < 2; i++) await new Promise((res) => setTimeout(res, 10));
    reset();
    // The branches finish (they do not look at is_cancelled); the ensemble then counts a failure.
    for (let i = 0; i < 600; i++) {
      const done = (await stats(t, 'stamp_sleep')).inference_stats.success.count - branches.inference_stats.success.count;
      const failed = (await stats(t, 'ensemble_parallel')).inference_stats.fail.count - own.inference_stats.fail.count;
      if (done === 2 && failed === 1) break;
      await new Promise((res) => setTimeout(res, 20));
    }
    expect((await stats(t, 'ensemble_parallel')).inference_stats.fail.count - own.inference_stats.fail.count).toBe(1);
    expect((await stats(t, 'stamp_sleep')).inference_stats.success.count - branches.inference_stats.success.count).toBe(2);
    expect((await stats(t, 'stamp_join')).inference_stats.success.count).toBe(join.inference_stats.success.count);
  });

  it("pairs each response of a decoupled step with a plain step's one value", async () => {
    const res = await pythonResult(
      String.raw`
import json, queue
import numpy as np
import tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${t.grpcPort}")`,
      String.raw`
q = queue.Queue()
c.start_stream(callback=lambda result, error: q.put(error.message() if error else result))
n = g.InferInput("N", [1], "INT32")
n.set_data_from_numpy(np.array([4], dtype=np.int32))
x = g.InferInput("X", [1], "FP32")
x.set_data_from_numpy(np.array([10], dtype=np.float32))
c.async_stream_infer("ensemble_decoupled_join", [n, x], enable_empty_final_response=True)
sums = []
while True:
    r = q.get(timeout=60)
    if isinstance(r, str):
        sums.append(r)
        break
    if r.as_numpy("SUM") is not None:
        sums.append(float(r.as_numpy("SUM")[0]))
    if r.get_response().parameters["triton_final_response"].bool_param:
        break
c.stop_stream()
res["sums"] = sums`,
    );
    expect([...res.sums].sort()).toEqual([11, 12, 13, 14]);
  });

  it("fails the ensemble request with a failing step's error; the step after it never runs", async () => {
    const before = await stats(t, 'stamp_join');
    const r = await post(t, '/v2/models/ensemble_step_error/infer', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1], data: [-2] }] });
    expect(r.status).toBe(500);
    // The step's code and text, prefixed as tritonserver 2.51 does.
    expect(r.json.error).toBe("in ensemble 'ensemble_step_error', negative_fails refuses -2");
    const ok = await post(t, '/v2/models/ensemble_step_error/infer', { inputs: [{ name: 'X', datatype: 'FP32', shape: [1], data: [2] }] });
    expect(outputs(ok.json)).toEqual({ Y: [4] });
    const after = await stats(t, 'stamp_join');
    expect(after.inference_stats.success.count - before.inference_stats.success.count).toBe(1);
    const own = await stats(t, 'ensemble_step_error');
    expect(own.inference_stats.fail.count).toBeGreaterThanOrEqual(1);
  });

  it("accounts an ensemble as Triton does: one execution per request, compute = its steps' sums", async () => {
    const before = await stats(t, 'ensemble_add_sub');
    const compBefore = await stats(t, 'add_sub');
    const n = 5;
    for (let i = 0; i < n; i++) await post(t, '/v2/models/ensemble_add_sub/infer', addSubBody([i, 0, 0, 0], [1, 1, 1, 1]));
    const ens = await stats(t, 'ensemble_add_sub');
    const comp = await stats(t, 'add_sub');
    const ran = ens.inference_stats.success.count;
    expect(ran - before.inference_stats.success.count).toBe(n);
    expect(ens.execution_count).toBe(ran);
    expect(ens.inference_count).toBe(ran);
    expect(ens.inference_stats.queue.count).toBe(ran);
    // Two add_sub requests per ensemble request (each its own execution without a batcher).
    expect(comp.inference_stats.success.count - compBefore.inference_stats.success.count).toBe(2 * n);
    expect(comp.execution_count - compBefore.execution_count).toBe(2 * n);
    // add_sub is called only by the ensemble here: its compute time is the ensemble's.
    for (const phase of ['compute_input', 'compute_infer', 'compute_output']) {
      expect(ens.inference_stats[phase].count).toBe(ran);
      expect(ens.inference_stats[phase].ns).toBe(comp.inference_stats[phase].ns);
    }
    // Steps that lead to no requested output do not run (Triton prunes them too).
    await post(t, '/v2/models/ensemble_add_sub/infer', addSubBody([1, 2, 3, 4], [1, 1, 1, 1], ['FIRST_DIFF']));
    expect((await stats(t, 'add_sub')).inference_stats.success.count).toBe(comp.inference_stats.success.count + 1);
    expect(ens.batch_stats).toEqual([
      {
        batch_size: 1,
        compute_input: ens.inference_stats.compute_input,
        compute_infer: ens.inference_stats.compute_infer,
        compute_output: ens.inference_stats.compute_output,
      },
    ]);
  });

  it('serves add_sub + its ensemble (the shape of Triton’s python_backend example) to tritonclient.http and tritonclient.grpc unchanged', async () => {
    const res = await pythonResult(
      String.raw`
import json
import numpy as np
import tritonclient.grpc as tg
import tritonclient.http as th`,
      String.raw`
a = np.array([1.5, 2, 3, 4], dtype=np.float32)
b = np.array([0.5, 1, 1, 1], dtype=np.float32)
for kind, mod, url in (("http", th, "127.0.0.1:${t.httpPort}"), ("grpc", tg, "127.0.0.1:${t.grpcPort}")):
    c = mod.InferenceServerClient(url)
    ia = mod.InferInput("A", [4], "FP32"); ia.set_data_from_numpy(a)
    ib = mod.InferInput("B", [4], "FP32"); ib.set_data_from_numpy(b)
    r = c.infer("ensemble_add_sub", [ia, ib], outputs=[mod.InferRequestedOutput("SUM"), mod.InferRequestedOutput("DIFF")])
    cfg = c.get_model_config("ensemble_add_sub") if kind == "http" else c.get_model_config("ensemble_add_sub", as_json=True)["config"]
    res[kind] = {
        "sum": r.as_numpy("SUM").tolist(),
        "diff": r.as_numpy("DIFF").tolist(),
        "ready": c.is_model_ready("ensemble_add_sub"),
        "platform": cfg["platform"],
        "versions": [int(s.get("model_version", 0)) for s in cfg["ensemble_scheduling"]["step"]],
    }`,
    );
    for (const kind of ['http', 'grpc']) {
      expect(res[kind]).toEqual({ sum: [3, 4, 6, 8], diff: [1, 2, 2, 2], ready: true, platform: 'ensemble', versions: [-1, 1] });
    }
  });
});

/** Ensembles that fail to load, each with the text tritonserver 2.51 gives for it. */
const HEAD = `platform: "ensemble"
max_batch_size: 0
input [ { name: "A" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "B" data_type: TYPE_FP32 dims: [ 4 ] } ]`;
const ADD_SUB = (inputs: string, outputs: string, version = -1) => `{ model_name: "add_sub" model_version: ${version} ${inputs} ${outputs} }`;
const AB = 'input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" }';
const OUT_SUM = 'output [ { name: "SUM" data_type: TYPE_FP32 dims: [ 4 ] } ]';

const INVALID: Record<string, { config: string; text: string }> = {
  bad_no_scheduling: { config: `${HEAD}\n${OUT_SUM}`, text: 'ensemble scheduling must be set for ensemble bad_no_scheduling whose platform is ensemble' },
  bad_unknown_model: {
    config: `${HEAD}\n${OUT_SUM}\nensemble_scheduling { step [ { model_name: "nope" model_version: -1 input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "B" } output_map { key: "OUTPUT0" value: "SUM" } } ] }`,
    text: 'ensemble bad_unknown_model contains models that are not available or ambiguous: nope',
  },
  bad_version: {
    config: `${HEAD}\n${OUT_SUM}\nensemble_scheduling { step [ ${ADD_SUB(AB, 'output_map { key: "OUTPUT0" value: "SUM" }', 7)} ] }`,
    text: "ensemble 'bad_version' depends on 'add_sub' whose required version 7 is not loaded.",
  },
  bad_unproduced: {
    config: `${HEAD}\n${OUT_SUM}\nensemble_scheduling { step [ ${ADD_SUB(AB, 'output_map { key: "OUTPUT0" value: "T" }')}, ${ADD_SUB('input_map { key: "INPUT0" value: "T" } input_map { key: "INPUT1" value: "X" }', 'output_map { key: "OUTPUT0" value: "SUM" }')} ] }`,
    text: "output 'SUM' for ensemble 'bad_unproduced' is not written: at least one of its depending tensors, 'X', is not connected",
  },
  bad_cycle: {
    config: `${HEAD}\n${OUT_SUM}\nensemble_scheduling { step [ ${ADD_SUB('input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "T2" }', 'output_map { key: "OUTPUT0" value: "T1" } output_map { key: "OUTPUT1" value: "SUM" }')}, ${ADD_SUB('input_map { key: "INPUT0" value: "T1" } input_map { key: "INPUT1" value: "B" }', 'output_map { key: "OUTPUT0" value: "T2" }')} ] }`,
    text: "output 'SUM' for ensemble 'bad_cycle' is not written: at least one of its depending tensors, 'T1', is not connected",
  },
  bad_twice: {
    config: `${HEAD}\n${OUT_SUM}\nensemble_scheduling { step [ ${ADD_SUB(AB, 'output_map { key: "OUTPUT0" value: "SUM" }')}, ${ADD_SUB(AB, 'output_map { key: "OUTPUT1" value: "SUM" }')} ] }`,
    text: "ensemble tensor 'SUM' can appear in an output map only once for ensemble 'bad_twice' step 1",
  },
  bad_input_unused: {
    config: `${HEAD}\n${OUT_SUM}\nensemble_scheduling { step [ ${ADD_SUB('input_map { key: "INPUT0" value: "A" } input_map { key: "INPUT1" value: "A" }', 'output_map { key: "OUTPUT0" value: "SUM" }')} ] }`,
    text: "ensemble input 'B' for ensemble bad_input_unused' is not used",
  },
  bad_output_unwritten: {
    config: `${HEAD}\noutput [ { name: "SUM" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "OTHER" data_type: TYPE_FP32 dims: [ 4 ] } ]\nensemble_scheduling { step [ ${ADD_SUB(AB, 'output_map { key: "OUTPUT0" value: "SUM" }')} ] }`,
    text: "ensemble output 'OTHER' for ensemble bad_output_unwritten' is not used",
  },
  bad_dead_tensor: {
    config: `${HEAD}\n${OUT_SUM}\nensemble_scheduling { step [ ${ADD_SUB(AB, 'output_map { key: "OUTPUT0" value: "SUM" } output_map { key: "OUTPUT1" value: "DEAD" }')} ] }`,
    text: "ensemble tensor 'DEAD' is unused in ensemble 'bad_dead_tensor'",
  },
  bad_input_key: {
    config: `${HEAD}\n${OUT_SUM}\nensemble_scheduling { step [ ${ADD_SUB('input_map { key: "INPUTX" value: "A" } input_map { key: "INPUT1" value: "B" }', 'output_map { key: "OUTPUT0" value: "SUM" }')} ] }`,
    text: 'in ensemble bad_input_key, ensemble tensor A is mapping to non-existing input INPUTX in model add_sub',
  },
  bad_output_key: {
    config: `${HEAD}\n${OUT_SUM}\nensemble_scheduling { step [ ${ADD_SUB(AB, 'output_map { key: "OUTPUTX" value: "SUM" }')} ] }`,
    text: 'in ensemble bad_output_key, ensemble tensor SUM is mapped from non-existing output OUTPUTX in model add_sub',
  },
  bad_unmapped_input: {
    config: `${HEAD}\n${OUT_SUM}\nensemble_scheduling { step [ ${ADD_SUB(AB, 'output_map { key: "OUTPUT0" value: "T" }')}, ${ADD_SUB('input_map { key: "INPUT0" value: "T" }', 'output_map { key: "OUTPUT0" value: "SUM" }')} ] }`,
    text: 'in ensemble bad_unmapped_input, input INPUT1 in model add_sub is not mapped to any ensemble tensors',
  },
  bad_dtype: {
    config: `${HEAD.replace('name: "A" data_type: TYPE_FP32', 'name: "A" data_type: TYPE_INT32')}\n${OUT_SUM}\nensemble_scheduling { step [ ${ADD_SUB(AB, 'output_map { key: "OUTPUT0" value: "SUM" }')} ] }`,
    text: 'in ensemble bad_dtype, ensemble tensor A: inconsistent data type: TYPE_INT32 is inferred from model bad_dtype while TYPE_FP32 is inferred from model add_sub',
  },
  bad_shape: {
    config: `${HEAD.replace('name: "A" data_type: TYPE_FP32 dims: [ 4 ]', 'name: "A" data_type: TYPE_FP32 dims: [ 5 ]')}\n${OUT_SUM}\nensemble_scheduling { step [ ${ADD_SUB(AB, 'output_map { key: "OUTPUT0" value: "SUM" }')} ] }`,
    text: 'in ensemble bad_shape, ensemble tensor A: inconsistent shape: [5] is inferred from model bad_shape while [4] is inferred from model add_sub',
  },
  bad_circle_a: {
    config: `${HEAD}\n${OUT_SUM}\nensemble_scheduling { step [ { model_name: "bad_circle_b" model_version: -1 input_map { key: "A" value: "A" } input_map { key: "B" value: "B" } output_map { key: "SUM" value: "SUM" } } ] }`,
    text: 'circular dependency between ensembles: bad_circle_a -> ... -> bad_circle_b -> bad_circle_a',
  },
  bad_circle_b: {
    config: `${HEAD}\n${OUT_SUM}\nensemble_scheduling { step [ { model_name: "bad_circle_a" model_version: -1 input_map { key: "A" value: "A" } input_map { key: "B" value: "B" } output_map { key: "SUM" value: "SUM" } } ] }`,
    text: 'circular dependency between ensembles: bad_circle_b -> ... -> bad_circle_a -> bad_circle_b',
  },
  bad_output_dtype: {
    config: `${HEAD}\noutput [ { name: "SUM" data_type: TYPE_INT32 dims: [ 4 ] } ]\nensemble_scheduling { step [ ${ADD_SUB(AB, 'output_map { key: "OUTPUT0" value: "SUM" }')} ] }`,
    text: 'in ensemble bad_output_dtype, ensemble tensor SUM: inconsistent data type: TYPE_INT32 is inferred from model bad_output_dtype while TYPE_FP32 is inferred from model add_sub',
  },
};

function writeInvalid(repo: string): void {
  for (const [name, { config }] of Object.entries(INVALID)) {
    fs.mkdirSync(path.join(repo, name, '1'), { recursive: true });
    fs.writeFileSync(path.join(repo, name, 'config.pbtxt'), `${config}\n`);
  }
}

describe('readiness of an ensemble', () => {
  let t: Tritium;

  beforeAll(async () => {
    const state = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-ensemble-crash-'));
    t = await startTritium({ repos: [makeRepo(['crash_modes', 'ensemble_crash'])], env: { MODEL_STATE_DIR: state } });
  }, 120_000);

  afterAll(async () => {
    await stopAndExpectNoShm(t);
  });

  it("follows its composing model's: not ready while a step's stub restarts, ready again after", async () => {
    const body = (mode: number) => ({
      inputs: [
        { name: 'MODE', datatype: 'INT32', shape: [1, 1], data: [mode] },
        { name: 'VALUE', datatype: 'INT32', shape: [1, 1], data: [21] },
      ],
    });
    expect((await get(t, '/v2/models/ensemble_crash/ready')).status).toBe(200);
    expect(outputs((await post(t, '/v2/models/ensemble_crash/infer', body(0))).json)).toEqual({ OUT: [42] });
    const crashed = await post(t, '/v2/models/ensemble_crash/infer', body(2));
    expect(crashed.json.error).toContain('is not healthy');
    let sawNotReady = false;
    let indexReason: string | undefined;
    for (let i = 0; i < 1200; i++) {
      const ready = (await get(t, '/v2/models/ensemble_crash/ready')).status === 200;
      if (!ready && !sawNotReady) indexReason = (await index(t)).find((e) => e.name === 'ensemble_crash')?.reason;
      if (!ready) sawNotReady = true;
      if (sawNotReady && ready) break;
      await new Promise((res) => setTimeout(res, 25));
    }
    expect(sawNotReady).toBe(true);
    // The index keeps the ensemble READY and says why it is not ready now (unless the restart
    // finished between the two requests).
    if (indexReason !== undefined) expect(indexReason).toBe("composing model 'crash_modes' is not ready");
    expect((await get(t, '/v2/models/ensemble_crash/ready')).status).toBe(200);
    expect(outputs((await post(t, '/v2/models/ensemble_crash/infer', body(0))).json)).toEqual({ OUT: [42] });
  });
});

describe('perf_analyzer on an ensemble', () => {
  let t: Tritium;

  beforeAll(async () => {
    t = await startTritium({ repos: [makeRepo(['add_sub', 'ensemble_add_sub'])] });
  }, 120_000);

  afterAll(async () => {
    await stopAndExpectNoShm(t);
  });

  it('profiles the ensemble and reports its composing model from the statistics', async () => {
    const { code, out } = await perfAnalyzer(['-m', 'ensemble_add_sub', '-u', `127.0.0.1:${t.httpPort}`, '--concurrency-range', '2:2', ...countWindows(200)]);
    expect(code, out).toBe(0);
    expect(out).not.toMatch(/error|failed/i);
    expect(out).toMatch(/Server:\s+Inference count: \d+\s+Execution count: \d+\s+Successful request count: \d+/);
    expect(out).toMatch(/Composing models:\s+add_sub, version: 1\s+Inference count: \d+/);
  });
});

describe('ensembles refused at load', () => {
  let t: Tritium;

  beforeAll(async () => {
    const repo = makeRepo(['add_sub']);
    writeInvalid(repo);
    t = await startTritium({ repos: [repo], args: ['--exit-on-error=false', '--strict-readiness=false'] });
  }, 120_000);

  afterAll(async () => {
    await stopAndExpectNoShm(t);
  });

  for (const [name, { text }] of Object.entries(INVALID)) {
    it(`${name}: ${text}`, async () => {
      const entry = (await index(t)).find((e) => e.name === name);
      expect(entry).toEqual({ name, state: 'UNAVAILABLE', reason: text });
      expect(t.log()).toContain(`failed to load '${name}': ${text}`);
    });
  }
});

describe('ensembles in explicit model control', () => {
  let t: Tritium;

  beforeAll(async () => {
    const repo = makeRepo(['add_sub', 'ensemble_add_sub']);
    writeInvalid(repo);
    t = await startTritium({ repos: [repo], args: ['--model-control-mode=explicit'] });
  }, 120_000);

  afterAll(async () => {
    await stopAndExpectNoShm(t);
  });

  it('loads the composing models with the ensemble, lists them, and unloads the ensemble with them', async () => {
    const state = async (m: string) => (await index(t)).find((e) => e.name === m);
    expect(await state('add_sub')).toEqual({ name: 'add_sub' });
    expect((await post(t, '/v2/repository/models/ensemble_add_sub/load')).status).toBe(200);
    expect(await state('add_sub')).toEqual({ name: 'add_sub', version: '1', state: 'READY' });
    expect(await state('ensemble_add_sub')).toEqual({ name: 'ensemble_add_sub', version: '1', state: 'READY' });
    const r = await post(t, '/v2/models/ensemble_add_sub/infer', addSubBody([1, 2, 3, 4], [1, 1, 1, 1]));
    expect(outputs(r.json).SUM).toEqual([2, 4, 6, 8]);

    // As tritonserver 2.51: the ensemble cannot serve without add_sub and goes with it.
    expect((await post(t, '/v2/repository/models/add_sub/unload')).status).toBe(200);
    const gone = async () => (await state('ensemble_add_sub'))?.state === 'UNAVAILABLE' && (await state('add_sub'))?.state === 'UNAVAILABLE';
    for (let i = 0; i < 200 && !(await gone()); i++) await new Promise((res) => setTimeout(res, 50));
    expect(await state('ensemble_add_sub')).toEqual({ name: 'ensemble_add_sub', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' });
    const after = await post(t, '/v2/models/ensemble_add_sub/infer', addSubBody([1, 2, 3, 4], [1, 1, 1, 1]));
    expect(after.json.error).toBe("Request for unknown model: 'ensemble_add_sub' has no available versions");
  });

  it('unloads the composing models with the ensemble only when asked (unload_dependents)', async () => {
    const state = async (m: string) => (await index(t)).find((e) => e.name === m)?.state;
    const settled = async (want: Record<string, string>) => {
      for (let i = 0; i < 200; i++) {
        const now = await Promise.all(Object.keys(want).map(state));
        if (now.every((s, k) => s === Object.values(want)[k])) return;
        await new Promise((res) => setTimeout(res, 50));
      }
    };
    expect((await post(t, '/v2/repository/models/ensemble_add_sub/load')).status).toBe(200);
    expect((await post(t, '/v2/repository/models/ensemble_add_sub/unload')).status).toBe(200);
    await settled({ ensemble_add_sub: 'UNAVAILABLE' });
    expect([await state('ensemble_add_sub'), await state('add_sub')]).toEqual(['UNAVAILABLE', 'READY']);

    expect((await post(t, '/v2/repository/models/ensemble_add_sub/load')).status).toBe(200);
    expect((await post(t, '/v2/repository/models/ensemble_add_sub/unload', { parameters: { unload_dependents: true } })).status).toBe(200);
    await settled({ ensemble_add_sub: 'UNAVAILABLE', add_sub: 'UNAVAILABLE' });
    expect([await state('ensemble_add_sub'), await state('add_sub')]).toEqual(['UNAVAILABLE', 'UNAVAILABLE']);
  });

  it("answers a load whose composing models fail the checks with Triton's text", async () => {
    const r = await post(t, '/v2/repository/models/bad_unmapped_input/load');
    expect(r.status).toBe(400);
    expect(r.json.error).toBe(`load failed for model 'bad_unmapped_input': ${INVALID.bad_unmapped_input!.text}\n`);
    const poll = await post(t, '/v2/repository/models/bad_cycle/load');
    expect(poll.json.error).toBe("failed to load 'bad_cycle', failed to poll from model repository");
  });
});

describe('the classify example of python_models (Python → ONNX → Python)', () => {
  let t: Tritium;

  beforeAll(async () => {
    t = await startTritium({ repos: [makeRepo(['preprocess', 'simple_onnx', 'postprocess', 'classify_pipeline', 'classify_bls'])] });
  }, 120_000);

  afterAll(async () => {
    await stopAndExpectNoShm(t);
  });

  it('answers the same as an ensemble, as BLS and as the three steps called one by one', async () => {
    const res = await pythonResult(
      String.raw`
import json
import numpy as np
import tritonclient.http as th
c = th.InferenceServerClient("127.0.0.1:${t.httpPort}")
def tensor(name, a, dt):
    x = th.InferInput(name, list(a.shape), dt)
    x.set_data_from_numpy(a)
    return x`,
      String.raw`
raw = np.random.default_rng(7).integers(0, 256, size=(5, 16), dtype=np.uint8)
for m in ("classify_pipeline", "classify_bls"):
    r = c.infer(m, [tensor("RAW", raw, "UINT8")])
    res[m] = [r.as_numpy("LABEL").ravel().astype(str).tolist(), r.as_numpy("CONFIDENCE").ravel().tolist()]
f = c.infer("preprocess", [tensor("RAW", raw, "UINT8")]).as_numpy("FEATURES")
o = c.infer("simple_onnx", [tensor("FEATURES", f, "FP32")])
p = c.infer("postprocess", [tensor("PROBABILITIES", o.as_numpy("PROBABILITIES"), "FP32"), tensor("CLASS", o.as_numpy("CLASS"), "INT64")])
res["chain"] = [p.as_numpy("LABEL").ravel().astype(str).tolist(), p.as_numpy("CONFIDENCE").ravel().tolist()]`,
    );
    expect(res.chain[0]).toHaveLength(5);
    expect(res.classify_pipeline).toEqual(res.chain);
    expect(res.classify_bls).toEqual(res.chain);
  });
});
