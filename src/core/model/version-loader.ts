/**
 * @module core/model/version-loader
 * Loads one version of a model through its backend and warms every instance up; the result is a
 * servable ModelVersion or the reason it is not.
 */
import path from 'node:path';
import type { ModelConfig } from '../../generated/model_config_pb.js';
import type { Backend, BackendInstance, InstanceHooks, LoadedModel } from '../backend.js';
import type { InternalClient } from '../internal-client.js';
import type { Logger } from '../logger.js';
import type { ModelSource } from '../repository/scan.js';
import { ModelVersion } from './model-version.js';
import { readOutputLabels } from './output-labels.js';
import { readSequenceStates } from './sequence-state.js';
import type { ResponseCache } from '../cache/response-cache.js';
import type { RateLimiter } from '../scheduling/rate-limiter.js';
import { expandInstances } from '../config/instances.js';
import type { InferenceObserver } from './observer.js';
import { warmupInstance, warmupThroughScheduler } from './warmup.js';

export interface VersionLoad {
  source: ModelSource;
  config: ModelConfig;
  json: Record<string, unknown>;
  version: number;
  backend: Backend;
  logger: Logger;
  client: InternalClient;
  observer: InferenceObserver;
  /** Called when an instance stops being ready after the version served (supervision gave up?). */
  onInstanceLost: (mv: ModelVersion) => void;
  /** While the backend loads: a short note for the repository index (`initializing for 10 s`). */
  onProgress?: (reason: string) => void;
  /** The server's response cache, for versions whose config enables it. */
  responseCache?: ResponseCache;
  /** The server's rate limiter, when on: the version's instances run as it grants their resources. */
  rateLimiter?: RateLimiter;
}

/**
 * How often a load that has not finished says so. A model's `initialize` may run for as long as
 * it likes (Triton does not bound it; `--backend-config=python,initialize-timeout-seconds` can),
 * so a load that seems stuck is visible in the log and the repository index, not silent.
 */
export const LOAD_PROGRESS_MS = 5000;

/** Resolves with the loaded version; rejects with the backend's or the warm-up's error. */
export async function loadVersion(l: VersionLoad): Promise<ModelVersion> {
  const { source, config, version } = l;
  l.logger.info(`loading: ${source.name}:${version}`);
  const started = process.hrtime.bigint();
  let mv: ModelVersion | undefined;
  const hooks: InstanceHooks = {
    onReadinessChange: (instance, ready) => {
      if (ready) mv?.scheduler.kick();
      else if (mv) {
        mv.scheduler.instanceDown?.(instance, instance.reason || 'stopped');
        l.onInstanceLost(mv);
      }
    },
    onRestart: (i: BackendInstance) => l.observer.stubRestart(source.name, i.name),
    warmup: (i: BackendInstance) => warmupInstance(source, config, i),
  };
  // Before any instance starts: a missing label file fails the load at once.
  const labels = readOutputLabels(source.dir, config);
  const states = readSequenceStates(source.dir, config);
  const versionDir = path.join(source.dir, String(version));
  const configJson = JSON.stringify(l.json);
  const progress = setInterval(() => {
    const secs = Math.round(Number(process.hrtime.bigint() - started) / 1e9);
    l.logger.info(`loading: ${source.name}:${version} is still initializing its instances after ${secs} s`);
    l.onProgress?.(`initializing for ${secs} s`);
  }, LOAD_PROGRESS_MS);
  progress.unref();
  let loaded;
  try {
    loaded = await l.backend.load({ source, version, versionDir, config, configJson, logger: l.logger, client: l.client }, hooks);
  } finally {
    clearInterval(progress);
  }
  // Triton's per-instance line, which tuning guides read to see where each instance runs.
  for (const i of loaded.instances) l.logger.info(`TRITONBACKEND_ModelInstanceInitialize: ${i.name} (${i.kind} device ${i.deviceId})`);
  if (l.rateLimiter !== undefined) {
    try {
      registerRateLimits(l.rateLimiter, config, loaded);
    } catch (err) {
      await loaded.unload(5000);
      throw err;
    }
  }
  try {
    for (const instance of loaded.instances) await warmupInstance(source, config, instance);
  } catch (err) {
    await loaded.unload(5000);
    throw err;
  }
  // Registered before the version exists: its statistics listener is looked up then.
  const secs = Number(process.hrtime.bigint() - started) / 1e9;
  l.observer.modelLoaded(source.name, String(version), () => mv?.scheduler.pendingCount() ?? 0, secs, config);
  mv = new ModelVersion(config, l.json, version, loaded, l.observer, labels, states, l.responseCache, l.rateLimiter, source.dir);
  const runUncounted = mv.scheduler.runUncounted?.bind(mv.scheduler);
  if (loaded.instances.length === 0 && runUncounted && config.modelWarmup.length > 0) {
    // A model without instances (an ensemble) warms through its scheduler (warmup.ts).
    try {
      await warmupThroughScheduler(source, config, runUncounted);
    } catch (err) {
      mv.scheduler.stop();
      await loaded.unload(5000);
      l.observer.modelUnloaded(source.name, String(version));
      throw err;
    }
  }
  l.logger.info(`successfully loaded '${source.name}' version ${version}`);
  return mv;
}

/** Registers each instance's `rate_limiter` (its group's) with the limiter, and has the version's unload forget them. */
function registerRateLimits(limiter: RateLimiter, config: ModelConfig, loaded: LoadedModel): void {
  if (loaded.instances.length === 0) return;
  const specs = expandInstances(config);
  const groups = new Map(config.instanceGroup.map((g) => [g.name, g]));
  const entries = loaded.instances.map((instance, k) => {
    const spec = specs[k];
    const group = spec !== undefined && spec.name === instance.name ? groups.get(spec.groupName) : undefined;
    const rl = group?.rateLimiter;
    return {
      instance,
      device: instance.kind === 'GPU' ? instance.deviceId : 0,
      resources: (rl?.resources ?? []).map((r) => ({ name: r.name, global: r.global, count: r.count })),
      priority: rl?.priority ?? 0,
    };
  });
  limiter.register(entries);
  const unload = loaded.unload.bind(loaded);
  (loaded as { unload: LoadedModel['unload'] }).unload = (timeoutMs) => {
    limiter.unregister(loaded.instances);
    return unload(timeoutMs);
  };
}
