/**
 * @module core/model/backend-resolution
 * Which backend serves a model, as Triton's core decides it (docs/protocol-notes.md,
 * "Python-based backends"): `python` and `onnxruntime` are built in; for any other `backend: X`
 * a native `libtriton_X.so` (in the version directory, the model directory or
 * `<backend-directory>/X`) is refused, since tritium loads no native library, and
 * `<backend-directory>/X/model.py` makes X a Python-based backend: the model runs under the
 * Python backend with that file, and its config says `runtime: "model.py"` (as Triton sets it).
 * `runtime: "model.py"` forces the Python-based path; any other `runtime` names a library.
 * No path may leave the backend's directory, through `..` or a link. A Python-based backend's
 * `pb_exec_env_model.py.tar.gz` is the model's `EXECUTION_ENV_PATH` unless the model sets one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { type ModelConfig, ModelParameterSchema } from '../../generated/model_config_pb.js';
import type { Backend } from '../backend.js';
import { Errors } from '../errors.js';
import { isInside, resolveInside } from '../repository/safe-path.js';

/** tritonserver's default `--backend-directory`. */
export const DEFAULT_BACKEND_DIRECTORY = '/opt/tritonserver/backends';

/** The runtime value of a Python-based backend's models. */
export const PYTHON_BASED_RUNTIME = 'model.py';

/** Where a Python-based backend lives, once resolved. */
export interface PythonBasedBackend {
  /** `<backend-directory>/<name>`, real path. */
  dir: string;
  /** `<dir>/model.py`. */
  modelPy: string;
}

export interface ResolveOptions {
  backends: ReadonlyMap<string, Backend>;
  backendDirectory: string;
  /** The config file (error locations). */
  file: string;
}

/** The backend object of a config whose backend was resolved (a Python-based one runs on `python`). */
export function backendOf(config: ModelConfig, backends: ReadonlyMap<string, Backend>): Backend | undefined {
  return config.runtime === PYTHON_BASED_RUNTIME ? backends.get('python') : backends.get(config.backend);
}

/** The directory of a Python-based backend model (`runtime: "model.py"`), or undefined. */
export function pythonBasedDir(config: ModelConfig, backendDirectory: string): string | undefined {
  return config.runtime === PYTHON_BASED_RUNTIME ? path.join(backendDirectory, config.backend) : undefined;
}

/**
 * Resolves `config.backend` (and `runtime`) for the model in `modelDir`, whose newest version is
 * in `versionDir`: returns the backend that serves it, setting `runtime: "model.py"` and the
 * default execution environment for a Python-based one; throws the load error otherwise.
 */
export function resolveBackend(config: ModelConfig, modelDir: string, versionDir: string | undefined, o: ResolveOptions): Backend {
  const name = config.backend;
  const at = { file: o.file, field: 'backend' };
  const atRuntime = { file: o.file, field: 'runtime' };
  const builtIn = o.backends.get(name);
  const runtime = config.runtime;
  if (builtIn !== undefined && (runtime === '' || runtime === `libtriton_${name}.so`)) return builtIn;
  const dir = path.join(o.backendDirectory, name);
  if (runtime !== '' && runtime !== PYTHON_BASED_RUNTIME) {
    // A library file: tritium cannot load one, but a name that leaves its directory gets Triton's text first.
    const lib = confined(dir, runtime, config.name, atRuntime);
    throw Errors.configNativeBackend(at, name, config.name, lib);
  }
  if (runtime === '') {
    const lib = `libtriton_${name}.so`;
    for (const d of [versionDir, modelDir, dir]) {
      if (d === undefined) continue;
      const p = path.join(d, lib);
      if (fs.existsSync(p)) throw Errors.configNativeBackend(at, name, config.name, p);
    }
  }
  const modelPy = path.join(dir, PYTHON_BASED_RUNTIME);
  // A backend name such as '../x' would take the lookup out of the backend directory.
  if (path.relative(o.backendDirectory, dir) === '' || !isInside(o.backendDirectory, dir))
    throw Errors.configBackendEscape(at, path.join(name, PYTHON_BASED_RUNTIME), o.backendDirectory, config.name);
  if (!fs.existsSync(modelPy)) {
    if (runtime === PYTHON_BASED_RUNTIME) throw Errors.configBackendModelPyMissing(at, config.name, modelPy);
    throw Errors.configUnsupportedBackend(at, name, modelPy);
  }
  confined(dir, PYTHON_BASED_RUNTIME, config.name, atRuntime);
  config.runtime = PYTHON_BASED_RUNTIME;
  const env = path.join(dir, `pb_exec_env_${PYTHON_BASED_RUNTIME}.tar.gz`);
  if (config.parameters.EXECUTION_ENV_PATH === undefined && fs.existsSync(env)) {
    config.parameters.EXECUTION_ENV_PATH = create(ModelParameterSchema, { stringValue: fs.realpathSync(env) });
  }
  const python = o.backends.get('python');
  if (python === undefined) throw Errors.configUnsupportedBackend(at, name, modelPy);
  return python;
}

/** `<dir>/<file>` as a real path, refused with Triton's text when it leaves `dir` (also through links). */
function confined(dir: string, file: string, model: string, at: { file: string; field: string }): string {
  try {
    return resolveInside(dir, file, 'runtime');
  } catch {
    throw Errors.configBackendEscape(at, file, dir, model);
  }
}
