/**
 * Python-based backends (a backend that is a model.py in --backend-directory, as the vLLM
 * backend ships): two models that only name the backend share its model.py, each with its own
 * model.json; `runtime: "model.py"`; auto-complete from the backend; the backend's sibling
 * package; the backend's packed execution environment as the default; the start-up backend
 * table; and the refusals (no backend, a native library, paths that leave the backend
 * directory by `..` or by a link) with Triton 2.51's texts where Triton has them (compared on
 * its own server with the same layout).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildEnvArchive } from '../helpers/packed-env.js';
import { makeRepo, pythonResult, ROOT, startTritium, stopAndExpectNoShm, type Tritium, writeModel } from '../helpers/server.js';

let work: string;
let backends: string;
let repo: string;
let server: Tritium;

/** A copy of test model `from` named `name`, with another config and model.json. */
function model(name: string, config: string, operation?: string): void {
  writeModel(repo, name, config);
  if (operation) fs.writeFileSync(path.join(repo, name, '1', 'model.json'), JSON.stringify({ operation }));
}

beforeAll(async () => {
  work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-pb-backends-')));
  backends = path.join(work, 'backends');
  fs.cpSync(path.join(ROOT, 'test', 'backends'), backends, { recursive: true });
  // The same backend with a packed environment of its own.
  fs.cpSync(path.join(backends, 'add_sub'), path.join(backends, 'add_sub_env'), { recursive: true });
  buildEnvArchive(work, path.join(backends, 'add_sub_env', 'pb_exec_env_model.py.tar.gz'));
  // A C++ backend's library, and a backend whose model.py is a link out of its directory.
  fs.mkdirSync(path.join(backends, 'native_x'));
  fs.writeFileSync(path.join(backends, 'native_x', 'libtriton_native_x.so'), '');
  fs.mkdirSync(path.join(backends, 'linked'));
  fs.symlinkSync(path.join(backends, 'add_sub', 'model.py'), path.join(backends, 'linked', 'model.py'));

  repo = makeRepo(['pb_add', 'pb_sub']);
  model('pb_runtime', 'backend: "add_sub"\nruntime: "model.py"\n', 'add');
  model('pb_env', 'backend: "add_sub_env"\n', 'add');
  model('pb_missing', 'backend: "nosuch"\n');
  model('pb_runtime_missing', 'backend: "nosuch2"\nruntime: "model.py"\n');
  model('pb_native', 'backend: "native_x"\n');
  model('pb_escape', 'backend: "add_sub"\nruntime: "../native_x/libtriton_native_x.so"\n');
  model('pb_link', 'backend: "linked"\n', 'add');
  server = await startTritium({
    repos: [repo],
    args: [`--backend-directory=${backends}`, '--backend-config=add_sub,some-key=1', '--exit-on-error=false', '--strict-readiness=false'],
    env: { TRITIUM_ENV_CACHE: path.join(work, 'env-cache') },
  });
}, 180_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(work, { recursive: true, force: true });
  fs.rmSync(repo, { recursive: true, force: true });
});

