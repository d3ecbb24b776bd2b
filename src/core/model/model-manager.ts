/**
 * @module core/model/model-manager
 * Model lifecycle: scan the repositories, turn each model directory into a normalised config
 * (parse → backend inference → auto-complete → normalise → validate), pick versions by the
 * version policy, load each version through its backend, warm it up, and keep the state of
 * every version (READY / UNAVAILABLE with a reason) for readiness, lookups and the index.
 */
import fs from 'node:fs';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { ModelConfigSchema, type ModelConfig } from '../../generated/model_config_pb.js';
import type { Backend, BackendInstance, InstanceHooks } from '../backend.js';
import { modelConfigToJson } from '../config/json.js';
import { inferBackend, normalizeModelConfig } from '../config/normalize.js';
import { parseModelConfigTextWithPositions, type SourceMap } from '../config/parse.js';
import { validateModelConfig } from '../config/validate.js';
import { asTritonError, Errors } from '../errors.js';
import type { InferRequest, ResponseSink } from '../inference.js';
import type { InternalClient } from '../internal-client.js';
import type { Logger } from '../logger.js';
import { scanRepositories, type ModelSource } from '../repository/scan.js';
import type { RepositoryIndexEntry } from '../server-core.js';
import { ModelVersion } from './model-version.js';
import type { InferenceObserver } from './observer.js';
import { selectVersions } from './version-policy.js';
import { warmupInstance } from './warmup.js';

export interface ModelManagerOptions {
  repositories: string[];
  autoCompleteConfig: boolean;
  defaultMaxBatchSize: number;
  gpus: number[];
  backends: Map<string, Backend>;
  logger: Logger;
  observer: InferenceObserver;
}

type VersionState = 'LOADING' | 'READY' | 'UNAVAILABLE' | 'UNLOADING';

interface VersionEntry {
  state: VersionState;
  reason: string;
  model?: ModelVersion;
}

interface ModelEntry {
  name: string;
  versions: Map<number, VersionEntry>;
  /** A failure before any version could be tried (config error, unknown backend). */
  error?: string;
}

export class ModelManager {
  private readonly models = new Map<string, ModelEntry>();
  /** Other models as backends see them (BLS, ensembles): no server state check, same core path. */
  readonly client: InternalClient = {
    infer: (request: InferRequest, sink: ResponseSink) => {
      let mv: ModelVersion;
      try {
        mv = this.resolve(request.modelName, request.modelVersion);
      } catch (err) {
        sink({ modelName: request.modelName, modelVersion: request.modelVersion, id: request.id, outputs: [], error: asTritonError(err), final: true });
        return;
      }
      mv.infer(request, sink);
    },
    resolveModel: (name, version) => this.resolve(name, version),
    isModelReady: (name, version) => {
      try {
        return this.resolve(name, version).isReady();
      } catch {
        return false;
      }
    },
  };

  constructor(private readonly o: ModelManagerOptions) {}

  /** Loads every model of the repositories; resolves with the names that failed. */
  async loadAll(): Promise<Array<{ name: string; reason: string }>> {
    const scan = scanRepositories(this.o.repositories);
    for (const u of scan.unavailable) this.models.set(u.name, { name: u.name, versions: new Map(), error: u.reason });
    await Promise.all(scan.models.map((m) => this.loadModel(m)));
    const failed: Array<{ name: string; reason: string }> = [...scan.unavailable];
    for (const entry of this.models.values()) {
      if (entry.error && !failed.some((f) => f.name === entry.name)) failed.push({ name: entry.name, reason: entry.error });
      for (const [v, ve] of entry.versions) {
        if (ve.state !== 'READY') failed.push({ name: `${entry.name}:${v}`, reason: ve.reason });
      }
    }
    return failed;
  }

