/**
 * What the deployment files promise, run for real where this machine can: the KServe
 * ServingRuntime's container arguments (the ones KServe's own Triton runtime passes to
 * `tritonserver`) start tritium and serve a model, and the image's entrypoint runs flags as
 * tritium flags and anything else as a command. The Dockerfile and manifests themselves are
 * linted by scripts/lint-deploy.mjs (npm test); no container engine runs here.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeRepo, PYTHON, ROOT, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

/** A YAML file as JSON, through the PyYAML that .venv has (kubernetes-validate needs it). */
function readYaml(file: string): unknown {
  const r = spawnSync(PYTHON, ['-c', 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))', file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout);
}

let server: Tritium | undefined;
afterAll(async () => {
  await stopAndExpectNoShm(server);
});

describe('KServe ServingRuntime', () => {
  const runtime = readYaml(path.join(ROOT, 'deploy', 'kserve', 'servingruntime.yaml')) as {
    spec: { supportedModelFormats: Array<{ name: string }>; containers: Array<{ args: string[]; ports: Array<{ containerPort: number }> }> };
  };

  it("accepts the triton model format and runs KServe's tritonserver arguments unchanged", async () => {
    expect(runtime.spec.supportedModelFormats.map((f) => f.name)).toContain('triton');
    const [command, ...args] = runtime.spec.containers[0]!.args;
    expect(command).toBe('tritonserver');
    const repo = makeRepo(['add_sub']);
    // Only the storage path differs: KServe mounts the model at /mnt/models.
    const kserveArgs = args.map((a) => (a.startsWith('--model-store=') ? `--model-store=${repo}` : a));
    expect(kserveArgs).toContain('--http-port=8080');
    server = await startTritium({ repos: [], args: [...kserveArgs, '--http-address=127.0.0.1', '--grpc-address=127.0.0.1'] });
    expect(server.httpPort).toBe(runtime.spec.containers[0]!.ports[0]!.containerPort);
    const r = await fetch(`${server.http}/v2/models/add_sub/infer`, {
      method: 'POST',
      body: JSON.stringify({
        inputs: [
          { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
          { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [3, 4, 5, 6] },
        ],
      }),
    });
    expect(r.status, await r.clone().text()).toBe(200);
    const body = (await r.json()) as { outputs: Array<{ name: string; data: number[] }> };
    expect(body.outputs.find((o) => o.name === 'OUTPUT0')?.data).toEqual([4, 6, 8, 10]);
    await stopAndExpectNoShm(server);
    server = undefined;
    fs.rmSync(repo, { recursive: true, force: true });
  }, 120_000);
});

describe('image entrypoint', () => {
  const entrypoint = path.join(ROOT, 'deploy', 'docker', 'entrypoint.sh');
  // `tritium` on PATH, as the image links it.
  const binDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-entry-'));
  fs.writeFileSync(path.join(binDir, 'tritium'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(ROOT, 'bin', 'tritium.js')}" "$@"\n`, { mode: 0o755 });
  const env = { ...process.env, PATH: `${binDir}:${process.env.PATH}` };
  afterAll(() => fs.rmSync(binDir, { recursive: true, force: true }));

  it('runs flags as tritium flags', () => {
    const r = spawnSync('sh', [entrypoint, '--help'], { env, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('--model-repository');
  });

  it('runs a command as given', () => {
    const r = spawnSync('sh', [entrypoint, 'echo', 'a command'], { env, encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe('a command');
  });
});
