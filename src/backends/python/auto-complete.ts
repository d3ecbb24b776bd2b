/**
 * @module backends/python/auto-complete
 * Runs `TritonPythonModel.auto_complete_config` in a throw-away stub, as Triton does: the model
 * module is imported once more, the static method edits a `pb_utils.ModelConfig`, and the
 * resulting JSON comes back. The stub and its shared memory are gone when this returns.
 */
import { Errors } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { StubChannel, newRegionName } from './ipc/channel.js';
import { describeExit, spawnStub, stderrTail } from './stub-process.js';

export interface AutoCompleteRun {
  modelName: string;
  modelFile: string;
  python: string;
  env?: NodeJS.ProcessEnv;
  configJson: string;
  shmDefaultByteSize: number;
  shmGrowthByteSize: number;
  logger: Logger;
  timeoutMs: number;
}

export async function runAutoComplete(o: AutoCompleteRun): Promise<string> {
  const region = newRegionName(`${o.modelName}_autocomplete`);
  const channel = StubChannel.create({ region, defaultByteSize: o.shmDefaultByteSize, growthByteSize: o.shmGrowthByteSize });
  const child = spawnStub({
    python: o.python,
    env: o.env,
    modelFile: o.modelFile,
    region,
    wakeFd: channel.wakeFd,
    growthByteSize: o.shmGrowthByteSize,
    name: o.modelName,
    mode: 'autocomplete',
    logVerbose: o.logger.settings.verbose,
    logger: o.logger,
    label: o.modelName,
  });
  try {
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(Errors.autoCompleteTimeout(o.modelName, o.timeoutMs));
      }, o.timeoutMs);
      let settled = false;
      const done = (f: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        f();
      };
      child.once('error', (err) => done(() => reject(Errors.autoCompleteSpawn(o.python, o.modelName, err.message))));
      child.once('exit', (code, signal) => {
        // The answer may still sit in the ring: the stub answers, then exits at once.
        channel.drain();
        void stderrTail(child).then((tail) => done(() => reject(Errors.autoCompleteDied(o.modelName, describeExit({ code, signal }), tail))));
      });
      channel.onMessage((m: { t: string; config?: string; msg?: string; level?: string }) => {
        if (m.t === 'hello') channel.send({ t: 'autocomplete', config: o.configJson });
        else if (m.t === 'autocomplete_ok') done(() => resolve(String(m.config)));
        else if (m.t === 'autocomplete_err') done(() => reject(Errors.autoCompleteFailed(String(m.msg))));
        else if (m.t === 'log') o.logger.info(`[${o.modelName}] ${m.msg}`, o.modelName);
      });
    });
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      // The stub exits by itself after answering; make sure it does.
      const t = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(t);
    }
    channel.close();
  }
}