async function index(): Promise<Map<string, { state: string; reason?: string }>> {
  const list = (await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as Array<{
    name: string;
    state: string;
    reason?: string;
  }>;
  return new Map(list.map((e) => [e.name, e]));
}

async function addSub(name: string): Promise<{ output: number[]; where: Record<string, string> }> {
  const body = JSON.stringify({
    inputs: [
      { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [5, 5, 5, 5] },
      { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
    ],
  });
  const json = (await (await fetch(`${server.http}/v2/models/${name}/infer`, { method: 'POST', body })).json()) as any;
  expect(json.error).toBeUndefined();
  const out = Object.fromEntries(json.outputs.map((o: { name: string; data: unknown[] }) => [o.name, o.data]));
  return { output: out.OUTPUT as number[], where: JSON.parse(out.WHERE[0] as string) };
}

describe('a Python-based backend', () => {
  it('serves two models that name it, each with its own model.json, from the one model.py', async () => {
    const add = await addSub('pb_add');
    const sub = await addSub('pb_sub');
    expect(add.output).toEqual([6, 7, 8, 9]);
    expect(sub.output).toEqual([4, 3, 2, 1]);
    // As Triton: imported as module `model` from the backend directory; get_model_dir() and
    // the initialize args point at the model.
    expect(add.where).toMatchObject({
      module: 'model',
      file: path.join(backends, 'add_sub', 'model.py'),
      model_dir: path.join(repo, 'pb_add', '1'),
      model_repository: path.join(repo, 'pb_add'),
      model_version: '1',
      model_name: 'pb_add',
    });
  });

  it('shows runtime "model.py" and the inputs and outputs of its auto_complete_config', async () => {
    const config = (await (await fetch(`${server.http}/v2/models/pb_add/config`)).json()) as any;
    expect(config.backend).toBe('add_sub');
    expect(config.runtime).toBe('model.py');
    expect(config.input.map((i: { name: string }) => i.name)).toEqual(['INPUT0', 'INPUT1']);
    expect(config.output.map((o: { name: string }) => o.name)).toEqual(['OUTPUT', 'WHERE']);
  });

  it('takes runtime: "model.py" written in the config, and answers over gRPC', async () => {
    const res = await pythonResult(
      `import json, numpy as np\nimport tritonclient.grpc as g\nc = g.InferenceServerClient('127.0.0.1:${server.grpcPort}')`,
      `
ins = []
for name, v in (("INPUT0", [1, 1, 1, 1]), ("INPUT1", [2, 3, 4, 5])):
    t = g.InferInput(name, [4], "FP32"); t.set_data_from_numpy(np.array(v, np.float32)); ins.append(t)
res["runtime"] = c.infer("pb_runtime", ins).as_numpy("OUTPUT").tolist()
res["sub"] = c.infer("pb_sub", ins).as_numpy("OUTPUT").tolist()
`,
    );
    expect(res.runtime).toEqual([3, 4, 5, 6]);
    expect(res.sub).toEqual([-1, -2, -3, -4]);
  });

  it("runs in the backend's pb_exec_env_model.py.tar.gz when the model names no environment", async () => {
    const env = await addSub('pb_env');
    expect(env.output).toEqual([6, 7, 8, 9]);
    expect(env.where.prefix.startsWith(path.join(work, 'env-cache'))).toBe(true);
    const config = (await (await fetch(`${server.http}/v2/models/pb_env/config`)).json()) as any;
    expect(config.parameters.EXECUTION_ENV_PATH.string_value).toBe(path.join(backends, 'add_sub_env', 'pb_exec_env_model.py.tar.gz'));
    // The other models run in the server's interpreter.
    expect((await addSub('pb_add')).where.prefix.startsWith(path.join(work, 'env-cache'))).toBe(false);
  });

  it('is listed in the start-up backend table, and settings named after it are said to reach nothing', () => {
    expect(server.log()).toMatch(new RegExp(`\\| add_sub +\\| ${path.join(backends, 'add_sub', 'model.py').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} +\\|`));
    expect(server.log()).toContain("--backend-config=add_sub,...: no backend reads settings for 'add_sub'");
  });
});

describe('refusals', () => {
  it("gives Triton's texts for a missing backend, a missing model.py and a runtime that leaves the directory", async () => {
    const i = await index();
    expect(i.get('pb_missing')?.reason).toContain(
      `unable to find backend library for backend 'nosuch', try specifying runtime on the model configuration. tritium serves the python and onnxruntime backends and Python-based ones, and ${path.join(backends, 'nosuch', 'model.py')} does not exist`,
    );
    expect(i.get('pb_runtime_missing')?.reason).toContain(
      `unable to find Python backend based backend library 'model.py' for model 'pb_runtime_missing', searched: '${path.join(backends, 'nosuch2', 'model.py')}'`,
    );
    expect(i.get('pb_escape')?.reason).toContain(
      `backend library name '../native_x/libtriton_native_x.so' escapes backend directory '${path.join(backends, 'add_sub')}', for model 'pb_escape', check model config runtime field`,
    );
  });

  it('refuses a native backend library, and a model.py that is a link out of its backend directory', async () => {
    const i = await index();
    expect(i.get('pb_native')?.state).toBe('UNAVAILABLE');
    expect(i.get('pb_native')?.reason).toContain(
      `backend 'native_x' of model 'pb_native' is the native library ${path.join(backends, 'native_x', 'libtriton_native_x.so')}, which tritium cannot load`,
    );
    expect(i.get('pb_link')?.reason).toContain(`backend library name 'model.py' escapes backend directory '${path.join(backends, 'linked')}'`);
  });
});
