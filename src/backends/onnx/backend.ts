/**
 * @module backends/onnx/backend
 * The onnxruntime backend: models with `backend: "onnxruntime"` (or platform
 * `onnxruntime_onnx`) and `model.onnx` (or `default_model_filename`) in the version directory,
 * served in-process through onnxruntime-node behind the same Backend interface as Python
 * models, so the frontends, schedulers, dynamic batcher, warmup, statistics and metrics are
 * shared. Auto-complete reads the graph (auto-complete.ts); each instance owns one session
 * (instance.ts); session options and the execution provider come from session.ts.
 */
import fs from 'node:fs';
import type { AutoCompleteContext, Backend, InstanceHooks, LoadedModel, ModelVersionContext } from '../../core/backend.js';
import { expandInstances } from '../../core/config/instances.js';
import { Errors } from '../../core/errors.js';
import { silentLogger, type Logger } from '../../core/logger.js';
import { resolveInside } from '../../core/repository/safe-path.js';
import type { ModelConfig } from '../../generated/model_config_pb.js';
import { autoCompleteFromGraph } from './auto-complete.js';
import type { RestartPolicy } from '../../core/instance/lifecycle.js';
import { OnnxInstance } from './instance.js';
import { openSession, type RunIn, type SessionSpec } from './runner.js';
import { preloadCudaLibraries } from './cuda/preload.js';
import { ortBinaryDir } from './ort-location.js';
import { chooseProvider, cudaProviderInstalled, firstProvider, sessionSettings, tensorrtProviderInstalled, CUDA_HINT } from './session.js';

export interface OnnxBackendOptions {
  /** `--backend-config=onnxruntime,default-max-batch-size=N` (Triton's default: 4). */
  defaultMaxBatchSize: number;
  /** Usable GPU ids (core/gpus.ts). */
  gpus: number[];
  logger?: Logger;
  /** Where sessions run: a worker thread per instance (default) or the main thread. */
  runIn?: RunIn;
  /** Overrides the check for onnxruntime-node's CUDA provider library (tests). */
  cudaInstalled?: boolean;
  /** Overrides the check for its TensorRT provider library (tests). */
  tensorrtInstalled?: boolean;
  /** Overrides of the core's restart policy for instances whose worker died (tests). */
  restartPolicy?: Partial<RestartPolicy>;
}

const SOURCE = 'onnxruntime';

export class OnnxBackend implements Backend {
  readonly name = 'onnxruntime';
  /** Every live instance (tests, diagnostics). */
  readonly instances = new Set<OnnxInstance>();
  private readonly runIn: RunIn;
  private readonly cudaInstalled: boolean;
  private readonly tensorrtInstalled: boolean;
  /** Lines already logged, so a reason shows once per model, not once per instance. */
  private readonly logged = new Set<string>();

  constructor(private readonly o: OnnxBackendOptions) {
    this.runIn = o.runIn ?? 'worker';
    this.cudaInstalled = o.cudaInstalled ?? cudaProviderInstalled();
    this.tensorrtInstalled = o.tensorrtInstalled ?? tensorrtProviderInstalled();
  }

  private modelFile(versionDir: string, config: ModelConfig): string {
    const file = resolveInside(versionDir, config.defaultModelFilename || 'model.onnx', 'default_model_filename');
    if (!fs.existsSync(file)) throw Errors.modelFileMissing(file, config.name);
    return file;
  }

  private logOnce(logger: Logger, level: 'info' | 'warn', key: string, message: string): void {
    if (this.logged.has(key)) return;
    this.logged.add(key);
    logger[level](message, SOURCE);
  }

  async autoComplete(ctx: AutoCompleteContext, config: ModelConfig): Promise<ModelConfig> {
    // A config that lists inputs and outputs is taken as written (and checked at load).
    if (config.input.length + config.batchInput.length > 0 && config.output.length > 0) {
      return autoCompleteFromGraph(config, { inputs: [], outputs: [] }, this.o.defaultMaxBatchSize, ctx.logger);
    }
    const modelPath = this.modelFile(ctx.versionDir, config);
    // Metadata only: a cheap CPU session without graph optimisation.
    let runner;
    try {
      runner = await openSession({ modelPath, options: { graphOptimizationLevel: 'disabled', executionProviders: ['cpu'], intraOpNumThreads: 1 } }, this.runIn);
    } catch (err) {
      throw Errors.onnxAutofillLoad(config.name, modelPath, (err as Error).message);
    }
    try {
      return autoCompleteFromGraph(config, runner.info, this.o.defaultMaxBatchSize, ctx.logger);
    } finally {
      await runner.close();
    }
  }

