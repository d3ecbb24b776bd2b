/**
 * EXECUTION_ENV_PATH resolution: Triton's path rules, the checks on the environment, and packed
 * environments unpacked once into a cache keyed by content, shared by loads and processes.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { locateExecEnv, resolveExecEnv } from '../../src/backends/python/exec-env/exec-env.js';
import { ensureBuilt, ROOT } from '../helpers/server.js';
import { writeTarGz, type TarSpec } from '../helpers/tar.js';

const dirs: string[] = [];
const tmp = (): string => {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-execenv-')));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const ENV: TarSpec[] = [
  { type: 'file', name: 'bin/activate', data: '' },
  { type: 'file', name: 'bin/python3.11', data: '#!/bin/sh\n', mode: 0o755 },
  { type: 'symlink', name: 'bin/python', target: 'python3.11' },
];

function envDir(at: string): string {
  fs.mkdirSync(path.join(at, 'bin'), { recursive: true });
  fs.writeFileSync(path.join(at, 'bin', 'activate'), '');
  fs.writeFileSync(path.join(at, 'bin', 'python'), '#!/bin/sh\n', { mode: 0o755 });
  return at;
}

describe('locateExecEnv: which paths Triton allows', () => {
  it('expands $$TRITON_MODEL_DIRECTORY and normalises, so a path beside the model is allowed', () => {
    const repo = tmp();
    const model = path.join(repo, 'm');
    fs.mkdirSync(model);
    envDir(path.join(model, 'env'));
    envDir(path.join(repo, 'shared'));
    expect(locateExecEnv('$$TRITON_MODEL_DIRECTORY/env', model)).toBe(path.join(model, 'env'));
    expect(locateExecEnv('$$TRITON_MODEL_DIRECTORY/../shared', model)).toBe(path.join(repo, 'shared'));
  });

  it('allows an absolute path anywhere on the host', () => {
    const elsewhere = envDir(path.join(tmp(), 'env'));
    expect(locateExecEnv(elsewhere, tmp())).toBe(elsewhere);
  });

  it('refuses a relative path without the placeholder, and a path that does not exist', () => {
    const model = tmp();
    envDir(path.join(model, 'env'));
    expect(() => locateExecEnv('env', model)).toThrow("EXECUTION_ENV_PATH 'env' must be an absolute path or start with $$TRITON_MODEL_DIRECTORY/");
    expect(() => locateExecEnv('$$TRITON_MODEL_DIRECTORY/nothere', model)).toThrow(`Failed to get the canonical path for ${path.join(model, 'nothere')}.`);
  });
});

describe('resolveExecEnv', () => {
  it('requires bin/activate, as Triton does', async () => {
    const env = envDir(path.join(tmp(), 'env'));
    fs.rmSync(path.join(env, 'bin', 'activate'));
    await expect(resolveExecEnv(env, tmp())).rejects.toThrow(
      `Path ${env}/bin/activate does not exist. The Python environment should contain an 'activate' script.`,
    );
  });

  it('gives the stub the environment first on PATH and LD_LIBRARY_PATH, VIRTUAL_ENV, and no PYTHONHOME', async () => {
    const env = envDir(path.join(tmp(), 'env'));
    const r = await resolveExecEnv(env, tmp());
    expect(r.python).toBe(path.join(env, 'bin', 'python'));
    expect(r.env['VIRTUAL_ENV']).toBe(env);
    expect(r.env['PATH']!.split(':')[0]).toBe(path.join(env, 'bin'));
    expect(r.env['LD_LIBRARY_PATH']!.split(':')[0]).toBe(path.join(env, 'lib'));
    expect(r.env['PYTHONHOME']).toBeUndefined();
  });

  it('unpacks an archive once into a cache keyed by its content', async () => {
    const base = tmp();
    const cache = path.join(base, 'cache');
    const a = writeTarGz(path.join(base, 'a.tar.gz'), ENV);
    const first = await resolveExecEnv(a, base, cache);
    expect(path.dirname(first.dir)).toBe(cache);
    expect(path.basename(first.dir)).toMatch(/^[0-9a-f]{64}$/);
    expect(fs.readlinkSync(path.join(first.dir, 'bin', 'python'))).toBe('python3.11');
    // A second load (or a restart) finds the copy: what was left there is still there.
    fs.writeFileSync(path.join(first.dir, 'left-by-first'), '');
    const again = await resolveExecEnv(a, base, cache);
    expect(again.dir).toBe(first.dir);
    expect(fs.existsSync(path.join(again.dir, 'left-by-first'))).toBe(true);
    // The same bytes under another name share it; other bytes get their own.
    fs.copyFileSync(a, path.join(base, 'copy.tgz'));
    expect((await resolveExecEnv(path.join(base, 'copy.tgz'), base, cache)).dir).toBe(first.dir);
    const b = writeTarGz(path.join(base, 'b.tar.gz'), [...ENV, { type: 'file', name: 'extra', data: 'x' }]);
    expect((await resolveExecEnv(b, base, cache)).dir).not.toBe(first.dir);
    expect(fs.readdirSync(cache).sort()).toHaveLength(2);
  });

  it('refuses a hostile archive with a message naming archive and entry, and caches nothing', async () => {
    const base = tmp();
    const cache = path.join(base, 'cache');
    const bad = writeTarGz(path.join(base, 'bad.tar.gz'), [...ENV, { type: 'file', name: '../escaped', data: 'evil' }]);
    await expect(resolveExecEnv(bad, base, cache)).rejects.toThrow(
      `cannot unpack EXECUTION_ENV_PATH '${bad}': Path contains '..': entry '../escaped' climbs out of the environment with '..'`,
    );
    expect(fs.readdirSync(cache)).toEqual([]);
    expect(fs.existsSync(path.join(cache, '..', 'escaped'))).toBe(false);
  });

  it('refuses a file that is not an archive', async () => {
    const base = tmp();
    const file = path.join(base, 'env.tar.gz');
    fs.writeFileSync(file, 'not gzip');
    await expect(resolveExecEnv(file, base, path.join(base, 'cache'))).rejects.toThrow(`cannot unpack EXECUTION_ENV_PATH '${file}'`);
  });

  it('removes what an extraction killed half-way left behind, and nothing of a live one', async () => {
    const base = tmp();
    const cache = path.join(base, 'cache');
    const gone = spawnSync(process.execPath, ['-e', '0']).pid!; // has exited: its pid names no process
    fs.mkdirSync(path.join(cache, `.unpacking-${gone}-0123456789ab-x`), { recursive: true });
    fs.mkdirSync(path.join(cache, `.unpacking-${process.pid}-ba9876543210-y`));
    const a = writeTarGz(path.join(base, 'a.tar.gz'), ENV);
    const r = await resolveExecEnv(a, base, cache);
    expect(fs.readdirSync(cache).sort()).toEqual([`.unpacking-${process.pid}-ba9876543210-y`, path.basename(r.dir)].sort());
  });

  it('loads in parallel in one process share one extraction', async () => {
    const base = tmp();
    const cache = path.join(base, 'cache');
    const a = writeTarGz(path.join(base, 'a.tar.gz'), ENV);
    const all = await Promise.all([1, 2, 3, 4].map(() => resolveExecEnv(a, base, cache)));
    expect(new Set(all.map((r) => r.dir)).size).toBe(1);
    expect(fs.readdirSync(cache)).toEqual([path.basename(all[0]!.dir)]);
  });
});

describe('env cache across processes', () => {
  beforeAll(() => ensureBuilt());

  it('several servers unpacking the same archive at once end with one complete copy and no leftovers', async () => {
    const base = tmp();
    const cache = path.join(base, 'cache');
    const files = Array.from({ length: 200 }, (_, i): TarSpec => ({ type: 'file', name: `lib/f${i}.py`, data: 'x'.repeat(4096) }));
    const a = writeTarGz(path.join(base, 'a.tar.gz'), [...ENV, ...files]);
    const script = `import('${path.join(ROOT, 'dist/backends/python/exec-env/env-cache.js')}').then(async (m) => {
      process.stdout.write(await m.unpackedEnv(${JSON.stringify(a)}, ${JSON.stringify(cache)}));
    });`;
    const run = () =>
      new Promise<string>((resolve, reject) => {
        const p = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        p.stdout.on('data', (d) => (out += d));
        p.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}`))));
      });
    const dirsSeen = await Promise.all([run(), run(), run(), run()]);
    // What each process printed, so that a rare disagreement says what it was.
    expect(new Set(dirsSeen).size, JSON.stringify(dirsSeen)).toBe(1);
    expect(fs.readdirSync(cache)).toEqual([path.basename(dirsSeen[0]!)]);
    expect(fs.readdirSync(path.join(dirsSeen[0]!, 'lib'))).toHaveLength(200);
  });
});
