/**
 * Model control, end to end with the real CLI, real stubs and real clients: explicit mode
 * (`--load-model` at start, load/unload/reload over HTTP and gRPC, with `config` and `file:`
 * overrides, Python tritonclient's calls unchanged), a reload under load that fails no request,
 * a failed reload that keeps the old version serving, an unload with a request in flight, an
 * unload during a load (as Triton: the load succeeds, then the model is unloaded), an unload cut
 * short by --exit-timeout-secs answering what it still held, metrics of an
 * unloaded version disappearing, poll mode picking up changes, pb_utils.load_model /
 * unload_model from a Python model taking the same path, and model names with shell
 * metacharacters refused as tritonserver's Python backend refuses them (its QA test's requests:
 * curl, `file:/1/model.py`). Texts are Triton 2.51's, those of the name check a later release's.
 *
 * Model: fixtures/models/reload_probe (answers GEN, its config's GENERATION parameter, after MS ms).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { curlPost } from '../helpers/run.js';
import { makeRepo, pythonResult, shmFilesOf, startTritium, stopAndExpectNoShm, FIXTURE_MODELS, type Tritium } from '../helpers/server.js';
import { markPath, scrape, waitFor, waitForMark } from './infer-helpers.js';

const POLL_FAILED = (m: string) => `failed to load '${m}', failed to poll from model repository`;

/**
 * A config override for reload_probe as Model Analyzer makes one: the served config (GET
 * .../config, JSON) with other parameters. Read once from the first server.
 */
let served: Record<string, unknown> | undefined;
function probeConfig(params: Record<string, string>): string {
  const parameters = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, { string_value: v }]));
  return JSON.stringify({ ...served, name: '', parameters });
}

interface Answer {
  status: number;
  gen?: number;
  error?: string;
}

