/**
 * @module core/model/model-control
 * Loading and unloading models at run time (start-up, the repository API in explicit mode, and
 * poll mode all come through here). Operations on one model run one at a time, in order.
 *
 * A load builds a new generation of the model's versions while the current one keeps
 * answering; when every new version is READY they replace the old ones at once, and the old
 * ones drain (requests they accepted finish) and unload. If a version fails, the new generation
 * is thrown away and what served before keeps serving; the load rejects with Triton's text.
 * An unload refuses new requests at once and drains in the background; asked for while a load
 * runs, it waits for that load (which still succeeds, as in Triton) and then unloads.
 */
import { backendOf } from './backend-resolution.js';
import type { Backend } from '../backend.js';
import { bindEnsemble } from '../ensemble/binding.js';
import { ensembleBackend } from '../ensemble/ensemble-backend.js';
import { planEnsemble } from '../ensemble/plan.js';
import { asTritonError, Errors, type TritonError } from '../errors.js';
import type { InternalClient } from '../internal-client.js';
import { modelConfigToJson } from '../config/json.js';
import { scanRepositories, type ModelSource } from '../repository/scan.js';
import { create } from '@bufbuild/protobuf';
import { ModelInstanceGroup_Kind, ModelTransactionPolicySchema, type ModelConfig } from '../../generated/model_config_pb.js';
import { buildModelConfig, type ConfigBuildOptions } from './config-builder.js';
import { dependenciesOf } from './dependencies.js';
import { prepareOverrides, type LoadOverrides } from './load-overrides.js';
import { enqueue, newModelEntry, type ModelEntry, type VersionEntry } from './model-entry.js';
import type { ModelVersion } from './model-version.js';
import type { InferenceObserver } from './observer.js';
import { fingerprintModel } from './repository-fingerprint.js';
import { drainAndUnload } from './version-drain.js';
import { loadVersion } from './version-loader.js';
import { selectVersions } from './version-policy.js';
import { traceLine, traceTags, tracedSince } from '../trace-tags.js';

export interface ModelControlOptions extends ConfigBuildOptions {
  repositories: string[];
  /** `--model-config-name` ('' = config.pbtxt). */
  configName?: string;
  /** `--model-load-retry-count`: further tries of a version that failed to load. */
  loadRetryCount?: number;
  observer: InferenceObserver;
  /** How long a retired version may take to finish the requests it accepted. */
  drainTimeoutMs: number;
}

export class ModelControl {
  /** Model → the models whose loads it waits for (its dependencies), to refuse waiting in a circle. */
  private readonly waitingFor = new Map<string, Set<string>>();
  /** Ensembles found waiting in a circle by another member of it: the error their load ends with. */
  private readonly circular = new Map<string, TritonError>();

  constructor(
    private readonly models: Map<string, ModelEntry>,
    private readonly o: ModelControlOptions,
    private readonly client: InternalClient,
    private readonly onInstanceLost: (name: string, version: number, ve: VersionEntry, mv: ModelVersion) => void,
  ) {}

  /** Finds `name` in the repositories (a fresh scan: the repository may have changed). */
  findSource(name: string): ModelSource | { unavailable: string } | undefined {
    const scan = scanRepositories(this.o.repositories, this.o.configName);
    const bad = scan.unavailable.find((u) => u.name === name);
    if (bad) return { unavailable: bad.reason };
    return scan.models.find((m) => m.name === name);
  }

  private entry(name: string): ModelEntry {
    let e = this.models.get(name);
    if (!e) {
      e = newModelEntry(name);
      this.models.set(name, e);
    }
    return e;
  }

