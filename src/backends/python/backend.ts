/**
 * @module backends/python/backend
 * The Python backend: each instance of a model is a stub process running the unchanged
 * `model.py` (see stub-instance.ts); auto-complete runs in a throw-away stub.
 */
import { n0ByteSize } from './ipc/channel.js';
import { ShmReserve } from './ipc/shm-reserve.js';
import { segmentBacking } from './ipc/backing.js';
import fs from 'node:fs';
import path from 'node:path';
import type { AutoCompleteContext, Backend, InstanceHooks, LoadedModel, ModelVersionContext } from '../../core/backend.js';
import { Errors } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { ModelConfig } from '../../generated/model_config_pb.js';
import { expandInstances } from '../../core/config/instances.js';
import { modelConfigFromJson, modelConfigToJson } from '../../core/config/json.js';
import { resolveInside } from '../../core/repository/safe-path.js';
import { DEFAULT_BACKEND_DIRECTORY, pythonBasedDir } from '../../core/model/backend-resolution.js';
import { runAutoComplete } from './auto-complete.js';
import { pythonFor } from './stub-paths.js';
import { checkStubNames, isValidRegionPrefix, isValidStubName } from './stub-name.js';
import { StubInstance } from './stub-instance.js';
import { ForkServers } from './fork-server.js';
import type { PythonBackendOptions } from './options.js';

export class PythonBackend implements Backend {
  readonly name = 'python';
  /** Every live instance, for metrics (shared-memory bytes) and tests. */
  readonly instances = new Set<StubInstance>();
  /**
   * /dev/shm space held for restarting a stub (ipc/shm-reserve.ts). Used only where segments
   * are /dev/shm files: memfds take memory, which no neighbour fills to the last byte the way
   * files fill a small /dev/shm (docs/design.md, "Supervision").
   */
  readonly shmReserve: ShmReserve;
  /** Where stubs are forked from (`stub-start=fork`); undefined when every stub is spawned. */
  private readonly forks: ForkServers | undefined;

  constructor(private readonly o: PythonBackendOptions) {
    this.shmReserve = new ShmReserve(n0ByteSize(o.shmDefaultByteSize));
    this.forks = o.stubStart === 'spawn' ? undefined : new ForkServers();
  }

  /** Ends the fork servers (the instances were stopped before) and drops the /dev/shm reserve. */
  async close(): Promise<void> {
    this.shmReserve.drop();
    await this.forks?.close();
  }

  /**
   * The model file the stub is given (`get_model_dir()` is its directory), the directory of a
   * Python-based backend, and the Python file actually imported: the model's own model.py, or
   * `<backend-directory>/<backend>/model.py` (core/model/backend-resolution.ts checked it).
   */
  private files(versionDir: string, config: ModelConfig, logger: Logger): { modelFile: string; runtimeDir?: string; source: string } {
    const runtimeDir = pythonBasedDir(config, this.o.backendDirectory ?? DEFAULT_BACKEND_DIRECTORY);
    if (runtimeDir !== undefined) {
      // As Triton: the version directory's model file need not exist.
      const modelFile = path.join(versionDir, config.defaultModelFilename || 'model.py');
      return { modelFile, runtimeDir, source: path.join(runtimeDir, 'model.py') };
    }
    const file = this.modelFile(versionDir, config, logger);
    return { modelFile: file, source: file };
  }

  private modelFile(versionDir: string, config: ModelConfig, logger: Logger): string {
    const file = resolveInside(versionDir, config.defaultModelFilename || 'model.py', 'default_model_filename');
    if (!fs.existsSync(file)) {
      // Triton's stub logs this line (at INFO) before the load fails; harnesses grep for it.
      logger.info(`Failed to preinitialize Python stub: Python model file not found in '${file}'`, config.name);
      throw Errors.modelFileMissing(file, config.name);
    }
    return file;
  }