  private async loadModel(source: ModelSource): Promise<void> {
    const entry: ModelEntry = { name: source.name, versions: new Map() };
    this.models.set(source.name, entry);
    const log = this.o.logger;
    let config: ModelConfig;
    try {
      config = await this.buildConfig(source);
    } catch (err) {
      entry.error = (err as Error).message;
      log.error(`failed to load '${source.name}': ${entry.error}`);
      return;
    }
    const versions = selectVersions(config, source.versions);
    if (versions.length === 0) {
      entry.error = `at least one version must be available under the version policy of model '${source.name}'`;
      log.error(entry.error);
      return;
    }
    const backend = this.o.backends.get(config.backend)!;
    const json = modelConfigToJson(config) as Record<string, unknown>;
    const configJson = JSON.stringify(json);
    await Promise.all(
      versions.map(async (version) => {
        const ve: VersionEntry = { state: 'LOADING', reason: '' };
        entry.versions.set(version, ve);
        log.info(`loading: ${source.name}:${version}`);
        const started = process.hrtime.bigint();
        try {
          let mv: ModelVersion | undefined;
          const hooks: InstanceHooks = {
            onReadinessChange: (_i, ready) => {
              if (ready) mv?.scheduler.kick();
              else if (mv && ve.state === 'READY') this.checkGaveUp(source.name, version, ve, mv);
            },
            onRestart: (i: BackendInstance) => this.o.observer.stubRestart(source.name, i.name),
            warmup: (i: BackendInstance) => warmupInstance(source, config, i),
          };
          const versionDir = path.join(source.dir, String(version));
          const loaded = await backend.load({ source, version, versionDir, config, configJson, logger: log, client: this.client }, hooks);
          try {
            for (const instance of loaded.instances) await warmupInstance(source, config, instance);
          } catch (err) {
            await loaded.unload(5000);
            throw err;
          }
          // Registered before the version exists: its statistics listener is looked up then.
          const secs = Number(process.hrtime.bigint() - started) / 1e9;
          this.o.observer.modelLoaded(source.name, String(version), () => mv?.scheduler.pendingCount() ?? 0, secs);
          mv = new ModelVersion(config, json, version, loaded, this.o.observer);
          ve.model = mv;
          ve.state = 'READY';
          log.info(`successfully loaded '${source.name}' version ${version}`);
        } catch (err) {
          ve.state = 'UNAVAILABLE';
          ve.reason = (err as Error).message;
          log.error(`failed to load '${source.name}' version ${version}: ${ve.reason}`);
        }
      }),
    );
  }

  /**
   * When supervision gave up on every instance of a version (a stub that crashes at each
   * restart), the version can never serve again: it turns UNAVAILABLE with the instances'
   * reasons, and requests waiting in its queue are answered instead of waiting forever.
   */
  private checkGaveUp(name: string, version: number, ve: VersionEntry, mv: ModelVersion): void {
    const instances = mv.loaded.instances;
    if (instances.length === 0 || !instances.every(gaveUp)) return;
    ve.state = 'UNAVAILABLE';
    ve.reason = instanceReasons(instances);
    this.o.logger.error(`model '${name}' version ${version} is unavailable: ${ve.reason}`);
    mv.scheduler.stop(Errors.versionUnavailable(name, version, ve.reason));
  }

  /** config.pbtxt (or an empty config) → normalised, validated config. */
  async buildConfig(source: ModelSource): Promise<ModelConfig> {
    let config: ModelConfig;
    // Where each field was written, so that validation errors name the line too.
    let positions: SourceMap | undefined;
    const file = source.configFile ?? path.join(source.dir, 'config.pbtxt');
    if (source.configFile) {
      ({ config, positions } = parseModelConfigTextWithPositions(fs.readFileSync(source.configFile, 'utf8'), source.configFile));
    } else {
      config = create(ModelConfigSchema, {});
    }
    if (config.name && config.name !== source.name) {
      const at = positions?.get('name');
      throw Errors.configNameMismatch({ file, line: at?.line, field: 'name' }, file, config.name, source.name, at?.line, at?.column);
    }
    config.name = source.name;
    const latest = source.versions[source.versions.length - 1];
    const versionDir = latest === undefined ? undefined : path.join(source.dir, String(latest));
    const files = versionDir ? safeList(versionDir) : [];
    if (config.platform === 'ensemble') {
      const at = positions?.get('platform');
      throw Errors.configEnsembleUnsupported({ file, line: at?.line, field: 'platform' }, file, source.name, at?.line, at?.column);
    }
    inferBackend(files, config);
    if (!config.backend) {
      throw Errors.configNoBackend({ file, field: 'backend' }, source.name, file);
    }
    const backend = this.o.backends.get(config.backend);
    if (!backend) {
      throw Errors.configUnsupportedBackend({ file, field: 'backend' }, config.backend, source.name);
    }
    if (this.o.autoCompleteConfig && backend.autoComplete && versionDir) {
      config = await backend.autoComplete({ source, versionDir, logger: this.o.logger }, config);
      config.name = source.name;
    }
    config = normalizeModelConfig(config, {
      modelName: source.name,
      gpuCount: this.o.gpus.length,
      gpus: this.o.gpus,
      defaultMaxBatchSize: this.o.defaultMaxBatchSize,
    });
    validateModelConfig(config, file, { gpus: this.o.gpus, modelName: source.name, positions });
    // Settings tritium cannot honour are refused or said out loud, never silently ignored.
    if (config.schedulingChoice.case === 'sequenceBatching') {
      const at = positions?.get('sequence_batching');
      throw Errors.configSequenceBatchingUnsupported({ file, line: at?.line, field: 'sequence_batching' }, file, source.name, at?.line, at?.column);
    }
    if (config.responseCache?.enable) {
      // As Triton started without --cache-config: the model loads and every request is computed.
      this.o.logger.warn(`model '${source.name}' enables response_cache, but tritium has no response cache: every request is computed`);
    }
    return config;
  }

