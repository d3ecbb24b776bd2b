/**
 * @module backends/python/exec-env/exec-env
 * `EXECUTION_ENV_PATH`: which environment a model's stubs run in, under Triton's rules
 * (docs/protocol-notes.md, "Execution environments"; docs/design.md, "Python environment"):
 * - `$$TRITON_MODEL_DIRECTORY` is replaced by the model directory and the result normalised,
 *   so `$$TRITON_MODEL_DIRECTORY/../shared/env.tar.gz` may name a place beside the model;
 * - an absolute path may name any directory or archive on the host;
 * - a relative path without the placeholder is refused (Triton cannot resolve it either);
 * - a directory is used as it is; anything else is a (conda-pack) tar or tar.gz archive,
 *   unpacked once into the content-keyed cache (env-cache.ts), safely (unpack.ts);
 * - the environment must hold `bin/activate` (Triton requires it) and `bin/python` (the
 *   interpreter tritium starts the stub with).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Errors } from '../../../core/errors.js';
import { unpackedEnv } from './env-cache.js';
import { TarFormatError } from './tar-reader.js';
import { UnpackError } from './unpack.js';

export const MODEL_DIR_PLACEHOLDER = '$$TRITON_MODEL_DIRECTORY';

export interface ExecEnv {
  /** The environment directory (for an archive, its unpacked copy in the cache). */
  dir: string;
  python: string;
  /** The stub's environment: the server's, with the environment's bin and lib first. */
  env: NodeJS.ProcessEnv;
}

/** Where `envPath` points, by the rules above, or a TritonError naming the problem. */
export function locateExecEnv(envPath: string, modelDir: string): string {
  let p: string;
  if (envPath.includes(MODEL_DIR_PLACEHOLDER)) p = path.resolve(envPath.split(MODEL_DIR_PLACEHOLDER).join(path.resolve(modelDir)));
  else if (path.isAbsolute(envPath)) p = path.normalize(envPath);
  else {
    throw Errors.envPathRelative(envPath, MODEL_DIR_PLACEHOLDER);
  }
  try {
    return fs.realpathSync(p);
  } catch {
    throw Errors.envPathMissing(p);
  }
}

/** The environment `envPath` names, unpacked if it is an archive, checked, with its variables. */
export async function resolveExecEnv(envPath: string, modelDir: string, cacheDir?: string): Promise<ExecEnv> {
  const located = locateExecEnv(envPath, modelDir);
  let dir = located;
  if (!fs.statSync(located).isDirectory()) {
    try {
      dir = await unpackedEnv(located, cacheDir);
    } catch (err) {
      if (err instanceof UnpackError || err instanceof TarFormatError) {
        throw Errors.envUnpack(located, err.message);
      }
      if (err instanceof Error && /incorrect header check|unexpected end of file/.test(err.message)) {
        throw Errors.envNotGzip(located, err.message);
      }
      throw err;
    }
  }
  const activate = path.join(dir, 'bin', 'activate');
  if (!fs.existsSync(activate)) {
    throw Errors.envNoActivate(activate);
  }
  const python = path.join(dir, 'bin', 'python');
  if (!fs.existsSync(python)) throw Errors.envNoPython(envPath, dir);
  const lib = path.join(dir, 'lib');
  return {
    dir,
    python,
    // What Triton's launcher sets; bin/activate itself is not run (docs/protocol-notes.md, "Execution environments").
    env: {
      ...process.env,
      VIRTUAL_ENV: dir,
      PATH: `${path.join(dir, 'bin')}:${process.env['PATH'] ?? ''}`,
      LD_LIBRARY_PATH: process.env['LD_LIBRARY_PATH'] ? `${lib}:${process.env['LD_LIBRARY_PATH']}` : lib,
      PYTHONHOME: undefined,
    },
  };
}