  /**
   * Loads (or reloads) `name`; resolves once its versions serve, rejects with Triton's texts:
   * loadPollFailed when the model or its config cannot be read (the log says why), loadFailed
   * when a version failed.
   */
  load(name: string, overrides?: LoadOverrides, source?: ModelSource): Promise<void> {
    const entry = this.entry(name);
    entry.loading++;
    if (traceTags.model) {
      const what = overrides ? ` with overrides (${overrides.config ? 'config' : 'no config'}, ${Object.keys(overrides.files ?? {}).length} file(s))` : '';
      traceLine('model', `'${name}': load requested${what}${entry.loading > 1 ? `, behind ${entry.loading - 1} other load(s)` : ''}`);
    }
    const run = traceTags.model ? () => this.tracedLoad(entry, overrides, source) : () => this.runLoad(entry, overrides, source);
    return enqueue(entry, run).finally(() => {
      entry.loading--;
      // A load that left nothing behind (model not found, overrides refused) leaves no entry.
      if (entry.loading === 0 && entry.versions.size === 0 && !entry.error && this.models.get(name) === entry) this.models.delete(name);
    });
  }

  /** runLoad with its start and end traced (`model` tag). */
  private async tracedLoad(entry: ModelEntry, overrides: LoadOverrides | undefined, given: ModelSource | undefined): Promise<void> {
    const startNs = process.hrtime.bigint();
    traceLine('model', `'${entry.name}': load started`);
    try {
      await this.runLoad(entry, overrides, given);
      traceLine('model', `'${entry.name}': load ended: loaded in ${tracedSince(startNs)}`);
    } catch (err) {
      traceLine('model', `'${entry.name}': load ended: failed in ${tracedSince(startNs)}: ${asTritonError(err).message}`);
      throw err;
    }
  }

