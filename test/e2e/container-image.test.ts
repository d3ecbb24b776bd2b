/**
 * The container image, built for real: this checkout's Dockerfile built by a real engine (podman
 * or docker), then run with a 1 MiB /dev/shm (`--shm-size=1m`) on loopback ports, serving a
 * Python model (add_sub) and an ONNX model (simple_onnx) to real HTTP requests; then run again
 * as KServe runs it (`tritonserver --model-store=...`) with the engine's default /dev/shm.
 *
 * When it runs (a build takes minutes on two cores, so not on every host):
 * - TRITIUM_CONTAINER_TEST=1: always. A base image missing from the engine's storage is pulled,
 *   or, where Docker Hub is unreachable, made with deploy/docker/stand-in-base.sh (root and
 *   debootstrap). Anything that keeps it from running is a failure.
 * - unset: where an engine answers and the Dockerfile's base image is already in its storage;
 *   otherwise skipped, saying why (CI's hosts have no engine).
 * - TRITIUM_CONTAINER_TEST=0: never.
 * TRITIUM_CONTAINER_ENGINE picks the engine (default: podman, else docker). The image is tagged
 * localhost/tritium-container-test (its build stage :build-stage) and kept, with the engine's
 * layer cache, so that a rerun with unchanged inputs rebuilds in seconds; what earlier runs built
 * and this one no longer uses is pruned; the containers are removed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseImages, type Engine, findEngine, imageExists, probeRun, qualified } from '../helpers/container-engine.js';
import { runAsync } from '../helpers/run.js';
import { MODELS, makeRepo, PYTHON, ROOT } from '../helpers/server.js';

const MODE = process.env.TRITIUM_CONTAINER_TEST;
const TAG = 'localhost/tritium-container-test:latest';
const BUILD_TAG = 'localhost/tritium-container-test:build-stage';
const DOCKERFILE = path.join(ROOT, 'Dockerfile');
const LABEL = 'tritium-container-test=1';

type Plan = { skip: string } | { engine: Engine; bases: string[]; missing: string[] };

function plan(): Plan {
  if (MODE === '0') return { skip: 'TRITIUM_CONTAINER_TEST=0' };
  const found = findEngine();
  if ('reason' in found) return { skip: found.reason };
  const bases = baseImages(DOCKERFILE).map(qualified);
  const missing = bases.filter((b) => !imageExists(found.engine, b));
  if (missing.length > 0 && MODE !== '1') {
    return {
      skip:
        `${missing.join(', ')} is not in ${found.engine.version}'s storage; TRITIUM_CONTAINER_TEST=1 pulls it, ` +
        'or makes a stand-in with deploy/docker/stand-in-base.sh where Docker Hub is unreachable',
    };
  }
  return { engine: found.engine, bases, missing };
}

const PLAN = plan();
const SKIP = 'skip' in PLAN ? PLAN.skip : undefined;
if (SKIP !== undefined) {
  if (MODE === '1') {
    it('builds and runs the image (TRITIUM_CONTAINER_TEST=1)', () => {
      throw new Error(SKIP);
    });
  } else {
    console.log(`container-image: skipped: ${SKIP}`);
    it.skip(`the container image (skipped: ${SKIP})`, () => {});
  }
}

const tail = (s: string, lines = 60) => s.trim().split('\n').slice(-lines).join('\n');

describe.runIf(SKIP === undefined)("the image of this checkout's Dockerfile", () => {
  const p = PLAN as Exclude<Plan, { skip: string }>;
  const engine = p.engine;
  const eng = (args: string[], timeoutMs = 120_000) => runAsync(engine.bin, [...engine.global, ...args], { timeoutMs });
  const containers: string[] = [];
  let repo: string | undefined;
  let cannotRun: string | undefined;

  beforeAll(async () => {
    for (const base of p.missing) {
      const pull = await eng(['pull', base], 600_000);
      if (pull.status === 0) continue;
      console.log(`container-image: cannot pull ${base} (${tail(pull.stderr, 1)}); making a stand-in`);
      const made = await runAsync('sh', [path.join(ROOT, 'deploy', 'docker', 'stand-in-base.sh'), engine.bin, base], { timeoutMs: 1_800_000 });
      if (made.status !== 0) throw new Error(`no ${base}: the pull failed (${tail(pull.stderr, 1)}) and so did the stand-in:\n${tail(made.stderr)}`);
    }
    const probe = await probeRun(engine, p.bases[0]!);
    if (probe !== undefined) {
      if (MODE === '1') throw new Error(`${engine.version} cannot run a container here: ${probe}`);
      cannotRun = `${engine.version} cannot run a container here: ${probe}`;
      console.log(`container-image: skipped: ${cannotRun}`);
      return;
    }
    const t0 = Date.now();
    // --format docker: the OCI format has no HEALTHCHECK, and podman would drop the image's.
    const format = engine.kind === 'podman' ? ['--format', 'docker'] : [];
    // The build stage first, under a tag of its own: then it is no dangling image, and the prune
    // below removes only what earlier runs built and this one no longer uses (the layer cache of
    // unchanged steps stays, so storage does not grow with every change of src/).
    for (const [target, tag] of [
      [['--target', 'build'], BUILD_TAG],
      [[], TAG],
    ] as const) {
      const build = await eng(['build', ...format, ...engine.limits, ...target, '--label', LABEL, '--tag', tag, '--file', DOCKERFILE, ROOT], 2_700_000);
      expect(build.status, `build failed:\n${tail(`${build.stdout}\n${build.stderr}`)}`).toBe(0);
    }
    await eng(['image', 'prune', '--force', '--filter', `label=${LABEL}`], 600_000);
    const size = Number((await eng(['image', 'inspect', '--format', '{{.Size}}', TAG])).stdout.trim());
    console.log(
      `container-image: ${engine.version}${engine.global.length ? ` (${engine.global.join(' ')})` : ''} built ${TAG} on ${p.bases.join(', ')} ` +
        `in ${Math.round((Date.now() - t0) / 1000)} s: ${(size / 1e6).toFixed(1)} MB unpacked`,
    );
    // The container's user (1001) reads the repository: mkdtemp makes it 0700.
    repo = makeRepo([{ from: path.join(MODELS, 'add_sub') }, { from: path.join(MODELS, 'simple_onnx') }]);
    fs.chmodSync(repo, 0o755);
  }, 3_600_000);

  afterAll(async () => {
    for (const name of containers) await eng(['rm', '--force', name], 120_000);
    if (repo) fs.rmSync(repo, { recursive: true, force: true });
  }, 300_000);

  /** Starts the image detached with the models at /models and HTTP on a loopback port; resolves when ready. */
  async function start(suffix: string, runArgs: string[], command: string[] = []): Promise<{ name: string; http: string }> {
    const name = `tritium-test-${process.pid}-${suffix}`;
    const r = await eng([
      'run',
      '--detach',
      '--name',
      name,
      '--label',
      LABEL,
      ...engine.limits,
      '--publish',
      '127.0.0.1::8000',
      '--volume',
      `${repo}:/models:ro`,
      ...runArgs,
      TAG,
      ...command,
    ]);
    expect(r.status, r.stderr).toBe(0);
    containers.push(name);
    const port = /127\.0\.0\.1:(\d+)/.exec((await eng(['port', name, '8000/tcp'])).stdout)?.[1];
    expect(port, `no loopback port for ${name}`).toBeDefined();
    const http = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 180_000;
    while (Date.now() < deadline) {
      const ok = await fetch(`${http}/v2/health/ready`).then(
        (res) => res.status === 200,
        () => false,
      );
      if (ok) return { name, http };
      const running = (await eng(['inspect', '--format', '{{.State.Running}}', name])).stdout.trim();
      if (running !== 'true') break;
      await new Promise((res) => setTimeout(res, 500));
    }
    const logs = await eng(['logs', name]);
    throw new Error(`${name} did not become ready:\n${tail(`${logs.stdout}\n${logs.stderr}`)}`);
  }

  async function infer(http: string, model: string, inputs: unknown[]): Promise<{ status: number; body: any }> {
    const r = await fetch(`${http}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify({ inputs }) });
    return { status: r.status, body: await r.json() };
  }

  const addSubInputs = [
    { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
    { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [3, 4, 5, 6] },
  ];
  const features = [Array.from({ length: 16 }, (_, i) => i / 16), Array.from({ length: 16 }, (_, i) => (15 - i) / 4)];

  /** simple_onnx answers what Python's onnxruntime computes from the same model file. */
  async function expectOnnxAnswers(http: string): Promise<void> {
    const r = await infer(http, 'simple_onnx', [{ name: 'FEATURES', shape: [2, 16], datatype: 'FP32', data: features.flat() }]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const ref = await runAsync(PYTHON, [
      '-c',
      'import json, sys, numpy as np, onnxruntime as ort\n' +
        "s = ort.InferenceSession(sys.argv[1], providers=['CPUExecutionProvider'])\n" +
        "p, c = s.run(['PROBABILITIES', 'CLASS'], {'FEATURES': np.array(json.loads(sys.argv[2]), dtype=np.float32)})\n" +
        "print(json.dumps({'p': p.flatten().tolist(), 'c': c.flatten().tolist()}))",
      path.join(MODELS, 'simple_onnx', '1', 'model.onnx'),
      JSON.stringify(features),
    ]);
    expect(ref.status, ref.stderr).toBe(0);
    const want = JSON.parse(ref.stdout) as { p: number[]; c: number[] };
    const probs = r.body.outputs.find((o: any) => o.name === 'PROBABILITIES');
    expect(probs.shape).toEqual([2, 3]);
    probs.data.forEach((v: number, i: number) => expect(v).toBeCloseTo(want.p[i]!, 5));
    expect(r.body.outputs.find((o: any) => o.name === 'CLASS').data).toEqual(want.c);
  }

  /** SIGTERM to the container's PID 1 (tritium) ends it cleanly within the stop timeout. */
  async function expectCleanStop(name: string): Promise<void> {
    expect((await eng(['stop', '--time', '60', name], 120_000)).status).toBe(0);
    expect((await eng(['inspect', '--format', '{{.State.ExitCode}}', name])).stdout.trim()).toBe('0');
  }

  it('with a 1 MiB /dev/shm: the ONNX model answers; the Python model answers, or fails naming /dev/shm where it still needs it', async (ctx) => {
    if (cannotRun) ctx.skip();
    const c = await start('shm1m', ['--shm-size=1m']);
    const df = await eng(['exec', c.name, 'df', '-k', '/dev/shm']);
    expect(df.stdout.split('\n')[1]?.split(/\s+/)[1]).toBe('1024');
    expect((await eng(['exec', c.name, 'id', '-u'])).stdout.trim()).toBe('1001');

    // ONNX models run inside the server (onnxruntime-node): no /dev/shm involved.
    await expectOnnxAnswers(c.http);

    // The /dev/shm dependency of Python models. As committed when this test was written
    // (449cf20), a Python model's tensors cross to its stub through files in /dev/shm, and each
    // stub keeps one shm-default-byte-size segment (at least 1 MiB) there from its start: that
    // segment fills a 1 MiB /dev/shm, so add_sub loads and is ready, but each request fails,
    // 500 and "/dev/shm is full ... --shm-size", when the server cannot create the segment for
    // its tensors. That dependency was being removed at the time (segments passed to the stub as
    // descriptors instead of files); without it the request answers. Exactly these two outcomes
    // pass: any other error, a crash or a wrong sum fails. Once the dependency is gone for good,
    // keep only the first branch.
    const r = await infer(c.http, 'add_sub', addSubInputs);
    if (r.status === 200) {
      expect(r.body.outputs.find((o: any) => o.name === 'OUTPUT0').data).toEqual([4, 6, 8, 10]);
      expect(r.body.outputs.find((o: any) => o.name === 'OUTPUT1').data).toEqual([-2, -2, -2, -2]);
    } else {
      expect(r.status, JSON.stringify(r.body)).toBe(500);
      expect(r.body.error).toMatch(/\/dev\/shm is full/);
      expect(r.body.error).toMatch(/--shm-size/);
    }
    console.log(`container-image: add_sub with a 1 MiB /dev/shm: ${r.status === 200 ? 'answered [4,6,8,10] [-2,-2,-2,-2]' : `500: ${r.body.error}`}`);
    // Either way the server stays ready and the ONNX model still answers.
    expect((await fetch(`${c.http}/v2/health/ready`)).status).toBe(200);
    await expectOnnxAnswers(c.http);

    // The image's HEALTHCHECK (node, as user 1001, against /v2/health/ready) passes.
    if (engine.kind === 'podman') {
      const hc = await eng(['healthcheck', 'run', c.name]);
      expect(hc.status, `${hc.stdout}${hc.stderr}`).toBe(0);
    } else {
      let health = '';
      for (let i = 0; i < 90 && health !== 'healthy'; i++) {
        health = (await eng(['inspect', '--format', '{{.State.Health.Status}}', c.name])).stdout.trim();
        if (health !== 'healthy') await new Promise((res) => setTimeout(res, 1000));
      }
      expect(health).toBe('healthy');
    }
    await expectCleanStop(c.name);
  }, 600_000);

  it("with the engine's default /dev/shm, as KServe starts it (tritonserver --model-store): both models answer", async (ctx) => {
    if (cannotRun) ctx.skip();
    const c = await start('kserve', [], ['tritonserver', '--model-store=/models']);
    const r = await infer(c.http, 'add_sub', addSubInputs);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.outputs.find((o: any) => o.name === 'OUTPUT0').data).toEqual([4, 6, 8, 10]);
    expect(r.body.outputs.find((o: any) => o.name === 'OUTPUT1').data).toEqual([-2, -2, -2, -2]);
    await expectOnnxAnswers(c.http);
    await expectCleanStop(c.name);
  }, 600_000);
});