  async autoComplete(ctx: AutoCompleteContext, config: ModelConfig): Promise<ModelConfig> {
    // No stub for a name the version load refuses anyway (stub-name.ts): that refusal, with
    // Triton's text, is what the client gets.
    if (!isValidStubName(ctx.source.name) || !isValidRegionPrefix(this.o.shmRegionPrefixName)) return config;
    const { modelFile, runtimeDir, source } = this.files(ctx.versionDir, config, ctx.logger);
    // Triton starts a throw-away stub for every Python model, even one that defines no
    // auto_complete_config. A model file that never mentions it cannot change the config, so
    // tritium skips that process: one interpreter start (and numpy import) less per model.
    if (!fs.readFileSync(source, 'utf8').includes('auto_complete_config')) return config;
    const { python, env } = await pythonFor(config, ctx.source.dir, this.o.pythonExecutable);
    const json = await runAutoComplete({
      modelName: ctx.source.name,
      modelFile,
      runtimeDir,
      python,
      env,
      configJson: JSON.stringify(modelConfigToJson(config)),
      shmDefaultByteSize: this.o.shmDefaultByteSize,
      shmGrowthByteSize: this.o.shmGrowthByteSize,
      logger: ctx.logger,
      timeoutMs: 120_000,
      ...(this.forks ? { forks: this.forks } : {}),
    });
    return modelConfigFromJson(JSON.parse(json));
  }

  /** The server's verbose level changed: every live stub filters with the new one. */
  setLogVerbose(level: number): void {
    for (const i of this.instances) i.setLogVerbose(level);
  }

  async load(ctx: ModelVersionContext, hooks: InstanceHooks): Promise<LoadedModel> {
    const { config } = ctx;
    const specs = expandInstances(config);
    checkStubNames(
      config.name,
      specs.map((s) => s.name),
      this.o.shmRegionPrefixName,
    );
    const { python, env } = await pythonFor(config, ctx.source.dir, this.o.pythonExecutable);
    const { modelFile, runtimeDir } = this.files(ctx.versionDir, config, ctx.logger);
    // Triton's Python backend logs the configuration it loads at verbose level 1 (python_be.cc):
    // how Model Analyzer's users see, in the server log, which configuration each load served.
    ctx.logger.verbose(1, `model configuration:\n${JSON.stringify(JSON.parse(ctx.configJson), null, 4)}`);
    const decoupled = config.modelTransactionPolicy?.decoupled === true;
    const instances = specs.map(
      (spec) =>
        new StubInstance({
          modelName: config.name,
          instanceName: spec.name,
          kind: spec.kind,
          deviceId: spec.deviceId,
          modelFile,
          runtimeDir,
          python,
          env,
          initArgs: {
            model_config: ctx.configJson,
            model_instance_kind: spec.kind,
            model_instance_name: spec.name,
            model_instance_device_id: String(spec.deviceId),
            model_repository: ctx.source.dir,
            model_version: String(ctx.version),
            model_name: config.name,
          },
          decoupled,
          shmDefaultByteSize: this.o.shmDefaultByteSize,
          shmGrowthByteSize: this.o.shmGrowthByteSize,
          stubTimeoutSeconds: this.o.stubTimeoutSeconds,
          initializeTimeoutSeconds: this.o.initializeTimeoutSeconds ?? 0,
          ...(this.o.maxAsyncExecutes ? { maxAsyncExecutes: this.o.maxAsyncExecutes } : {}),
          concurrentAsyncExecutes: Number(config.parameters.CONCURRENT_ASYNC_EXECUTES?.stringValue ?? this.o.concurrentAsyncExecutes ?? 1),
          ipcWait: this.o.ipcWait,
          logger: ctx.logger,
          hooks,
          calls: { client: ctx.client, modelControl: this.o.modelControl, customMetrics: this.o.customMetrics },
          cpus: this.o.hostPolicies?.get(spec.hostPolicy),
          ...(segmentBacking() === 'dev-shm' ? { shmReserve: this.shmReserve } : {}),
          ...(this.forks ? { forks: this.forks } : {}),
        }),
    );
    for (const i of instances) this.instances.add(i);
    // Instances start in parallel; one failure fails the load and stops the others.
    const results = await Promise.allSettled(instances.map((i) => i.start()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await Promise.all(instances.map((i) => i.stop(5000)));
      for (const i of instances) this.instances.delete(i);
      throw failed.reason instanceof Error ? failed.reason : new Error(String(failed.reason));
    }
    return {
      instances,
      unload: async (timeoutMs: number) => {
        await Promise.all(instances.map((i) => i.stop(timeoutMs)));
        for (const i of instances) this.instances.delete(i);
      },
    };
  }
}