  private async runLoad(entry: ModelEntry, overrides: LoadOverrides | undefined, given: ModelSource | undefined): Promise<void> {
    const { name } = entry;
    const log = this.o.logger;
    let source = given;
    if (!source) {
      const found = this.findSource(name);
      if (found && 'unavailable' in found) {
        entry.error = found.unavailable;
        log.error(`Poll failed for model directory '${name}': ${found.unavailable}`);
        throw Errors.loadPollFailed(name);
      }
      // A model made only of file overrides needs no directory in the repository.
      source = found ?? (overrides?.files && Object.keys(overrides.files).length > 0 ? emptySource(name) : undefined);
    }
    if (!source) {
      log.error(`failed to poll model '${name}': ${Errors.loadNotInRepository().message}`);
      throw Errors.loadPollFailed(name);
    }
    const fingerprint = overrides ? undefined : fingerprintModel(source.dir);
    let prepared;
    let config;
    try {
      prepared = prepareOverrides(source, overrides);
    } catch (err) {
      log.error(`Poll failed for model directory '${name}': ${(err as Error).message}`);
      throw Errors.loadPollFailed(name);
    }
    try {
      config = await buildModelConfig(prepared.source, this.o, prepared.config);
    } catch (err) {
      prepared.release();
      const reason = (err as Error).message;
      if (!hasModels(entry)) entry.error = reason;
      entry.fingerprint = fingerprint;
      log.error(`failed to load '${name}': ${reason}`);
      throw Errors.loadPollFailed(name);
    }
    const versions = selectVersions(config, prepared.source.versions);
    if (versions.length === 0) {
      prepared.release();
      const reason = `at least one version must be available under the version policy of model '${name}'`;
      if (!hasModels(entry)) entry.error = reason;
      entry.fingerprint = fingerprint;
      log.error(reason);
      throw Errors.loadPollFailed(name);
    }

    const deps = dependenciesOf(config);
    if (deps.length > 0) {
      try {
        await this.loadDependencies(name, deps);
        if (config.platform === 'ensemble') config = withEnsemblePolicy(config, this.client);
      } catch (err) {
        prepared.release();
        const reason = asTritonError(err).message;
        if (!hasModels(entry)) entry.error = reason;
        entry.fingerprint = fingerprint;
        log.error(`failed to load '${name}': ${reason}`);
        throw Errors.ensembleDependencyLoadFailed(name, reason);
      }
    }
    const backend: Backend = config.platform === 'ensemble' ? ensembleBackend : backendOf(config, this.o.backends)!;
    if (traceTags.model) {
      traceLine(
        'model',
        `'${name}': config from ${source.dir || '(overrides only)'}: ${config.platform === 'ensemble' ? 'ensemble' : `backend ${config.backend}`}, loading version(s) ${versions.join(', ')}`,
      );
    }
    const json = modelConfigToJson(config) as Record<string, unknown>;
    // Versions that do not serve now show LOADING; serving ones keep serving meanwhile.
    for (const v of versions) {
      const cur = entry.versions.get(v);
      if (!cur?.model) entry.versions.set(v, { state: entry.unloadPending ? 'UNLOADING' : 'LOADING', reason: '' });
    }
    const fresh = new Map<number, VersionEntry>();
    const failures: Array<{ version: number; reason: string }> = [];
    await Promise.all(
      versions.map(async (version) => {
        const ve: VersionEntry = { state: 'LOADING', reason: '' };
        const attempt = () =>
          loadVersion({
            source: prepared.source,
            config,
            json,
            version,
            backend,
            logger: log,
            client: this.client,
            observer: this.o.observer,
            responseCache: this.o.responseCache,
            rateLimiter: this.o.rateLimiter,
            onInstanceLost: (mv) => {
              if (ve.state === 'READY' && ve.model === mv) this.onInstanceLost(name, version, ve, mv);
            },
            onProgress: (reason) => {
              const shown = entry.versions.get(version);
              if (shown?.state === 'LOADING') shown.reason = reason;
            },
          });
        try {
          // Triton fails the version, not the config, when a GPU group meets a host without GPUs.
          const noGpu = this.o.gpus.length === 0 ? config.instanceGroup.find((g) => g.kind === ModelInstanceGroup_Kind.GPU) : undefined;
          if (noGpu) throw Errors.instanceNoGpu(noGpu.name, name);
          // `--model-load-retry-count`: a failed load is tried again that many times, each
          // failure logged (docs/protocol-notes.md, "Command line").
          for (let tries = this.o.loadRetryCount ?? 0; ; tries--) {
            try {
              ve.model = await attempt();
              break;
            } catch (err) {
              if (tries <= 0) throw err;
              log.error(`failed to load '${name}' version ${version}: ${(err as Error).message}`);
            }
          }
          ve.state = 'READY';
          if (traceTags.model) traceLine('model', `'${name}' version ${version}: loaded (${ve.model.loaded.instances.length} instance(s))`);
        } catch (err) {
          ve.state = 'UNAVAILABLE';
          ve.reason = (err as Error).message;
          if (traceTags.model) traceLine('model', `'${name}' version ${version}: failed: ${ve.reason}`);
          failures.push({ version, reason: ve.reason });
          log.error(`failed to load '${name}' version ${version}: ${ve.reason}`);
        }
        fresh.set(version, ve);
      }),
    );
    entry.fingerprint = fingerprint;
    if (failures.length > 0 && hasModels(entry)) {
      // A failed reload: the new generation goes, what served keeps serving.
      const discarded: Promise<void>[] = [];
      for (const [v, ve] of fresh) {
        const cur = entry.versions.get(v);
        if (ve.model) {
          discarded.push(ve.model.loaded.unload(this.o.drainTimeoutMs).catch((err) => this.logUnloadError(name, v, err)));
          if (!cur?.model) this.o.observer.modelUnloaded(name, String(v));
        }
        if (cur && !cur.model) entry.versions.set(v, { state: 'UNAVAILABLE', reason: ve.reason || 'load of the model failed' });
      }
      void Promise.all(discarded).then(prepared.release);
      failures.sort((a, b) => a.version - b.version);
      log.error(`failed to load '${name}'`);
      throw Errors.loadFailed(name, failures);
    }
    this.swapIn(entry, fresh, prepared.release);
    entry.config = config;
    entry.error = undefined;
    if (failures.length > 0) {
      failures.sort((a, b) => a.version - b.version);
      log.error(`failed to load '${name}'`);
      throw Errors.loadFailed(name, failures);
    }
    log.info(`successfully loaded '${name}'`);
  }

