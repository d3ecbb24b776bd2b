/**
 * End-to-end instance groups (docs/protocol-notes.md, "Instances and dispatch"): one
 * stub process per instance, the initialize() args each stub gets (names, kinds, device ids),
 * instances executing in parallel and starting in parallel, KIND_AUTO / KIND_GPU resolution
 * with GPUs detected (none, forced through TRITIUM_GPUS="") or faked (TRITIUM_GPUS="0,1"), and
 * the load error of a KIND_GPU model on a host without GPUs.
 *
 * Parallelism is asserted from the stubs' own wall-clock timestamps (executions overlap), with
 * only a generous wall-time bound on top.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, shmFilesOf, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { INSTANCE_PROBE_IO, inferJson, writeVariant } from './infer-helpers.js';

const IO = INSTANCE_PROBE_IO;

interface Served {
  args: Record<string, string>;
  pid: number;
  initStart: number;
  initEnd: number;
  start: number;
  end: number;
}

async function serve(server: Tritium, model: string, seconds: number): Promise<Served> {
  const r = await inferJson(server.http, model, { shape: [1], value: seconds });
  expect(r.status, r.error).toBe(200);
  const t = r.out.TIMES as number[];
  return {
    args: JSON.parse(String(r.out.ARGS![0])),
    pid: Number(r.out.PID![0]),
    initStart: t[0]!,
    initEnd: t[1]!,
    start: t[2]!,
    end: t[3]!,
  };
}

/** `n` concurrent requests of `seconds` each: with n idle instances each serves one. */
const fanOut = (server: Tritium, model: string, n: number, seconds: number) => Promise.all(Array.from({ length: n }, () => serve(server, model, seconds)));

const overlapped = (xs: Array<{ start: number; end: number }>) => Math.max(...xs.map((x) => x.start)) < Math.min(...xs.map((x) => x.end));