  async load(ctx: ModelVersionContext, hooks: InstanceHooks): Promise<LoadedModel> {
    const { config } = ctx;
    const logger = ctx.logger ?? this.o.logger ?? silentLogger;
    const modelPath = this.modelFile(ctx.versionDir, config);
    const model = `${config.name}:${ctx.version}`;
    const instances = expandInstances(config).map((spec) => {
      let choice = chooseProvider(spec.kind, spec.deviceId, this.o.gpus, this.cudaInstalled);
      if (choice.provider === 'cuda') {
        // CUDA libraries from `tritium install-cuda` load before the first CUDA session.
        const failure = preloadCudaLibraries(ortBinaryDir());
        if (failure !== undefined) choice = { provider: 'cpu', fallbackReason: failure };
      }
      if (choice.fallbackReason) {
        this.logOnce(
          logger,
          'warn',
          `${model}:fallback:${choice.fallbackReason}`,
          `model '${config.name}' runs on CPU instead of GPU: ${choice.fallbackReason}`,
        );
      }
      const settings = sessionSettings(config, choice.provider, spec.deviceId, { tensorrt: this.tensorrtInstalled });
      for (const note of settings.notes) this.logOnce(logger, 'warn', `${model}:note:${note}`, `model '${config.name}': ${note}`);
      // Each session that cannot be created falls back to the next: TensorRT, CUDA, CPU.
      const sessions: SessionSpec[] = [{ modelPath, options: settings.options }];
      if (firstProvider(settings.options) === 'tensorrt') sessions.push({ modelPath, options: sessionSettings(config, 'cuda', spec.deviceId).options });
      if (choice.provider === 'cuda') sessions.push({ modelPath, options: sessionSettings(config, 'cpu', 0).options });
      return new OnnxInstance({
        config,
        name: spec.name,
        kind: spec.kind,
        deviceId: spec.deviceId,
        sessions,
        runIn: this.runIn,
        logger,
        hooks,
        restartPolicy: this.o.restartPolicy,
        onFallback: (failed, err) =>
          firstProvider(failed.options) === 'tensorrt'
            ? this.logOnce(
                logger,
                'warn',
                `${model}:tensorrt-failed`,
                `model '${config.name}' runs on the CUDA provider instead of TensorRT: creating a TensorRT session failed (${err.message})`,
              )
            : this.logOnce(
                logger,
                'warn',
                `${model}:cuda-failed`,
                `model '${config.name}' runs on CPU instead of GPU: creating a CUDA session failed (${err.message}; ${CUDA_HINT})`,
              ),
      });
    });
    for (const i of instances) this.instances.add(i);
    const stopAll = async () => {
      await Promise.all(instances.map((i) => i.stop().catch(() => {})));
      for (const i of instances) this.instances.delete(i);
    };
    // Instances open in parallel; the first failure (bad file, config contradicting the graph)
    // fails the load and closes the others.
    const results = await Promise.allSettled(instances.map((i) => i.start()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await stopAll();
      throw failed.reason instanceof Error ? failed.reason : new Error(String(failed.reason));
    }
    logger.info(
      `model '${config.name}' version ${ctx.version}: ${instances.length} onnxruntime instance(s) on ${[...new Set(instances.map((i) => i.provider))].join('/')}` +
        ` (${this.runIn === 'worker' ? 'one worker thread each' : 'main thread'})`,
      SOURCE,
    );
    return {
      instances,
      unload: async (timeoutMs: number) => {
        await Promise.race([stopAll(), new Promise((r) => setTimeout(r, timeoutMs).unref())]);
      },
    };
  }
}

/**
 * Backend options from the server's `--backend-config` entries: `onnxruntime,default-max-batch-size=N`
 * (Triton's spelling; the global `default-max-batch-size` is the fallback the CLI already parsed)
 * and `onnxruntime,run-in=worker|main`. Throws a message naming the bad entry.
 */
export function onnxBackendOptions(
  backendConfig: ReadonlyMap<string, ReadonlyMap<string, string>>,
  globalDefaultMaxBatchSize: number,
  gpus: number[],
  logger?: Logger,
): OnnxBackendOptions {
  const own = backendConfig.get('onnxruntime') ?? new Map<string, string>();
  for (const key of own.keys()) {
    if (key !== 'default-max-batch-size' && key !== 'run-in') {
      throw new Error(`--backend-config=onnxruntime,${key}: unknown onnxruntime backend setting (known: default-max-batch-size, run-in).`);
    }
  }
  const dmbs = own.get('default-max-batch-size');
  if (dmbs !== undefined && !/^\d+$/.test(dmbs)) {
    throw new Error(`--backend-config=onnxruntime,default-max-batch-size expects a non-negative integer, got '${dmbs}'.`);
  }
  const runIn = own.get('run-in') ?? 'worker';
  if (runIn !== 'worker' && runIn !== 'main') {
    throw new Error(`--backend-config=onnxruntime,run-in expects 'worker' or 'main', got '${runIn}'.`);
  }
  return { defaultMaxBatchSize: dmbs === undefined ? globalDefaultMaxBatchSize : Number(dmbs), gpus, logger, runIn };
}
