/**
 * The stub under a second Python version, without a rebuild: `_tritium_ipc` is built once for
 * CPython's stable ABI (`.abi3.so`, docs/ipc.md "Implementations"), so an interpreter other
 * than the one `npm install` built it with (a model's EXECUTION_ENV_PATH, or
 * `python-executable`) still gets the native rings; `_tritium_objects`, built for one
 * interpreter, is absent there and the stub keeps its pure-Python objects.
 *
 * The second interpreter is $TRITIUM_SECOND_PYTHON, else one of pyenv's or /usr/bin's whose
 * version differs from the stubs' usual one; a virtualenv with the stub's requirements
 * (requirements.txt, from PyPI) is made for it under test/.tmp once. Skipped, saying why, where
 * there is no such interpreter or its packages cannot be installed.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRepo, PYTHON, ROOT, startTritium } from '../helpers/server.js';

/** "3.11" for an interpreter, or undefined when it does not run. */
function versionOf(python: string): string | undefined {
  const r = spawnSync(python, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

function candidates(): string[] {
  if (process.env.TRITIUM_SECOND_PYTHON) return [process.env.TRITIUM_SECOND_PYTHON];
  const pyenvRoot = process.env.PYENV_ROOT ?? path.join(process.env.HOME ?? '/root', '.pyenv');
  const pyenv = path.join(pyenvRoot, 'versions');
  // Oldest first: 3.9 is the floor of the stable ABI the module is built for, the strictest test.
  const byVersion = (a: string, b: string) => a.localeCompare(b, 'en', { numeric: true });
  const fromPyenv = fs.existsSync(pyenv)
    ? fs
        .readdirSync(pyenv)
        .sort(byVersion)
        .map((v) => path.join(pyenv, v, 'bin', 'python3'))
    : [];
  const fromUsr = ['3.9', '3.10', '3.12', '3.13'].map((v) => `/usr/bin/python${v}`);
  return [...fromPyenv, ...fromUsr].filter((p) => fs.existsSync(p));
}

/** A second interpreter (≥ 3.9, another version than PYTHON's) with the stub's requirements, or why not. */
function secondPython(): { python: string; version: string } | { skip: string } {
  const usual = versionOf(PYTHON);
  const atLeast39 = (v: string) => Number(v.split('.')[0]) === 3 && Number(v.split('.')[1]) >= 9;
  const found = candidates()
    .map((python) => ({ python, version: versionOf(python) }))
    .find((c): c is { python: string; version: string } => c.version !== undefined && c.version !== usual && atLeast39(c.version));
  if (!found) return { skip: `no Python ≥ 3.9 other than ${usual} here (set TRITIUM_SECOND_PYTHON)` };
  const venv = path.join(ROOT, 'test', '.tmp', `second-python-${found.version}`);
  const python = path.join(venv, 'bin', 'python');
  const ready = path.join(venv, '.tritium-ready');
  if (!fs.existsSync(ready)) {
    fs.rmSync(venv, { recursive: true, force: true });
    const mk = spawnSync(found.python, ['-m', 'venv', venv], { encoding: 'utf8' });
    if (mk.status !== 0) return { skip: `${found.python} -m venv failed: ${mk.stderr.trim()}` };
    const pip = spawnSync(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', path.join(ROOT, 'requirements.txt')], {
      encoding: 'utf8',
      timeout: 240_000,
    });
    if (pip.status !== 0)
      return { skip: `cannot install requirements.txt for Python ${found.version}: ${(pip.stderr || String(pip.error)).trim().split('\n').pop()}` };
    fs.writeFileSync(ready, '');
  }
  return { python, version: found.version };
}

const second = secondPython();

describe('the stub under a second Python version', () => {
  if ('skip' in second) {
    it.skip(second.skip, () => {});
    return;
  }

  it(`Python ${second.version} runs the native rings of the same build, and pure-Python objects`, async () => {
    const s = await startTritium({
      repos: [makeRepo(['add_sub'])],
      args: ['--log-verbose=1', `--backend-config=python,python-executable=${second.python}`],
    });
    try {
      const res = await fetch(`${s.http}/v2/models/add_sub/infer`, {
        method: 'POST',
        body: JSON.stringify({
          inputs: [
            { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
            { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [10, 20, 30, 40] },
          ],
        }),
      });
      expect(res.status).toBe(200);
      const out = Object.fromEntries((await res.json()).outputs.map((o: { name: string; data: number[] }) => [o.name, o.data]));
      expect(out).toEqual({ OUTPUT0: [11, 22, 33, 44], OUTPUT1: [-9, -18, -27, -36] });
      const line = s
        .log()
        .split('\n')
        .find((l) => l.includes('IPC path:'));
      expect(line).toMatch(/IPC path: native \(_tritium_ipc\)/);
      expect(line).toMatch(/pb_utils objects: pure Python \(no _tritium_objects module for this interpreter/);
      const stubPid = Number(/\(pid (\d+)\)/.exec(line ?? '')?.[1]);
      expect(fs.realpathSync(`/proc/${stubPid}/exe`)).toBe(fs.realpathSync(second.python));
    } finally {
      await s.stop();
    }
  });
});
