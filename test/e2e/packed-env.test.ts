/**
 * A model whose EXECUTION_ENV_PATH names a packed environment (a conda-pack style .tar.gz):
 * served end to end by real stubs running the unpacked environment's interpreter, unpacked once
 * into the content-keyed cache and found there again after a restart; a hostile archive (an entry
 * with `..`, an absolute entry) fails the load of its model only, with a message naming the entry
 * after the text tritonserver logs for it (`Path contains '..'`, `Path is absolute`).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, TEST_MODELS, type Tritium } from '../helpers/server.js';
import { buildEnvArchive } from '../helpers/packed-env.js';
import { treeEntries, writeTarGz } from '../helpers/tar.js';

let work: string;
let repo: string;
let cache: string;
let archive: string;

async function envOf(s: Tritium, model: string): Promise<{ prefix: string; executable: string; virtual_env: string }> {
  const res = await fetch(`${s.http}/v2/models/${model}/infer`, {
    method: 'POST',
    body: JSON.stringify({ inputs: [{ name: 'IN', shape: [1], datatype: 'FP32', data: [0] }] }),
  });
  expect(res.status).toBe(200);
  return JSON.parse((await res.json()).outputs[0].data[0]);
}

const start = () => startTritium({ repos: [repo], env: { TRITIUM_ENV_CACHE: cache }, args: ['--exit-on-error=false', '--strict-readiness=false'] });

beforeAll(() => {
  work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-packed-env-')));
  cache = path.join(work, 'cache');
  repo = makeRepo([
    'packed_env',
    { from: path.join(TEST_MODELS, 'packed_env'), name: 'packed_env_hostile' },
    { from: path.join(TEST_MODELS, 'packed_env'), name: 'packed_env_absolute' },
  ]);
  archive = path.join(repo, 'packed_env', 'env.tar.gz');
  buildEnvArchive(work, archive);
  const hostile = treeEntries(path.join(work, 'envsrc'));
  hostile.push({ type: 'file', name: '../escaped.txt', data: 'must not be written' });
  writeTarGz(path.join(repo, 'packed_env_hostile', 'env.tar.gz'), hostile);
  const absolute = treeEntries(path.join(work, 'envsrc'));
  absolute.push({ type: 'file', name: path.join(work, 'absolute.txt'), data: 'must not be written' });
  writeTarGz(path.join(repo, 'packed_env_absolute', 'env.tar.gz'), absolute);
});

afterAll(() => {
  fs.rmSync(work, { recursive: true, force: true });
  fs.rmSync(repo, { recursive: true, force: true });
});

describe('packed EXECUTION_ENV_PATH', () => {
  it('serves from the unpacked environment, unpacked once for both instances and again found after a restart', async () => {
    const digest = crypto.createHash('sha256').update(fs.readFileSync(archive)).digest('hex');
    const unpacked = path.join(cache, digest);
    const first = await start();
    try {
      const info = await envOf(first, 'packed_env');
      expect(info.prefix).toBe(unpacked);
      expect(path.dirname(info.executable)).toBe(path.join(unpacked, 'bin'));
      expect(info.virtual_env).toBe(unpacked);
      // Two instances, one copy in the cache, no half-written temporary left.
      expect(fs.readdirSync(cache)).toEqual([digest]);
    } finally {
      await first.stop();
    }
    fs.writeFileSync(path.join(unpacked, 'left-before-restart'), '');
    const second = await start();
    try {
      expect((await envOf(second, 'packed_env')).prefix).toBe(unpacked);
      expect(fs.existsSync(path.join(unpacked, 'left-before-restart'))).toBe(true);
      expect(fs.readdirSync(cache)).toEqual([digest]);
    } finally {
      await second.stop();
    }
  });

  it("refuses hostile archives, failing only their models with Triton's text and a message naming the entry", async () => {
    const s = await start();
    try {
      const index = (await (await fetch(`${s.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as Array<{
        name: string;
        state?: string;
        reason?: string;
      }>;
      const refusal = (model: string) => `cannot unpack EXECUTION_ENV_PATH '${path.join(fs.realpathSync(repo), model, 'env.tar.gz')}': `;
      const dotdot = `${refusal('packed_env_hostile')}Path contains '..': entry '../escaped.txt' climbs out of the environment with '..'`;
      const absolute = `${refusal('packed_env_absolute')}Path is absolute: entry '${path.join(work, 'absolute.txt')}' has an absolute path`;
      for (const [model, text] of [
        ['packed_env_hostile', dotdot],
        ['packed_env_absolute', absolute],
      ]) {
        const bad = index.find((e) => e.name === model);
        expect(bad?.state).toBe('UNAVAILABLE');
        expect(bad?.reason).toContain(text);
        expect(s.log()).toContain(`failed to load '${model}' version 1: ${text}`);
      }
      expect(index.find((e) => e.name === 'packed_env')?.state).toBe('READY');
      expect(fs.readdirSync(cache).some((n) => n.startsWith('.unpacking'))).toBe(false);
      expect(fs.existsSync(path.join(cache, 'escaped.txt'))).toBe(false);
      expect(fs.existsSync(path.join(work, 'absolute.txt'))).toBe(false);
    } finally {
      await s.stop();
    }
  });
});
