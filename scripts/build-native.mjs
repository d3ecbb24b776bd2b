#!/usr/bin/env node
// Builds native/build/Release/tritium_native.node with node-gyp, then the stub's CPython
// extensions in native/build/python/ (see buildPythonExtension below).
// node-gyp ships inside npm, so no extra dependency: prefer the copy npm points us at
// (npm_config_node_gyp during `npm install`/`npm run`), then npm's own bundled copy, then a
// locally installed one, and as a last resort `npx --no-install node-gyp`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const nativeDir = path.join(root, 'native');

function findNodeGyp() {
  const candidates = [];
  if (process.env.npm_config_node_gyp) candidates.push(process.env.npm_config_node_gyp);
  // npm's own node_modules: <prefix>/lib/node_modules/npm/node_modules/node-gyp
  const npmCli = process.env.npm_execpath;
  if (npmCli) candidates.push(path.join(path.dirname(npmCli), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  const prefix = path.dirname(path.dirname(process.execPath));
  candidates.push(path.join(prefix, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  candidates.push(path.join(path.dirname(process.execPath), 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  try {
    candidates.push(createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js'));
  } catch {
    /* not installed locally */
  }
  return candidates.find((c) => existsSync(c));
}

if (process.argv.includes('--python-only')) {
  buildPythonExtension();
  process.exit(0);
}

const args = ['rebuild'];
// Machines without network access cannot download headers; a system install ships them.
if (!process.env.npm_config_nodedir && existsSync('/usr/include/node/node_api.h')) args.push('--nodedir=/usr');
if (process.env.TRITIUM_NATIVE_DEBUG) args.push('--debug');

const gyp = findNodeGyp();
const [cmd, cmdArgs] = gyp ? [process.execPath, [gyp, ...args]] : ['npx', ['--no-install', 'node-gyp', ...args]];
console.log(`[build-native] ${cmd} ${cmdArgs.join(' ')} (cwd ${nativeDir})`);
const r = spawnSync(cmd, cmdArgs, { cwd: nativeDir, stdio: 'inherit' });
if (r.error) {
  console.error(`[build-native] failed to run node-gyp: ${r.error.message}`);
  process.exit(1);
}
if (r.status !== 0) process.exit(r.status ?? 1);
const out = path.join(nativeDir, 'build', 'Release', 'tritium_native.node');
if (!existsSync(out)) {
  console.error(`[build-native] build finished but ${out} is missing`);
  process.exit(1);
}
console.log(`[build-native] built ${path.relative(root, out)}`);

buildPythonExtension();

/**
 * The stub's CPython extensions, compiled straight with the C++ compiler against the
 * interpreter that runs the stubs ($TRITIUM_PYTHON, else .venv/bin/python, else python3), with
 * flags from its sysconfig, so no setuptools is needed:
 * - `_tritium_ipc.abi3.so` (native/src/python_ipc.cc): rings, waits and arenas, against the
 *   stable ABI of Python 3.9, so that one build loads in every interpreter from 3.9 on (a
 *   model's EXECUTION_ENV_PATH one included);
 * - `_tritium_objects<EXT_SUFFIX>` (native/src/py_objects.cc): the pb_utils objects in C, which
 *   use numpy's C API and so are built for this interpreter only, when its numpy has headers.
 * A failure is a warning, not an error: ONNX models are served without these; a stub that
 * finds no _tritium_ipc stops at start-up, saying so, and its model does not load.
 */
function buildPythonExtension() {
  const warn = (what, why) =>
    console.warn(
      `[build-native] WARNING: the stub's ${what} was not built (${why}). ` +
        'Set TRITIUM_PYTHON to the interpreter that runs the stubs and re-run `npm run build:native`.',
    );
  const ipcWarn = (why) => warn('native IPC module', `${why}; stubs cannot start, so Python models will not load (ONNX models still will)`);
  const venv = path.join(root, '.venv', 'bin', 'python');
  const python = process.env.TRITIUM_PYTHON || (existsSync(venv) ? venv : 'python3');
  const probe = spawnSync(
    python,
    [
      '-c',
      'import json,sysconfig\ntry:\n import numpy; np_inc = numpy.get_include()\nexcept Exception:\n np_inc = None\nprint(json.dumps({k: sysconfig.get_config_var(k) for k in ("EXT_SUFFIX","INCLUDEPY")} | {"include": sysconfig.get_paths()["include"], "numpy": np_inc}))',
    ],
    { encoding: 'utf8' },
  );
  if (probe.error || probe.status !== 0) return ipcWarn(`cannot run ${python}: ${probe.error?.message ?? probe.stderr.trim()}`);
  let cfg;
  try {
    cfg = JSON.parse(probe.stdout);
  } catch {
    return ipcWarn(`unexpected sysconfig output from ${python}`);
  }
  const include = cfg.include || cfg.INCLUDEPY;
  if (!cfg.EXT_SUFFIX || !include || !existsSync(path.join(include, 'Python.h'))) {
    return ipcWarn(`no Python.h for ${python} (install the python3-dev package of that interpreter)`);
  }
  const outDir = path.join(nativeDir, 'build', 'python');
  mkdirSync(outDir, { recursive: true });
  // A per-interpreter _tritium_ipc of an earlier build would shadow the abi3 one.
  for (const f of readdirSync(outDir)) if (/^_tritium_ipc\.cpython-/.test(f)) rmSync(path.join(outDir, f), { force: true });
  const built = compileModule(python, include, outDir, '_tritium_ipc', '.abi3.so', ['python_ipc.cc'], []);
  if (built !== true) return ipcWarn(built);
  // The pb_utils object types use numpy's C API; without numpy's headers the stub keeps its
  // pure-Python objects.
  const numpyInclude = cfg.numpy && existsSync(path.join(cfg.numpy, 'numpy', 'arrayobject.h')) ? cfg.numpy : null;
  if (!numpyInclude) return warn('C pb_utils objects module', `no numpy headers for ${python}; the stub's objects stay pure Python`);
  const objects = compileModule(python, include, outDir, '_tritium_objects', cfg.EXT_SUFFIX, ['py_objects.cc'], ['-isystem', numpyInclude]);
  if (objects !== true) warn('C pb_utils objects module', `${objects}; the stub's objects stay pure Python`);
}

/** Compiles native/src/`sources` into `outDir`/`name``suffix` and imports it once; true, or why not. */
function compileModule(python, include, outDir, name, suffix, sources, extra) {
  const cxx = process.env.CXX || 'c++';
  const target = path.join(outDir, `${name}${suffix}`);
  const tmp = `${target}.tmp-${process.pid}`;
  const args = [
    '-std=c++17',
    '-O2',
    '-fPIC',
    '-shared',
    '-fvisibility=hidden',
    '-Wall',
    '-Wextra',
    '-Wno-unused-parameter',
    '-Wno-missing-field-initializers',
    '-Wno-cast-function-type',
    `-I${include}`,
    ...extra,
    ...sources.map((s) => path.join(nativeDir, 'src', s)),
    '-o',
    tmp,
  ];
  console.log(`[build-native] ${cxx} ${args.join(' ')}`);
  const c = spawnSync(cxx, args, { stdio: 'inherit' });
  if (c.error) return `cannot run ${cxx}: ${c.error.message}`;
  if (c.status !== 0) {
    rmSync(tmp, { force: true });
    return `${cxx} exited with status ${c.status}`;
  }
  renameSync(tmp, target); // atomic: a running stub never sees a half-written module
  // Prove the interpreter can load it; a broken module must not be picked up by stubs.
  const check = spawnSync(
    python,
    [
      '-c',
      `import importlib.util as u; s=u.spec_from_file_location(${JSON.stringify(name)}, ${JSON.stringify(target)}); m=u.module_from_spec(s); s.loader.exec_module(m)`,
    ],
    { encoding: 'utf8' },
  );
  if (check.status !== 0) {
    rmSync(target, { force: true });
    return `${python} cannot import ${target}: ${check.stderr.trim()}`;
  }
  console.log(`[build-native] built ${path.relative(root, target)} for ${python}`);
  return true;
}
