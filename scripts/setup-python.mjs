// Creates the project-local virtualenv (.venv) with the stub's and the tests' Python packages.
// Runs from `npm install` (prepare); skipped when TRITIUM_SKIP_PYTHON_SETUP=1 or when the venv
// already satisfies its requirements (pip is quick when nothing changed). A production install
// (`npm ci --omit=dev`) gets only what the stubs need (requirements.txt): no test tools.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
if (process.env.TRITIUM_SKIP_PYTHON_SETUP === '1') process.exit(0);
const venv = path.join(root, '.venv');
const python = path.join(venv, 'bin', 'python');
const base = process.env.TRITIUM_BOOTSTRAP_PYTHON ?? 'python3';
const production = (process.env.npm_config_omit ?? '').split(/[\s,]+/).includes('dev');
const requirements = path.join(root, production ? 'requirements.txt' : 'requirements-dev.txt');
const run = (cmd, args) => execFileSync(cmd, args, { stdio: 'inherit', cwd: root });
try {
  if (!fs.existsSync(python)) {
    console.log(`setup-python: creating ${venv} with ${base}`);
    run(base, ['-m', 'venv', venv]);
  }
  const stamp = path.join(venv, '.tritium-requirements');
  const wanted =
    fs.readFileSync(path.join(root, 'requirements.txt'), 'utf8') + (production ? '' : fs.readFileSync(path.join(root, 'requirements-dev.txt'), 'utf8'));
  if (!(fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === wanted)) {
    run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', requirements]);
    fs.writeFileSync(stamp, wanted);
  }
  // `npm install` builds native code before this venv exists (install runs before prepare):
  // build the stub's IPC extension again for the venv's interpreter, unless one was asked for.
  if (!process.env.TRITIUM_PYTHON) {
    run(process.execPath, [path.join(root, 'scripts', 'build-native.mjs'), '--python-only']);
  }
  if (!production) run(process.execPath, [path.join(root, 'scripts', 'setup-perf-analyzer.mjs')]);
} catch (err) {
  console.error(
    `setup-python: failed (${err.message}). Install Python 3.9+ with venv, or set TRITIUM_SKIP_PYTHON_SETUP=1 and pass --backend-config=python,python-executable=<python with numpy and msgpack>.`,
  );
  process.exit(1);
}