  /** Lookup with Triton's errors; version '' = the latest READY version. */
  resolve(name: string, version: string): ModelVersion {
    const entry = this.models.get(name);
    if (!entry) throw Errors.unknownModel(name);
    if (version === '' || version === '-1') {
      const ready = [...entry.versions.entries()].filter(([, v]) => v.state === 'READY').sort(([a], [b]) => b - a);
      if (ready.length === 0) throw Errors.noAvailableVersions(name);
      return ready[0]![1].model!;
    }
    if (!/^\d+$/.test(version)) throw Errors.badVersionString(version);
    const ve = entry.versions.get(Number(version));
    if (!ve) throw Errors.unknownVersion(name, version);
    if (ve.state !== 'READY' || !ve.model) throw Errors.versionNotReady(name, version);
    return ve.model;
  }

  /** Every READY version (statistics, readiness). */
  readyVersions(): ModelVersion[] {
    const out: ModelVersion[] = [];
    for (const e of [...this.models.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      for (const [, ve] of [...e.versions.entries()].sort(([a], [b]) => a - b)) if (ve.state === 'READY' && ve.model) out.push(ve.model);
    }
    return out;
  }

  /** Strict readiness: every model has a version and every version is READY and healthy. */
  allReady(): boolean {
    for (const e of this.models.values()) {
      if (e.error || e.versions.size === 0) return false;
      for (const ve of e.versions.values()) if (ve.state !== 'READY' || !ve.model?.isReady()) return false;
    }
    return true;
  }

  /**
   * Runtime readiness of one READY version, for the readiness endpoints: every instance alive
   * and, where the model defines one, its own check (`is_ready()`) passing. Each check runs
   * once for this call (concurrent calls share an evaluation already in flight); a failure is
   * logged with Triton's text, the endpoints only say "not ready".
   */
  async checkVersionReady(mv: ModelVersion): Promise<boolean> {
    if (!mv.isReady()) return false;
    const instances = mv.loaded.instances;
    const results = await Promise.all(instances.map((i) => (i.checkReady ? i.checkReady() : undefined)));
    let ready = true;
    results.forEach((err, k) => {
      if (!err) return;
      ready = false;
      this.o.logger.error(`[${mv.name}/${instances[k]!.name}] ${err.message}`, mv.name);
    });
    return ready;
  }

  /** allReady() with every READY version's runtime check (checkVersionReady), in parallel. */
  async allReadyChecked(): Promise<boolean> {
    if (!this.allReady()) return false;
    const checks = this.readyVersions().map((mv) => this.checkVersionReady(mv));
    return (await Promise.all(checks)).every(Boolean);
  }

  index(readyOnly: boolean): RepositoryIndexEntry[] {
    const out: RepositoryIndexEntry[] = [];
    for (const e of [...this.models.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      if (e.versions.size === 0) {
        if (!readyOnly) out.push(e.error ? { name: e.name, state: 'UNAVAILABLE', reason: e.error } : { name: e.name });
        continue;
      }
      for (const [v, ve] of [...e.versions.entries()].sort(([a], [b]) => a - b)) {
        const ready = ve.state === 'READY' && ve.model?.isReady() === true;
        if (readyOnly && !ready) continue;
        const entry: RepositoryIndexEntry = { name: e.name, version: String(v), state: ve.state };
        const reason = ve.reason || (ve.state === 'READY' && !ready ? instanceReasons(ve.model!.loaded.instances) || 'not all instances are ready' : '');
        if (reason) entry.reason = reason;
        out.push(entry);
      }
    }
    return out;
  }

  /** Stops every scheduler (new requests are refused with Triton's stopping error). */
  stopSchedulers(): void {
    for (const mv of this.readyVersions()) mv.scheduler.stop();
  }

  /** Requests accepted but not finished, across every model (shutdown waits on this). */
  inflight(): number {
    let n = 0;
    for (const mv of this.readyVersions()) n += mv.inflight();
    return n;
  }

  async unloadAll(timeoutMs: number): Promise<void> {
    const tasks: Promise<void>[] = [];
    for (const e of this.models.values()) {
      for (const [v, ve] of e.versions) {
        if (!ve.model) continue;
        const mv = ve.model;
        ve.state = 'UNLOADING';
        tasks.push(
          mv.loaded.unload(timeoutMs).then(() => {
            ve.state = 'UNAVAILABLE';
            ve.reason = 'unloaded';
            ve.model = undefined;
            this.o.observer.modelUnloaded(e.name, String(v));
          }),
        );
      }
    }
    await Promise.all(tasks);
  }
}

function gaveUp(i: BackendInstance): boolean {
  return i.gaveUp === true;
}

/** `instance '<name>': <reason>` for every instance that is not ready, joined. */
function instanceReasons(instances: readonly BackendInstance[]): string {
  return instances
    .filter((i) => !i.isReady())
    .map((i) => `instance '${i.name}': ${i.reason || 'not ready'}`)
    .join('; ');
}

function safeList(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}
