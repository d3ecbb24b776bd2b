/**
 * @module backends/python/stub-paths
 * Where the Python side of tritium lives, and which interpreter runs a model's stubs.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ModelConfig } from '../../generated/model_config_pb.js';
import { resolveExecEnv } from './exec-env/exec-env.js';

/** `<repo>/stub`: this file sits three levels below the package root, in src/ and in dist/. */
export const STUB_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../stub');
export const STUB_MAIN = path.join(STUB_DIR, 'main.py');
/** The fork server every forked stub comes from (fork-server.ts). */
export const STUB_FORK_SERVER = path.join(STUB_DIR, 'fork_server.py');

/**
 * The interpreter for one model: the environment `EXECUTION_ENV_PATH` names (a directory or a
 * packed archive, see exec-env/exec-env.ts) when the config sets it, else the server's setting.
 */
export async function pythonFor(config: ModelConfig, modelDir: string, serverPython: string): Promise<{ python: string; env?: NodeJS.ProcessEnv }> {
  const envPath = config.parameters['EXECUTION_ENV_PATH']?.stringValue;
  if (!envPath) return { python: serverPython };
  const { python, env } = await resolveExecEnv(envPath, modelDir);
  return { python, env };
}