  /**
   * Makes sure every model `name` depends on (an ensemble's composing models) serves before it
   * loads: a model not loaded is loaded (in explicit mode too, as Triton does), a load under way
   * (start-up loads every model at once) is waited for. Failures are left for the ensemble's own
   * checks to name (core/ensemble/binding.ts); ensembles that wait for each other are refused.
   */
  private async loadDependencies(name: string, deps: string[]): Promise<void> {
    for (const dep of deps) {
      const chain = dep === name ? [name] : this.waitChain(dep, name);
      if (chain) {
        // Every ensemble of the circle fails, each seeing it from itself (as Triton reports it).
        const circle = [name, ...chain];
        circle.forEach((m, i) => {
          if (m !== name) this.circular.set(m, Errors.ensembleCircular(m, circle[i === 0 ? circle.length - 1 : i - 1]!));
        });
        throw Errors.ensembleCircular(name, circle[circle.length - 1]!);
      }
    }
    this.waitingFor.set(name, new Set(deps));
    try {
      await Promise.all(
        deps.map(async (dep) => {
          const e = this.models.get(dep);
          if (e && e.loading > 0) await e.queue;
          else if (!e || !hasModels(e)) await this.load(dep).catch(() => {});
        }),
      );
    } finally {
      this.waitingFor.delete(name);
    }
    const circular = this.circular.get(name);
    if (circular) {
      this.circular.delete(name);
      throw circular;
    }
  }

  /** The models through which `from` (transitively) waits for `to`, ending with `to`; undefined if it does not. */
  private waitChain(from: string, to: string, seen = new Set<string>()): string[] | undefined {
    if (from === to) return [];
    if (seen.has(from)) return undefined;
    seen.add(from);
    for (const next of this.waitingFor.get(from) ?? []) {
      const rest = this.waitChain(next, to, seen);
      if (rest) return [from, ...rest];
    }
    return undefined;
  }

  /** The new generation replaces the old at once; old versions drain and unload behind it. */
  private swapIn(entry: ModelEntry, fresh: Map<number, VersionEntry>, release: () => void): void {
    const old = entry.versions;
    const oldRelease = entry.release;
    entry.versions = new Map([...fresh].sort(([a], [b]) => a - b));
    entry.release = release;
    if (entry.unloadPending) for (const ve of entry.versions.values()) if (ve.model) ve.state = 'UNLOADING';
    const retiring: Promise<void>[] = [];
    for (const [v, ve] of old) {
      if (!ve.model || ve.retiring) {
        // A version that failed, was unloaded or is unloading and is not in the new set stays listed.
        if (!entry.versions.has(v)) entry.versions.set(v, ve);
        continue;
      }
      const mv = ve.model;
      if (entry.versions.has(v)) {
        // Same version number: the metric series now belongs to the new one.
        retiring.push(drainAndUnload(mv, this.o.drainTimeoutMs).catch((err) => this.logUnloadError(entry.name, v, err)));
      } else {
        const gone: VersionEntry = { state: 'UNLOADING', reason: '', model: mv };
        entry.versions.set(v, gone);
        retiring.push(this.retire(entry.name, v, gone));
      }
    }
    void Promise.all(retiring).finally(() => oldRelease?.());
  }

  /** Drains and unloads one listed version, which ends UNAVAILABLE / unloaded. */
  private async retire(name: string, version: number, ve: VersionEntry): Promise<void> {
    const mv = ve.model!;
    ve.state = 'UNLOADING';
    ve.retiring = true;
    const startNs = traceTags.model ? process.hrtime.bigint() : 0n;
    if (traceTags.model) traceLine('model', `'${name}' version ${version}: unload started (${mv.inflight()} request(s) in flight to drain)`);
    await drainAndUnload(mv, this.o.drainTimeoutMs).catch((err) => this.logUnloadError(name, version, err));
    if (traceTags.model) traceLine('model', `'${name}' version ${version}: unload ended in ${tracedSince(startNs)}`);
    ve.model = undefined;
    ve.retiring = false;
    ve.state = 'UNAVAILABLE';
    ve.reason = 'unloaded';
    // Unless a later load brought the same version back: the series is the new one's then.
    if (!this.models.get(name)?.versions.get(version)?.model) this.o.observer.modelUnloaded(name, String(version));
    this.o.logger.info(`successfully unloaded '${name}' version ${version}`);
  }