async function infer(t: Tritium, model: string, ms = 0, mark?: string): Promise<Answer> {
  const body = { inputs: [{ name: 'MS', datatype: 'INT32', shape: [1], data: [ms] }], ...(mark ? { parameters: { mark } } : {}) };
  const res = await fetch(`${t.http}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify(body) });
  const json = (await res.json()) as { outputs?: Array<{ data: number[] }>; error?: string };
  return { status: res.status, gen: json.outputs?.[0]?.data[0], error: json.error };
}

async function post(t: Tritium, p: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${t.http}${p}`, { method: 'POST', body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const index = async (t: Tritium) => (await post(t, '/v2/repository/index')).json as Array<Record<string, string>>;
const stateOf = async (t: Tritium, model: string) => (await index(t)).filter((e) => e.name === model);

function clientPrelude(t: Tritium): string {
  return String.raw`
import json
import numpy as np
import tritonclient.grpc as tg
import tritonclient.http as th
from tritonclient.utils import InferenceServerException
http = th.InferenceServerClient(${JSON.stringify(`127.0.0.1:${t.httpPort}`)}, network_timeout=120)
grpc = tg.InferenceServerClient(${JSON.stringify(`127.0.0.1:${t.grpcPort}`)})
def mk_input():
    i = th.InferInput("MS", [1], "INT32")
    i.set_data_from_numpy(np.array([0], dtype=np.int32))
    return i
def attempt(f, *a, **k):
    try:
        f(*a, **k)
        return "ok"
    except InferenceServerException as e:
        return [str(e.status()), e.message()]
`;
}

describe('explicit model control', () => {
  let repo: string;
  let t: Tritium;

  beforeAll(async () => {
    repo = makeRepo(['reload_probe', { from: path.join(FIXTURE_MODELS, 'reload_probe'), name: 'second' }, 'init_fails']);
    t = await startTritium({ repos: [repo], args: ['--model-control-mode=explicit', '--load-model=reload_probe'] });
    served = (await (await fetch(`${t.http}/v2/models/reload_probe/config`)).json()) as Record<string, unknown>;
  });

  afterAll(async () => {
    await stopAndExpectNoShm(t);
    fs.rmSync(repo, { recursive: true, force: true });
  });

  it('loads only the --load-model names at start and lists the others by name', async () => {
    expect(await index(t)).toEqual([{ name: 'init_fails' }, { name: 'reload_probe', version: '1', state: 'READY' }, { name: 'second' }]);
    expect((await infer(t, 'reload_probe')).gen).toBe(1);
    expect(await infer(t, 'second')).toEqual({ status: 404, error: "Request for unknown model: 'second' is not found" });
  });

  it("answers tritonclient's load_model / unload_model / get_model_repository_index over HTTP and gRPC", async () => {
    const res = await pythonResult(
      clientPrelude(t),
      String.raw`
res["load_http"] = attempt(http.load_model, "second")
res["ready_http"] = http.is_model_ready("second")
res["index_grpc"] = [[m.name, m.version, m.state] for m in grpc.get_model_repository_index().models]
res["unload_grpc"] = attempt(grpc.unload_model, "second")
import time
deadline = time.time() + 60
while time.time() < deadline and http.get_model_repository_index()[2].get("reason") != "unloaded":
    time.sleep(0.05)
res["index_http"] = http.get_model_repository_index()
res["ready_after"] = grpc.is_model_ready("second")
res["load_grpc"] = attempt(grpc.load_model, "second")
res["ready_grpc"] = grpc.is_model_ready("second")
res["unload_http"] = attempt(http.unload_model, "second", unload_dependents=True)
res["unknown_http"] = attempt(http.load_model, "no_such_model")
res["unknown_grpc"] = attempt(grpc.load_model, "no_such_model")
res["unload_unknown"] = attempt(http.unload_model, "no_such_model")
res["failing_http"] = attempt(http.load_model, "init_fails")
res["failing_grpc"] = attempt(grpc.load_model, "init_fails")
res["bad_config"] = attempt(http.load_model, "reload_probe", config="{not json")
res["files_without_config"] = attempt(grpc.load_model, "reload_probe", files={"file:1/model.py": b"x"})
res["escape"] = attempt(http.load_model, "reload_probe", config="{}", files={"file:../escaped.py": b"x"})
`,
    );
    expect(res.load_http).toBe('ok');
    expect(res.ready_http).toBe(true);
    expect(res.index_grpc).toContainEqual(['second', '1', 'READY']);
    expect(res.unload_grpc).toBe('ok');
    expect(res.index_http[2]).toEqual({ name: 'second', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' });
    expect(res.ready_after).toBe(false);
    expect(res.load_grpc).toBe('ok');
    expect(res.ready_grpc).toBe(true);
    expect(res.unload_http).toBe('ok');
    expect(res.unknown_http).toEqual(['500', POLL_FAILED('no_such_model')]);
    expect(res.unknown_grpc).toEqual(['StatusCode.INTERNAL', POLL_FAILED('no_such_model')]);
    expect(res.unload_unknown).toBe('ok');
    expect(res.failing_http[0]).toBe('400');
    expect(res.failing_http[1]).toMatch(/^load failed for model 'init_fails': version 1 is at UNAVAILABLE state: .*lorem_ipsum/s);
    expect(res.failing_http[1]).toMatch(/;\n$/);
    expect(res.failing_grpc[0]).toBe('StatusCode.INVALID_ARGUMENT');
    for (const k of ['bad_config', 'escape']) expect(res[k]).toEqual(['500', POLL_FAILED('reload_probe')]);
    expect(res.files_without_config).toEqual(['StatusCode.INTERNAL', POLL_FAILED('reload_probe')]);
    expect(t.log()).toContain("Poll failed for model directory 'reload_probe': Load parameter 'config' must be specified for model file override");
    expect(t.log()).toMatch(/Invalid file parameter 'file:\.\.\/escaped\.py' with normalized path '[^']+' must stay within model directory\./);
    expect(t.log()).toContain("failed to poll model 'no_such_model': model not found in any model repository.");
    // The failed loads left reload_probe serving as it was.
    expect((await infer(t, 'reload_probe')).gen).toBe(1);
    const failing = (await stateOf(t, 'init_fails'))[0]!;
    expect([failing.state, failing.reason]).toEqual(['UNAVAILABLE', expect.stringContaining('lorem_ipsum')]);
  });

  it('reloads with a config override, then with file overrides from a temporary directory', async () => {
    const before = fs.readdirSync(path.join(repo, 'reload_probe'), { recursive: true }).sort();
    const source = fs.readFileSync(path.join(repo, 'reload_probe', '1', 'model.py'), 'utf8');
    const res = await pythonResult(
      clientPrelude(t),
      String.raw`
res["config"] = attempt(http.load_model, "reload_probe", config=${JSON.stringify(probeConfig({ GENERATION: '2' }))})
`,
    );
    expect(res.config).toBe('ok');
    expect((await infer(t, 'reload_probe')).gen).toBe(2);

    const variant = source.replace('self.generation = int(_param(config, "GENERATION", "0"))', 'self.generation = 300');
    expect(variant).not.toBe(source);
    const files = await pythonResult(
      clientPrelude(t),
      String.raw`
model = ${JSON.stringify(variant)}.encode()
res["http"] = attempt(http.load_model, "reload_probe", config=${JSON.stringify(probeConfig({}))}, files={"file:1/model.py": model.replace(b"300", b"302")})
res["gen_http"] = int(http.infer("reload_probe", [mk_input()]).as_numpy("GEN")[0])
res["grpc"] = attempt(grpc.load_model, "reload_probe", config=${JSON.stringify(probeConfig({}))}, files={"file:1/model.py": model})
`,
    );
    expect(files.http).toBe('ok');
    expect(files.gen_http).toBe(302);
    expect(files.grpc).toBe('ok');
    expect((await infer(t, 'reload_probe')).gen).toBe(300);
    // Over HTTP the contents travel base64-encoded, as Triton takes them.
    const http = await post(t, '/v2/repository/models/reload_probe/load', {
      parameters: { config: probeConfig({}), 'file:1/model.py': Buffer.from(variant.replace('300', '301')).toString('base64') },
    });
    expect(http.status).toBe(200);
    expect((await infer(t, 'reload_probe')).gen).toBe(301);
    // The user's repository was never written to.
    expect(fs.readdirSync(path.join(repo, 'reload_probe'), { recursive: true }).sort()).toEqual(before);
    expect(fs.readFileSync(path.join(repo, 'reload_probe', '1', 'model.py'), 'utf8')).toBe(source);
    expect(fs.existsSync(path.join(repo, 'escaped.py'))).toBe(false);
  });

  it('reloads under load without failing a request; the new version answers once the load returns', async () => {
    let stop = false;
    const seen: Answer[] = [];
    const client = async () => {
      while (!stop) seen.push(await infer(t, 'reload_probe', 5));
    };
    const clients = Array.from({ length: 4 }, client);
    await waitFor('requests before the reload', () => seen.length >= 8, 60_000);
    const load = await post(t, '/v2/repository/models/reload_probe/load', { parameters: { config: probeConfig({ GENERATION: '4', INIT_SLEEP_S: '1' }) } });
    expect(load.status).toBe(200);
    const atLoad = seen.length;
    await waitFor('requests after the reload', () => seen.length >= atLoad + 8, 60_000);
    stop = true;
    await Promise.all(clients);
    expect(seen.filter((a) => a.status !== 200)).toEqual([]);
    expect(seen.some((a) => a.gen === 4)).toBe(true);
    expect(seen.slice(0, atLoad).some((a) => a.gen !== 4)).toBe(true);
    expect((await infer(t, 'reload_probe')).gen).toBe(4);
  });

  it('keeps the old version serving when a reload fails, and says why', async () => {
    const load = await post(t, '/v2/repository/models/reload_probe/load', { parameters: { config: probeConfig({ FAIL_INIT: 'broken on purpose' }) } });
    expect(load.status).toBe(400);
    expect(load.json.error).toMatch(/^load failed for model 'reload_probe': version 1 is at UNAVAILABLE state: .*broken on purpose/s);
    expect(await stateOf(t, 'reload_probe')).toEqual([{ name: 'reload_probe', version: '1', state: 'READY' }]);
    expect((await infer(t, 'reload_probe')).gen).toBe(4);
  });

  it("lets a request in flight finish when its model is unloaded; later ones get Triton's not-found text", async () => {
    const before = await scrape(t.metricsPort!);
    expect(before.samples.some((s) => s.name === 'nv_inference_request_success' && s.labels.model === 'reload_probe')).toBe(true);
    const mark = markPath('unload');
    const slow = infer(t, 'reload_probe', 1500, mark);
    await waitForMark(mark);
    expect((await post(t, '/v2/repository/models/reload_probe/unload')).status).toBe(200);
    expect(await infer(t, 'reload_probe')).toEqual({ status: 404, error: "Request for unknown model: 'reload_probe' has no available versions" });
    expect(await slow).toEqual({ status: 200, gen: 4, error: undefined });
    await waitFor('the unload', async () => (await stateOf(t, 'reload_probe'))[0]?.reason === 'unloaded', 60_000);
    // Its metric series went with it, as Triton's do.
    const after = await scrape(t.metricsPort!);
    expect(after.samples.filter((s) => s.labels.model === 'reload_probe')).toEqual([]);
  });

  it('finishes a load that an unload interrupted, then unloads the model (as Triton)', async () => {
    const loading = post(t, '/v2/repository/models/second/load', { parameters: { config: probeConfig({ GENERATION: '9', INIT_SLEEP_S: '2' }) } });
    await waitFor('LOADING', async () => (await stateOf(t, 'second'))[0]?.state === 'LOADING', 60_000);
    expect((await post(t, '/v2/repository/models/second/unload')).status).toBe(200);
    expect(await stateOf(t, 'second')).toEqual([{ name: 'second', version: '1', state: 'UNLOADING' }]);
    expect((await loading).status).toBe(200);
    await waitFor('the unload', async () => (await stateOf(t, 'second'))[0]?.reason === 'unloaded', 60_000);
    expect(await stateOf(t, 'second')).toEqual([{ name: 'second', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' }]);
    expect((await infer(t, 'second')).status).toBe(404);
  });
});

describe('poll mode', () => {
  let repo: string;
  let t: Tritium;

  beforeAll(async () => {
    repo = makeRepo(['reload_probe']);
    t = await startTritium({ repos: [repo], args: ['--model-control-mode=poll', '--repository-poll-secs=1'] });
  });

  afterAll(async () => {
    await stopAndExpectNoShm(t);
    fs.rmSync(repo, { recursive: true, force: true });
  });

  it('refuses the load and unload API with the text Model Analyzer looks for', async () => {
    const text = 'explicit model load / unload is not allowed if polling is enabled';
    expect(await post(t, '/v2/repository/models/reload_probe/load')).toEqual({ status: 503, json: { error: text } });
    expect(await post(t, '/v2/repository/models/reload_probe/unload')).toEqual({ status: 503, json: { error: text } });
  });

  it('reloads a model whose config changed', async () => {
    expect((await infer(t, 'reload_probe')).gen).toBe(1);
    const file = path.join(repo, 'reload_probe', 'config.pbtxt');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('string_value: "1"', 'string_value: "7"'));
    await waitFor('generation 7', async () => (await infer(t, 'reload_probe')).gen === 7, 60_000, 200);
  });

  it('keeps the old model serving when a change breaks it', async () => {
    const file = path.join(repo, 'reload_probe', 'config.pbtxt');
    const good = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, `${good}\nparameters { key: "FAIL_INIT" value { string_value: "poll" } }\n`);
    await waitFor('the failed reload', () => /failed to load 'reload_probe' version 1: .*poll/.test(t.log()), 60_000, 200);
    expect((await infer(t, 'reload_probe')).gen).toBe(7);
    fs.writeFileSync(file, good);
  });

  it('loads added models and versions and unloads removed ones', async () => {
    fs.cpSync(path.join(FIXTURE_MODELS, 'reload_probe'), path.join(repo, 'added'), { recursive: true });
    await waitFor('the added model', async () => (await infer(t, 'added')).gen === 1, 60_000, 200);
    // A new version directory: the default policy (latest 1) serves it and retires version 1.
    fs.cpSync(path.join(repo, 'added', '1'), path.join(repo, 'added', '2'), { recursive: true });
    await waitFor(
      'version 2',
      async () =>
        JSON.stringify(await stateOf(t, 'added')) ===
        JSON.stringify([
          { name: 'added', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' },
          { name: 'added', version: '2', state: 'READY' },
        ]),
      60_000,
      200,
    );
    fs.rmSync(path.join(repo, 'added'), { recursive: true });
    await waitFor('the removed model', async () => (await infer(t, 'added')).status === 404, 60_000, 200);
    expect((await infer(t, 'reload_probe')).status).toBe(200);
  });
});

describe('--load-model at start-up', () => {
  it('exits when a --load-model name is not in the repository, as tritonserver does', async () => {
    const repo = makeRepo(['reload_probe']);
    const t = await startTritium({ repos: [repo], args: ['--model-control-mode=explicit', '--load-model=missing'], expectFailure: true });
    const { code } = await t.exited;
    expect(code).not.toBe(0);
    expect(t.log()).toContain("failed to poll model 'missing': model not found in any model repository.");
    expect(t.log()).toContain('failed to load all models');
    fs.rmSync(repo, { recursive: true, force: true });
  });

  it('loads every model with --load-model=*', async () => {
    const repo = makeRepo(['reload_probe', { from: path.join(FIXTURE_MODELS, 'reload_probe'), name: 'second' }]);
    const t = await startTritium({ repos: [repo], args: ['--model-control-mode=explicit', '--load-model=*'] });
    try {
      expect((await index(t)).map((e) => [e.name, e.state])).toEqual([
        ['reload_probe', 'READY'],
        ['second', 'READY'],
      ]);
    } finally {
      await stopAndExpectNoShm(t);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
});

describe('an unload bounded by --exit-timeout-secs', () => {
  it('answers the requests the version still holds when the bound expires, and unloads', async () => {
    const repo = makeRepo(['reload_probe']);
    const t = await startTritium({ repos: [repo], args: ['--model-control-mode=explicit', '--load-model=reload_probe', '--exit-timeout-secs=1'] });
    try {
      const mark = markPath('bounded');
      const running = infer(t, 'reload_probe', 4000, mark);
      await waitForMark(mark);
      const behind = infer(t, 'reload_probe', 0);
      expect((await post(t, '/v2/repository/models/reload_probe/unload')).status).toBe(200);
      // The 4 s execute outlives the 1 s bound: it is cut short and answered with an error, as
      // is the request behind it (refused, or failed with the unload's text), instead of hanging.
      const [a, b] = await Promise.all([running, behind]);
      expect(a.status).not.toBe(200);
      expect(a.error).toEqual(expect.any(String));
      expect(b.status).not.toBe(200);
      expect(b.error).toEqual(expect.any(String));
      await waitFor('the unload', async () => (await stateOf(t, 'reload_probe'))[0]?.reason === 'unloaded', 60_000);
      // The log line reaches us through the server's stdout pipe, after the index changed.
      await waitFor('the unload log line', async () => t.log().includes("successfully unloaded 'reload_probe' version 1"), 10_000);
    } finally {
      await stopAndExpectNoShm(t);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
});

describe('pb_utils.load_model / unload_model in explicit mode', () => {
  it('load, reload with a config override and unload through the same path as the repository API', async () => {
    const repo = makeRepo(['bls_probe', 'reload_probe']);
    const t = await startTritium({ repos: [repo], args: ['--model-control-mode=explicit', '--load-model=bls_probe'] });
    try {
      const probe = async (cmd: unknown) => {
        const body = { inputs: [{ name: 'CMD', datatype: 'BYTES', shape: [1], data: [JSON.stringify(cmd)] }] };
        const res = await fetch(`${t.http}/v2/models/bls_probe/infer`, { method: 'POST', body: JSON.stringify(body) });
        return JSON.parse(((await res.json()) as { outputs: Array<{ data: string[] }> }).outputs[0]!.data[0]!);
      };
      expect(await probe({ op: 'load', args: ['reload_probe'] })).toEqual({ value: null });
      expect(await probe({ op: 'ready', args: ['reload_probe'] })).toEqual({ value: true });
      expect((await infer(t, 'reload_probe')).gen).toBe(1);
      served ??= (await (await fetch(`${t.http}/v2/models/reload_probe/config`)).json()) as Record<string, unknown>;
      expect(await probe({ op: 'load', args: ['reload_probe', probeConfig({ GENERATION: '5' })] })).toEqual({ value: null });
      expect((await infer(t, 'reload_probe')).gen).toBe(5);
      expect(await probe({ op: 'load', args: ['no_such_model'] })).toEqual({
        raised: expect.stringContaining(POLL_FAILED('no_such_model')),
      });
      expect(await probe({ op: 'unload', args: ['reload_probe'] })).toEqual({ value: null });
      await waitFor('the unload', async () => (await stateOf(t, 'reload_probe'))[0]?.reason === 'unloaded', 60_000);
      expect(await probe({ op: 'ready', args: ['reload_probe'] })).toEqual({ value: false });
    } finally {
      await stopAndExpectNoShm(t);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
});

/** The Python backend's INVALID_CHARS: a model named with any of them is refused. */
const SHELL_CHARS = [...';|&$`<>()[]{}\\"\'*?~#!'];
const STUB_NAME = 'Invalid argument: Invalid stub name: contains invalid characters';
const STUB_NAME_REFUSED = (m: string) => `load failed for model '${m}': version 1 is at UNAVAILABLE state: ${STUB_NAME};\n`;

describe('model names with shell metacharacters, and file overrides with a leading slash', () => {
  let repo: string;
  let t: Tritium;
  const modelPy = fs.readFileSync(path.join(FIXTURE_MODELS, 'reload_probe', '1', 'model.py'));

  /** reload_probe's config under `name`, answering GEN = 5. */
  const configOf = (name: string) =>
    JSON.stringify({
      name,
      backend: 'python',
      max_batch_size: 0,
      input: [{ name: 'MS', data_type: 'TYPE_INT32', dims: [1] }],
      output: [{ name: 'GEN', data_type: 'TYPE_INT32', dims: [1] }],
      parameters: { GENERATION: { string_value: '5' } },
    });

  /**
   * The load of tritonserver's test_invalid_character_model_names, by curl so that the name
   * travels unencoded: a config naming the model and its model.py as `file:/1/model.py`.
   */
  async function loadByCurl(name: string, inPath = name, files: Record<string, Buffer> = { 'file:/1/model.py': modelPy }) {
    const parameters = { config: configOf(name), ...Object.fromEntries(Object.entries(files).map(([k, v]) => [k, v.toString('base64')])) };
    const res = await curlPost(`${t.http}/v2/repository/models/${inPath}/load`, JSON.stringify({ parameters }));
    return { status: res.status, error: res.body ? (JSON.parse(res.body) as { error: string }).error : undefined };
  }

  beforeAll(async () => {
    repo = makeRepo([{ from: path.join(FIXTURE_MODELS, 'reload_probe'), name: 'dir;name' }]);
    t = await startTritium({ repos: [repo], args: ['--model-control-mode=explicit'] });
  });

  afterAll(async () => {
    await stopAndExpectNoShm(t);
    fs.rmSync(repo, { recursive: true, force: true });
  });

  it("refuses each character over HTTP with Triton's text, the name sent unencoded where a URL can carry it", async () => {
    for (const c of SHELL_CHARS) {
      const name = `model${c}test`;
      // '?' and '#' end a URL's path: they can only travel percent-encoded.
      const inPath = c === '?' || c === '#' ? encodeURIComponent(name) : name;
      expect(await loadByCurl(name, inPath), name).toEqual({ status: 400, error: STUB_NAME_REFUSED(name) });
      expect((await fetch(`${t.http}/v2/models/${encodeURIComponent(name)}/ready`)).status, name).not.toBe(200);
    }
    // The log reaches us through a pipe, maybe after the answer.
    const logged = `failed to load 'model;test' version 1: ${STUB_NAME}`;
    await waitFor(logged, () => t.log().includes(logged));
  });

  it('loads names of letters, digits, _, - and . built from file:/1/model.py, and refuses overrides that climb out', async () => {
    for (const name of ['TestModel123', 'model-with-hyphens', 'model_with_underscores', 'model.v2']) {
      expect(await loadByCurl(name), name).toEqual({ status: 200, error: undefined });
      expect((await infer(t, name)).gen, name).toBe(5);
      expect((await post(t, `/v2/repository/models/${name}/unload`)).status).toBe(200);
    }
    // A leading slash is relative to the model directory, as in Triton: '/x/..' still may not leave it.
    for (const key of ['file:/../escaped.py', 'file:///1/../../escaped.py']) {
      expect(await loadByCurl('climber', 'climber', { 'file:/1/model.py': modelPy, [key]: Buffer.from('x') }), key).toEqual({
        status: 500,
        error: POLL_FAILED('climber'),
      });
      const logged = `Poll failed for model directory 'climber': Invalid file parameter '${key}' with normalized path '`;
      await waitFor(logged, () => t.log().includes(logged));
    }
  });

  it("refuses a repository directory so named, and the same over gRPC (tritonclient's load_model)", async () => {
    expect(await curlPost(`${t.http}/v2/repository/models/dir;name/load`, '')).toEqual({
      status: 400,
      body: JSON.stringify({ error: STUB_NAME_REFUSED('dir;name') }),
    });
    expect(await stateOf(t, 'dir;name')).toEqual([{ name: 'dir;name', version: '1', state: 'UNAVAILABLE', reason: STUB_NAME }]);
    const res = await pythonResult(
      clientPrelude(t),
      String.raw`
model = open(${JSON.stringify(path.join(FIXTURE_MODELS, 'reload_probe', '1', 'model.py'))}, "rb").read()
res["bad"] = attempt(grpc.load_model, "grpc|name", config=${JSON.stringify(configOf('grpc|name'))}, files={"file:/1/model.py": model})
res["good"] = attempt(grpc.load_model, "grpc_name", config=${JSON.stringify(configOf('grpc_name'))}, files={"file:/1/model.py": model})
ms = tg.InferInput("MS", [1], "INT32")
ms.set_data_from_numpy(np.array([0], dtype=np.int32))
res["gen"] = int(grpc.infer("grpc_name", [ms]).as_numpy("GEN")[0])
`,
    );
    expect(res.bad).toEqual(['StatusCode.INVALID_ARGUMENT', STUB_NAME_REFUSED('grpc|name')]);
    expect(res.good).toBe('ok');
    expect(res.gen).toBe(5);
  });
});

describe('a model directory named with a shell metacharacter at start-up (mode none)', () => {
  it('fails that model with the same text, and start-up with it, as tritonserver does with --exit-on-error', async () => {
    const repo = makeRepo(['reload_probe', { from: path.join(FIXTURE_MODELS, 'reload_probe'), name: 'start$up' }]);
    const t = await startTritium({ repos: [repo], expectFailure: true });
    try {
      const logged = `failed to load 'start$up' version 1: ${STUB_NAME}`;
      await waitFor(logged, () => t.log().includes(logged) && t.log().includes('failed to load all models'), 30_000);
      expect((await t.exited).code).not.toBe(0);
      expect(shmFilesOf(t.proc.pid)).toEqual([]);
    } finally {
      await t.stop();
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
});

describe('a shm-region-prefix-name with a shell metacharacter', () => {
  const REGION = 'Invalid argument: Invalid shared memory region name: contains invalid characters';

  it("fails each Python model's load with Triton's text, before any stub starts; a plain prefix loads", async () => {
    const repo = makeRepo(['reload_probe']);
    const bad = await startTritium({
      repos: [repo],
      args: ['--model-control-mode=explicit', '--backend-config=python,shm-region-prefix-name=triton;x_'],
    });
    const good = await startTritium({
      repos: [repo],
      args: ['--model-control-mode=explicit', '--backend-config=python,shm-region-prefix-name=my_prefix_'],
    });
    try {
      const refused = await curlPost(`${bad.http}/v2/repository/models/reload_probe/load`, '');
      expect(refused).toEqual({
        status: 400,
        body: JSON.stringify({ error: `load failed for model 'reload_probe': version 1 is at UNAVAILABLE state: ${REGION};\n` }),
      });
      expect(await stateOf(bad, 'reload_probe')).toEqual([{ name: 'reload_probe', version: '1', state: 'UNAVAILABLE', reason: REGION }]);
      expect((await post(good, '/v2/repository/models/reload_probe/load')).status).toBe(200);
      expect((await infer(good, 'reload_probe')).gen).toBeGreaterThan(0);
    } finally {
      await stopAndExpectNoShm(bad);
      await stopAndExpectNoShm(good);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });
});
