// Installs a working `perf_analyzer` into .venv/bin.
//
// The `perf-analyzer` name on PyPI is a placeholder without a program; the real binary ships in
// tritonclient's manylinux wheels up to 2.5x. 2.50.0 is the newest one built against a glibc
// that Debian 12 / Ubuntu 22.04 have. It links libb64 (Debian package libb64-0d, fetched with
// `apt-get download`, no root needed) and libcudart.so.12 (PyPI nvidia-cuda-runtime-cu12, in
// requirements-dev.txt; no GPU needed to load it). A wrapper script sets LD_LIBRARY_PATH.
// Any failure is reported and skipped: only the perf_analyzer tests and benchmarks need it.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const venv = path.join(root, '.venv');
const python = path.join(venv, 'bin', 'python');
const optDir = path.join(venv, 'opt', 'perf_analyzer');
const wrapper = path.join(venv, 'bin', 'perf_analyzer');
const VERSION = '2.50.0';

function works() {
  try {
    execFileSync(wrapper, ['--version'], { stdio: 'pipe' });
    return true;
  } catch (err) {
    // perf_analyzer prints its usage and exits non-zero on --version in some releases.
    return /perf_analyzer|Usage/.test(String(err.stdout ?? '') + String(err.stderr ?? ''));
  }
}

if (fs.existsSync(wrapper) && works()) process.exit(0);
try {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-pa-'));
  execFileSync(
    python,
    [
      '-m',
      'pip',
      'download',
      '--quiet',
      '--no-deps',
      '--only-binary=:all:',
      '--platform',
      'manylinux1_x86_64',
      '--python-version',
      '3.8',
      '-d',
      tmp,
      `tritonclient==${VERSION}`,
    ],
    { stdio: 'inherit' },
  );
  const wheel = fs.readdirSync(tmp).find((f) => f.endsWith('.whl'));
  fs.mkdirSync(optDir, { recursive: true });
  execFileSync(python, [
    '-c',
    `import zipfile,sys; z=zipfile.ZipFile(sys.argv[1]); open(sys.argv[2],'wb').write(z.read('tritonclient-${VERSION}.data/data/bin/perf_analyzer'))`,
    path.join(tmp, wheel),
    path.join(optDir, 'perf_analyzer'),
  ]);
  fs.chmodSync(path.join(optDir, 'perf_analyzer'), 0o755);
  try {
    execFileSync('apt-get', ['download', 'libb64-0d'], { cwd: tmp, stdio: 'pipe' });
  } catch {
    // A fresh machine may have no package lists yet; refresh them once (needs root) and retry.
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'pipe' });
    execFileSync('apt-get', ['download', 'libb64-0d'], { cwd: tmp, stdio: 'pipe' });
  }
  const deb = fs.readdirSync(tmp).find((f) => f.startsWith('libb64') && f.endsWith('.deb'));
  execFileSync('dpkg', ['-x', path.join(tmp, deb), path.join(tmp, 'b64')]);
  const so = execFileSync('find', [path.join(tmp, 'b64'), '-name', 'libb64.so*'])
    .toString()
    .trim()
    .split('\n')[0];
  fs.copyFileSync(so, path.join(optDir, path.basename(so)));
  const cudart = execFileSync(python, ['-c', 'import nvidia.cuda_runtime, os; print(os.path.join(list(nvidia.cuda_runtime.__path__)[0], "lib"))'])
    .toString()
    .trim();
  fs.writeFileSync(
    wrapper,
    `#!/bin/sh\nLD_LIBRARY_PATH="${optDir}:${cudart}\${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "${path.join(optDir, 'perf_analyzer')}" "$@"\n`,
  );
  fs.chmodSync(wrapper, 0o755);
  fs.rmSync(tmp, { recursive: true, force: true });
  if (!works()) throw new Error('the installed perf_analyzer does not start');
  console.log(`setup-perf-analyzer: perf_analyzer ${VERSION} installed in ${wrapper}`);
} catch (err) {
  console.warn(`setup-perf-analyzer: skipped (${err.message.split('\n')[0]}); perf_analyzer tests and benchmarks will report it missing.`);
}
