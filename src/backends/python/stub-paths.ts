/**
 * @module backends/python/stub-paths
 * Where the Python side of tritium lives, and which interpreter runs a model's stubs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ModelConfig } from '../../generated/model_config_pb.js';
import { resolveInside } from '../../core/repository/safe-path.js';

/** `<repo>/stub`: this file sits three levels below the package root, in src/ and in dist/. */
export const STUB_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../stub');
export const STUB_MAIN = path.join(STUB_DIR, 'main.py');

/**
 * The interpreter for one model: `EXECUTION_ENV_PATH` (a directory holding `bin/python`,
 * `$$TRITON_MODEL_DIRECTORY` expanded) when the config names one, else the server's setting.
 */
export function pythonFor(config: ModelConfig, modelDir: string, serverPython: string): { python: string; env?: NodeJS.ProcessEnv } {
  const envPath = config.parameters['EXECUTION_ENV_PATH']?.stringValue;
  if (!envPath) return { python: serverPython };
  const rel = envPath.replace('$$TRITON_MODEL_DIRECTORY', '.');
  const dir = path.isAbsolute(rel) ? rel : resolveInside(modelDir, rel, 'EXECUTION_ENV_PATH');
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new Error(
      `EXECUTION_ENV_PATH '${envPath}' is not a directory; tritium runs environments unpacked ` +
        `(a virtualenv or an unpacked conda-pack with bin/python)`,
    );
  }
  const python = path.join(dir, 'bin', 'python');
  if (!fs.existsSync(python)) throw new Error(`EXECUTION_ENV_PATH '${envPath}' has no bin/python`);
  return {
    python,
    env: { ...process.env, VIRTUAL_ENV: dir, PATH: `${path.join(dir, 'bin')}:${process.env.PATH ?? ''}`, PYTHONHOME: undefined },
  };
}