describe('on a host without GPUs', () => {
  let server: Tritium;
  let repo: string;

  beforeAll(async () => {
    repo = makeRepo(['instance_probe']);
    writeVariant(
      repo,
      'instance_probe',
      'var_inst_named',
      `${IO}instance_group [ { name: "pool" count: 2 kind: KIND_MODEL }, { count: 1 kind: KIND_AUTO } ]\n`,
    );
    writeVariant(repo, 'instance_probe', 'var_inst_default', IO);
    writeVariant(repo, 'instance_probe', 'var_gpu_any', `${IO}instance_group [ { count: 1 kind: KIND_GPU } ]\n`);
    writeVariant(repo, 'instance_probe', 'var_gpu_listed', `${IO}instance_group [ { count: 1 kind: KIND_GPU gpus: [ 1 ] } ]\n`);
    server = await startTritium({ repos: [repo], args: ['--exit-on-error=false'], env: { TRITIUM_GPUS: '' } });
  }, 120_000);

  afterAll(() => stopAndExpectNoShm(server));

  it('runs three KIND_CPU stubs in parallel: the executions of three 1 s requests overlap', async () => {
    const served = await fanOut(server, 'instance_probe', 3, 1);
    expect(new Set(served.map((s) => s.pid)).size).toBe(3);
    // The model's own clock: every execute started before any of them ended.
    expect(overlapped(served)).toBe(true);
  });

  it('gives each stub its name, kind, device id and the model paths', async () => {
    const served = await fanOut(server, 'instance_probe', 3, 0.5);
    const byName = new Map(served.map((s) => [s.args.model_instance_name, s.args]));
    expect([...byName.keys()].sort()).toEqual(['instance_probe_0_0', 'instance_probe_0_1', 'instance_probe_0_2']);
    for (const args of byName.values()) {
      expect(Object.keys(args).sort()).toEqual([
        'model_config',
        'model_instance_device_id',
        'model_instance_kind',
        'model_instance_name',
        'model_name',
        'model_repository',
        'model_version',
      ]);
      expect(args.model_instance_kind).toBe('CPU');
      expect(args.model_instance_device_id).toBe('0');
      expect(args.model_name).toBe('instance_probe');
      expect(args.model_version).toBe('1');
      expect(args.model_repository).toBe(path.join(repo, 'instance_probe'));
      const cfg = JSON.parse(args.model_config!);
      expect(cfg.instance_group).toEqual([expect.objectContaining({ name: 'instance_probe_0', kind: 'KIND_CPU', count: 3, gpus: [] })]);
    }
  });

  it('started the three stubs in parallel (their initialize() calls overlapped)', async () => {
    const served = await fanOut(server, 'instance_probe', 3, 0.5);
    expect(new Set(served.map((s) => s.pid)).size).toBe(3);
    // initialize() sleeps 1 s (INIT_SLEEP_S) in each stub.
    expect(overlapped(served.map((s) => ({ start: s.initStart, end: s.initEnd })))).toBe(true);
  });

  it('names group instances <group>_<i>, passes KIND_MODEL as MODEL and resolves KIND_AUTO to CPU', async () => {
    const served = await fanOut(server, 'var_inst_named', 3, 0.5);
    const got = served.map((s) => [s.args.model_instance_name, s.args.model_instance_kind, s.args.model_instance_device_id]);
    expect(got.sort()).toEqual([
      ['pool_0', 'MODEL', '0'],
      ['pool_1', 'MODEL', '0'],
      ['var_inst_named_1_0', 'CPU', '0'],
    ]);
    const cfg = await (await fetch(`${server.http}/v2/models/var_inst_named/config`)).json();
    expect(cfg.instance_group.map((g: { name: string; kind: string; count: number }) => [g.name, g.kind, g.count])).toEqual([
      ['pool', 'KIND_MODEL', 2],
      ['var_inst_named_1', 'KIND_CPU', 1],
    ]);
  });

  it('creates one CPU instance named <model>_0 when the config has no instance_group', async () => {
    const s = await serve(server, 'var_inst_default', 0);
    expect(s.args.model_instance_name).toBe('var_inst_default_0');
    expect(s.args.model_instance_kind).toBe('CPU');
    expect(s.args.model_instance_device_id).toBe('0');
  });

  async function indexEntry(name: string) {
    const res = await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' });
    const index = (await res.json()) as Array<{ name: string; state?: string; reason?: string }>;
    return index.find((x) => x.name === name);
  }

  // Triton 2.51's version failure (the config itself is valid): the index names the version.
  const NO_GPU = (m: string) => `Invalid argument: instance group ${m}_0 of model ${m} has kind KIND_GPU but no GPUs are available`;

  it('fails to load a KIND_GPU model with a message saying the host has no GPU', async () => {
    expect(await indexEntry('var_gpu_any')).toEqual({ name: 'var_gpu_any', version: '1', state: 'UNAVAILABLE', reason: NO_GPU('var_gpu_any') });
    expect(server.log()).toContain(`"failed to load 'var_gpu_any' version 1: ${NO_GPU('var_gpu_any')}"`);
    expect((await fetch(`${server.http}/v2/models/var_gpu_any/ready`)).status).not.toBe(200);
    expect((await fetch(`${server.http}/v2/models/instance_probe/ready`)).status).toBe(200);
  });

  it('fails to load a KIND_GPU model that lists a GPU the host does not have', async () => {
    expect(await indexEntry('var_gpu_listed')).toEqual({ name: 'var_gpu_listed', version: '1', state: 'UNAVAILABLE', reason: NO_GPU('var_gpu_listed') });
  });
});

