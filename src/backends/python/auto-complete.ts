/**
 * @module backends/python/auto-complete
 * Runs `TritonPythonModel.auto_complete_config` in a throw-away stub, as Triton does: the model
 * module is imported once more, the static method edits a `pb_utils.ModelConfig`, and the
 * resulting JSON comes back. The stub and its shared memory are gone when this returns.
 */
import { Errors } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { LaunchedStub } from './launcher.js';
import type { ForkServers } from './fork-server.js';

export interface AutoCompleteRun {
  modelName: string;
  modelFile: string;
  /**
   * A Python-based backend's directory (`<backend-directory>/<backend>`): the stub imports its
   * model.py as module `model` with this directory on sys.path, while `modelFile` still names
   * the model's version directory (get_model_dir()).
   */
  runtimeDir?: string;
  python: string;
  env?: NodeJS.ProcessEnv;
  configJson: string;
  shmDefaultByteSize: number;
  shmGrowthByteSize: number;
  logger: Logger;
  timeoutMs: number;
  /** The backend's fork servers; the stub is spawned when absent. */
  forks?: ForkServers;
}

export async function runAutoComplete(o: AutoCompleteRun): Promise<string> {
  const stub = new LaunchedStub({
    python: o.python,
    env: o.env,
    modelFile: o.modelFile,
    runtimeDir: o.runtimeDir,
    name: o.modelName,
    mode: 'autocomplete',
    regionPrefix: `${o.modelName}_autocomplete`,
    shmDefaultByteSize: o.shmDefaultByteSize,
    shmGrowthByteSize: o.shmGrowthByteSize,
    logger: o.logger,
    label: o.modelName,
    logSource: o.modelName,
    ...(o.forks ? { forks: o.forks } : {}),
    deathError: (exit, tail) =>
      exit.spawnError ? Errors.autoCompleteSpawn(o.python, o.modelName, exit.spawnError.message) : Errors.autoCompleteDied(o.modelName, exit.cause, tail),
  });
  stub.onMessage = (m) => {
    if (m.t === 'log') o.logger.info(`[${o.modelName}] ${m.msg}`, o.modelName);
  };
  const ask = async () => {
    await stub.expect(['hello']);
    stub.channel.send({ t: 'autocomplete', config: o.configJson });
    const reply = await stub.expect(['autocomplete_ok', 'autocomplete_err']);
    if (reply.t === 'autocomplete_err') throw Errors.autoCompleteFailed(String(reply.msg));
    return String(reply.config);
  };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Errors.autoCompleteTimeout(o.modelName, o.timeoutMs)), o.timeoutMs);
  });
  const answer = ask();
  // Past the timeout the stub is killed below, and the question left waiting fails unheard.
  answer.catch(() => {});
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    clearTimeout(timer);
    // The stub exits by itself after answering; make sure it does.
    await stub.dispose(2000);
  }
}
