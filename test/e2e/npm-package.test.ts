/**
 * The npm package as a user gets it: `npm pack` of this checkout, installed with `--omit=dev`
 * into an empty prefix the way `npm install -g` does, then the installed `tritium` serving
 * python_models/ (a Python model and an ONNX model) over HTTP. The install runs with none of
 * this project's npm settings (its .npmrc skips onnxruntime-node's download; a user's install does
 * not have that), so on a host that cannot reach that download the package's own fallback
 * (scripts/ensure-onnxruntime.mjs) is what makes the ONNX model load.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAsync } from '../helpers/run.js';
import { ensureBuilt, MODELS, ROOT, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-package-'));
const prefix = path.join(work, 'prefix');
const installed = path.join(prefix, 'lib', 'node_modules', 'tritium');
let server: Tritium | undefined;
let packed: string[] = [];

/** The environment of a user's shell: no npm_* settings inherited from the `npm test` that runs us. */
const userEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) || /^npm_config_cache$/i.test(k)));

const npm = (args: string[], cwd: string) => runAsync('npm', args, { cwd, env: userEnv, timeoutMs: 480_000 });

beforeAll(async () => {
  ensureBuilt();
  // dist/ is fresh (ensureBuilt, and the dist staleness check of the suites), so pack without
  // re-running prepare.
  const pack = await npm(['pack', '--ignore-scripts', '--json', '--pack-destination', work], ROOT);
  expect(pack.status, pack.stderr).toBe(0);
  const info = JSON.parse(pack.stdout)[0] as { filename: string; files: Array<{ path: string }> };
  packed = info.files.map((f) => f.path);
  const install = await npm(['install', '-g', '--prefix', prefix, '--omit=dev', '--no-audit', '--no-fund', path.join(work, info.filename)], work);
  expect(install.status, `${install.stdout}\n${install.stderr}`).toBe(0);
}, 600_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(work, { recursive: true, force: true });
});

describe('the npm package', () => {
  it('holds what runs and nothing that does not', () => {
    for (const f of [
      'bin/tritium.js',
      'dist/cli/main.js',
      'native/binding.gyp',
      'stub/main.py',
      'stub/triton_python_backend_utils.py',
      'requirements.txt',
      'README.md',
      'LICENSE',
      'scripts/build-native.mjs',
    ]) {
      expect(packed).toContain(f);
    }
    for (const f of packed) expect(f).not.toMatch(/^(test|bench|src|python_models|\.ci)\/|__pycache__|\.tsbuildinfo$/);
  });

  it('installs with --omit=dev: the native addon is built and no dev tool is installed', () => {
    expect(fs.existsSync(path.join(installed, 'native', 'build', 'Release', 'tritium_native.node'))).toBe(true);
    for (const dev of ['typescript', 'vitest', '@biomejs/biome']) expect(fs.existsSync(path.join(installed, 'node_modules', dev))).toBe(false);
    expect(fs.existsSync(path.join(prefix, 'bin', 'tritium'))).toBe(true);
  });

  it('has an onnxruntime-node it can load: its own dependency, or the CPU copy the package fetched when that one was dropped', () => {
    const regular = fs.existsSync(path.join(installed, 'node_modules', 'onnxruntime-node', 'package.json'));
    const vendored = fs.existsSync(path.join(installed, 'vendor', 'onnxruntime', 'node_modules', 'onnxruntime-node', 'package.json'));
    expect(regular || vendored).toBe(true);
  });

  it('serves python_models/ with the installed tritium: a Python and an ONNX model answer', async () => {
    server = await startTritium({ bin: path.join(prefix, 'bin', 'tritium'), repos: [MODELS], timeoutMs: 120_000 });
    const addSub = await fetch(`${server.http}/v2/models/add_sub/infer`, {
      method: 'POST',
      body: JSON.stringify({
        inputs: [
          { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
          { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [1, 1, 1, 1] },
        ],
      }),
    });
    expect(addSub.status).toBe(200);
    const body = (await addSub.json()) as { outputs: Array<{ name: string; data: number[] }> };
    expect(body.outputs.find((o) => o.name === 'OUTPUT0')?.data).toEqual([2, 3, 4, 5]);

    const onnx = await fetch(`${server.http}/v2/models/simple_onnx/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'FEATURES', shape: [1, 16], datatype: 'FP32', data: Array.from({ length: 16 }, (_, i) => i / 16) }] }),
    });
    expect(onnx.status, await onnx.clone().text()).toBe(200);
    const out = (await onnx.json()) as { outputs: Array<{ name: string; shape: number[]; data: number[] }> };
    const probs = out.outputs.find((o) => o.name === 'PROBABILITIES');
    expect(probs?.shape).toEqual([1, 3]);
    expect(probs!.data.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 4);
  }, 180_000);
});