describe('with GPUs (faked: TRITIUM_GPUS=0,1)', () => {
  let server: Tritium;

  beforeAll(async () => {
    const repo = makeRepo([]);
    writeVariant(repo, 'instance_probe', 'var_gpu', `${IO}instance_group [ { count: 1 kind: KIND_GPU } ]\n`);
    writeVariant(repo, 'instance_probe', 'var_auto_gpu', `${IO}instance_group [ { count: 2 kind: KIND_AUTO gpus: [ 1 ] } ]\n`);
    writeVariant(repo, 'instance_probe', 'var_default_gpu', IO);
    server = await startTritium({ repos: [repo], env: { TRITIUM_GPUS: '0,1' } });
  }, 120_000);

  afterAll(() => stopAndExpectNoShm(server));

  it('creates count instances per GPU, same name, device id = GPU ordinal', async () => {
    const served = await fanOut(server, 'var_gpu', 2, 0.5);
    const got = served.map((s) => [s.args.model_instance_name, s.args.model_instance_kind, s.args.model_instance_device_id]);
    expect(got.sort()).toEqual([
      ['var_gpu_0_0', 'GPU', '0'],
      ['var_gpu_0_0', 'GPU', '1'],
    ]);
  });

  it('resolves KIND_AUTO with listed GPUs to GPU on those GPUs', async () => {
    const served = await fanOut(server, 'var_auto_gpu', 2, 0.5);
    const got = served.map((s) => [s.args.model_instance_name, s.args.model_instance_kind, s.args.model_instance_device_id]);
    expect(got.sort()).toEqual([
      ['var_auto_gpu_0_0', 'GPU', '1'],
      ['var_auto_gpu_0_1', 'GPU', '1'],
    ]);
  });

  it('defaults a config without instance_group to one GPU instance per GPU', async () => {
    const served = await fanOut(server, 'var_default_gpu', 2, 0.5);
    const got = served.map((s) => [s.args.model_instance_name, s.args.model_instance_kind, s.args.model_instance_device_id]);
    expect(got.sort()).toEqual([
      ['var_default_gpu_0', 'GPU', '0'],
      ['var_default_gpu_0', 'GPU', '1'],
    ]);
  });
});

describe('a load with a KIND_GPU config override on a host without GPUs (as Model Analyzer makes one)', () => {
  it("fails the version, not the config, with Triton 2.51's text; a KIND_CPU override then loads", async () => {
    const repo = makeRepo(['instance_probe']);
    const server = await startTritium({ repos: [repo], args: ['--model-control-mode=explicit'], env: { TRITIUM_GPUS: '' } });
    try {
      const load = async (kind: string) => {
        const config = JSON.stringify({ backend: 'python', instance_group: [{ kind, count: 1 }] });
        const res = await fetch(`${server.http}/v2/repository/models/instance_probe/load`, {
          method: 'POST',
          body: JSON.stringify({ parameters: { config } }),
        });
        return { status: res.status, text: await res.text() };
      };
      const reason = 'Invalid argument: instance group instance_probe_0 of model instance_probe has kind KIND_GPU but no GPUs are available';
      expect(await load('KIND_GPU')).toEqual({
        status: 400,
        text: JSON.stringify({ error: `load failed for model 'instance_probe': version 1 is at UNAVAILABLE state: ${reason};\n` }),
      });
      const index = await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST' })).json();
      expect(index).toEqual([{ name: 'instance_probe', version: '1', state: 'UNAVAILABLE', reason }]);
      expect(await load('KIND_CPU')).toEqual({ status: 200, text: '' });
      expect((await fetch(`${server.http}/v2/models/instance_probe/ready`)).status).toBe(200);
    } finally {
      await stopAndExpectNoShm(server);
    }
  });
});

describe('start-up with --exit-on-error (the default)', () => {
  it('exits non-zero when a KIND_GPU model cannot load on a host without GPUs', async () => {
    const repo = makeRepo([]);
    writeVariant(repo, 'instance_probe', 'var_gpu_any', `${IO}instance_group [ { count: 1 kind: KIND_GPU } ]\n`);
    const server = await startTritium({ repos: [repo], env: { TRITIUM_GPUS: '' }, expectFailure: true });
    const exit = await server.exited;
    expect(exit.code).not.toBe(0);
    expect(server.log()).toMatch(/var_gpu_any.*KIND_GPU.*no GPU/);
    expect(server.log()).not.toMatch(/Started HTTPService/);
    expect(shmFilesOf(server.proc.pid)).toEqual([]);
  });
});
