/**
 * Test helper: a packed execution environment (a conda-pack style .tar.gz) built from a
 * virtualenv with its own copy of the interpreter (no link out of the tree, as in conda-pack),
 * seeing the test venv's packages (numpy, msgpack) through a .pth file.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PYTHON } from './server.js';
import { treeEntries, writeTarGz } from './tar.js';

/** Builds the virtualenv under `work/envsrc` and writes it packed to `to`; returns the virtualenv's directory. */
export function buildEnvArchive(work: string, to: string): string {
  const src = path.join(work, 'envsrc');
  const made = spawnSync(PYTHON, ['-m', 'venv', '--copies', '--without-pip', src], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`python -m venv failed: ${made.stderr}`);
  const deps = spawnSync(PYTHON, ['-c', 'import numpy, os; print(os.path.dirname(os.path.dirname(numpy.__file__)))'], { encoding: 'utf8' });
  const libDir = path.join(src, 'lib');
  const pyDir = fs.readdirSync(libDir).find((d) => d.startsWith('python'))!;
  fs.writeFileSync(path.join(libDir, pyDir, 'site-packages', 'tritium_test_deps.pth'), deps.stdout.trim() + '\n');
  writeTarGz(to, treeEntries(src));
  return src;
}