  private logUnloadError(name: string, version: number, err: unknown): void {
    this.o.logger.error(`failed to unload '${name}' version ${version}: ${asTritonError(err).message}`);
  }

  /**
   * Unloads `name`. Resolves once the unload is under way: new requests are refused from then
   * on, accepted ones finish in the background. `done` resolves when the versions are gone.
   * Unknown models are not an error. As tritonserver 2.51 (docs/protocol-notes.md, "Ensembles"):
   * the models that depend on `name` (ensembles calling it) cannot serve without it and are
   * unloaded with it, with or without `unloadDependents`; with it, an ensemble's composing
   * models are unloaded too, unless another model that stays loaded uses them.
   */
  unload(name: string, options: { unloadDependents?: boolean } = {}, unloading = new Set<string>()): { done: Promise<void> } {
    if (unloading.has(name)) return { done: Promise.resolve() };
    unloading.add(name);
    const entry = this.models.get(name);
    if (traceTags.model) {
      traceLine(
        'model',
        `'${name}': unload requested${entry ? (entry.loading > 0 ? ' (a load is under way: it ends unloaded)' : '') : ' (not loaded: nothing to do)'}${options.unloadDependents ? ', with its dependents' : ''}`,
      );
    }
    const tasks: Promise<void>[] = [];
    const config = entry?.config;
    if (entry) {
      if (entry.loading > 0) {
        entry.unloadPending = true;
        for (const ve of entry.versions.values()) if (ve.state === 'LOADING') ve.state = 'UNLOADING';
      } else {
        for (const ve of entry.versions.values()) if (ve.model) ve.state = 'UNLOADING';
      }
      tasks.push(enqueue(entry, () => this.runUnload(entry)));
    }
    for (const other of this.models.values()) {
      if (other !== entry && other.config && hasModels(other) && dependenciesOf(other.config).includes(name)) {
        tasks.push(this.unload(other.name, options, unloading).done);
      }
    }
    if (options.unloadDependents && config) {
      for (const dep of dependenciesOf(config)) {
        const usedElsewhere = [...this.models.values()].some(
          (o) => !unloading.has(o.name) && o.name !== dep && o.config && hasModels(o) && dependenciesOf(o.config).includes(dep),
        );
        if (!usedElsewhere) tasks.push(this.unload(dep, options, unloading).done);
      }
    }
    // Never rejects: an unload's failures are logged by retire(), nobody need wait for it.
    return { done: Promise.allSettled(tasks).then(() => undefined) };
  }

  private async runUnload(entry: ModelEntry): Promise<void> {
    entry.unloadPending = false;
    const release = entry.release;
    entry.release = undefined;
    entry.config = undefined;
    const tasks: Promise<void>[] = [];
    for (const [v, ve] of entry.versions) if (ve.model && !ve.retiring) tasks.push(this.retire(entry.name, v, ve));
    await Promise.all(tasks);
    release?.();
  }
}

/** Whether some version of the model serves (or is about to be unloaded on request). */
function hasModels(entry: ModelEntry): boolean {
  for (const ve of entry.versions.values()) if (ve.model && !ve.retiring) return true;
  return false;
}

/**
 * An ensemble is decoupled when one of its steps is (each response of that step flows on), and
 * Triton's rendering of an ensemble's config always carries the policy
 * (docs/protocol-notes.md, "Ensembles").
 */
function withEnsemblePolicy(config: ModelConfig, client: InternalClient): ModelConfig {
  const binding = bindEnsemble(config, planEnsemble(config), client);
  config.modelTransactionPolicy = create(ModelTransactionPolicySchema, { decoupled: binding.decoupled });
  return config;
}

function emptySource(name: string): ModelSource {
  return { name, dir: '', repository: '', configFile: undefined, versions: [] };
}
