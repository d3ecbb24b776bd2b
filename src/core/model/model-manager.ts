/**
 * @module core/model/model-manager
 * The models of the server: the state of every version (READY / LOADING / UNLOADING /
 * UNAVAILABLE with a reason) for readiness, lookups and the repository index. Loading and
 * unloading are ModelControl's (model-control.ts); poll mode's rescans are RepositoryPoller's
 * (repository-poll.ts); a model's config is built by config-builder.ts.
 */
import type { ResponseCache } from '../cache/response-cache.js';
import type { RateLimiter } from '../scheduling/rate-limiter.js';
import type { Backend } from '../backend.js';
import { asTritonError, Errors } from '../errors.js';
import { deliverError, type InferRequest, type ResponseSink } from '../inference.js';
import type { InternalClient } from '../internal-client.js';
import type { Logger } from '../logger.js';
import { scanRepositories } from '../repository/scan.js';
import type { RepositoryIndexEntry } from '../server-core.js';
import { ModelControl } from './model-control.js';
import { gaveUp, instanceReasons, type ModelEntry, type VersionEntry } from './model-entry.js';
import type { ModelVersion } from './model-version.js';
import type { InferenceObserver } from './observer.js';
import { RepositoryPoller } from './repository-poll.js';
import { compareUtf8 } from '../utf8-order.js';

export interface ModelManagerOptions {
  repositories: string[];
  autoCompleteConfig: boolean;
  defaultMaxBatchSize: number;
  gpus: number[];
  backends: Map<string, Backend>;
  /** `--backend-directory`: where Python-based backends live (default tritonserver's). */
  backendDirectory?: string;
  /** The server's response cache (`--cache-config`), if it has one. */
  responseCache?: ResponseCache;
  /** The server's rate limiter (`--rate-limit=execution_count`), when on. */
  rateLimiter?: RateLimiter;
  logger: Logger;
  observer: InferenceObserver;
  /** How long an unloaded or replaced version may take to finish its requests (default 30 s). */
  drainTimeoutMs?: number;
  /** `--model-config-name`: load `configs/<name>.pbtxt` where a model has one. */
  configName?: string;
  /** `--model-load-retry-count`. */
  loadRetryCount?: number;
  /** `--model-load-thread-count`: start-up models loading at once (default 4, as tritonserver). */
  loadThreadCount?: number;
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
        deliverError(sink, request, asTritonError(err));
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
  readonly control: ModelControl;
  readonly poller: RepositoryPoller;

  constructor(private readonly o: ModelManagerOptions) {
    this.control = new ModelControl(this.models, { ...o, drainTimeoutMs: o.drainTimeoutMs ?? 30_000 }, this.client, (name, version, ve, mv) =>
      this.checkGaveUp(name, version, ve, mv),
    );
    this.poller = new RepositoryPoller(this.models, this.control, o.repositories, o.logger, o.configName);
  }

  /** Loads every model of the repositories; resolves with the names that failed. */
  loadAll(): Promise<Array<{ name: string; reason: string }>> {
    return this.loadStartup(['*']);
  }

  /**
   * Loads the start-up models (`*` = every model of the repositories); resolves with those that
   * failed and why.
   */
  async loadStartup(names: string[]): Promise<Array<{ name: string; reason: string }>> {
    const scan = scanRepositories(this.o.repositories, this.o.configName);
    const all = names.includes('*');
    const failed: Array<{ name: string; reason: string }> = [];
    const wanted = all ? [...scan.models.map((m) => m.name), ...scan.unavailable.map((u) => u.name)] : [...new Set(names)];
    const loadOne = (name: string): Promise<void> =>
      this.control
        .load(
          name,
          undefined,
          scan.models.find((m) => m.name === name),
        )
        .catch((err) => {
          const entry = this.models.get(name);
          if (!entry) failed.push({ name, reason: asTritonError(err).message });
        });
    // `loadThreadCount` loaders take the next model as each finishes (tritonserver's load threads).
    const queue = [...wanted];
    const loader = async (): Promise<void> => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) await loadOne(name);
    };
    await Promise.all(Array.from({ length: Math.max(1, this.o.loadThreadCount ?? 4) }, loader));
    for (const entry of this.models.values()) {
      if (!wanted.includes(entry.name)) continue;
      if (entry.error) failed.push({ name: entry.name, reason: entry.error });
      for (const [v, ve] of entry.versions) {
        if (ve.state !== 'READY') failed.push({ name: `${entry.name}:${v}`, reason: ve.reason });
      }
    }
    return failed.sort((a, b) => compareUtf8(a.name, b.name));
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

  /** Lookup with Triton's errors; version '' = the latest READY version. */
  resolve(name: string, version: string): ModelVersion {
    const entry = this.models.get(name);
    if (!entry) throw Errors.unknownModel(name);
    if (version === '' || version === '-1') {
      // On every request: a plain scan for the highest READY version, nothing allocated.
      let best: ModelVersion | undefined;
      let bestVersion = -1;
      for (const [v, ve] of entry.versions) {
        if (ve.state === 'READY' && ve.model && v > bestVersion) {
          best = ve.model;
          bestVersion = v;
        }
      }
      if (best === undefined) throw Errors.noAvailableVersions(name);
      return best;
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
    for (const e of [...this.models.values()].sort((a, b) => compareUtf8(a.name, b.name))) {
      for (const [, ve] of [...e.versions.entries()].sort(([a], [b]) => a - b)) if (ve.state === 'READY' && ve.model) out.push(ve.model);
    }
    return out;
  }

  /** Every version that holds instances: serving, loading into place, or draining. */
  private liveVersions(): ModelVersion[] {
    const out: ModelVersion[] = [];
    for (const e of this.models.values()) for (const ve of e.versions.values()) if (ve.model) out.push(ve.model);
    return out;
  }

  /**
   * Strict readiness: every model has a version and every version is READY and healthy; a
   * version unloaded on purpose (UNAVAILABLE / unloaded) does not count, as in Triton.
   */
  allReady(): boolean {
    for (const e of this.models.values()) {
      if (e.error) return false;
      for (const ve of e.versions.values()) {
        if (ve.state === 'UNAVAILABLE' && ve.reason === 'unloaded') continue;
        if (ve.state !== 'READY' || !ve.model?.isReady()) return false;
      }
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

  /**
   * The repository index: every version tried, with its state and reason, and (as Triton lists
   * them) the models of the repositories never loaded, by name only.
   */
  index(readyOnly: boolean): RepositoryIndexEntry[] {
    const out: RepositoryIndexEntry[] = [];
    const names = new Set(this.models.keys());
    if (!readyOnly) for (const n of repositoryNames(this.o.repositories)) names.add(n);
    for (const name of [...names].sort(compareUtf8)) {
      const e = this.models.get(name);
      if (!e || e.versions.size === 0) {
        if (!readyOnly) out.push(e?.error ? { name, state: 'UNAVAILABLE', reason: e.error } : { name });
        continue;
      }
      for (const [v, ve] of [...e.versions.entries()].sort(([a], [b]) => a - b)) {
        const ready = ve.state === 'READY' && ve.model?.isReady() === true;
        if (readyOnly && !ready) continue;
        const entry: RepositoryIndexEntry = { name, version: String(v), state: ve.state };
        const loaded = ve.model?.loaded;
        const notReady = () => loaded?.notReadyReason?.() || instanceReasons(loaded?.instances ?? []) || 'not all instances are ready';
        const reason = ve.reason || (ve.state === 'READY' && !ready ? notReady() : '');
        if (reason) entry.reason = reason;
        out.push(entry);
      }
    }
    return out;
  }

  /** Stops every scheduler (new requests are refused with Triton's stopping error). */
  stopSchedulers(): void {
    for (const mv of this.liveVersions()) mv.scheduler.stop();
  }

  /** Requests accepted but not finished, across every model (shutdown waits on this). */
  inflight(): number {
    let n = 0;
    for (const mv of this.liveVersions()) n += mv.inflight();
    return n;
  }

  /** Models with a load queued or under way (shutdown names them when it abandons them). */
  loadsInProgress(): string[] {
    return [...this.models.values()].filter((e) => e.loading > 0).map((e) => e.name);
  }

  /**
   * Shutdown: waits for loads under way, then unloads every model within `timeoutMs`. A load
   * may never end (an `initialize` that sleeps): the caller bounds this wait by the exit timeout.
   */
  async unloadAll(timeoutMs: number): Promise<void> {
    await this.poller.stop();
    const tasks: Promise<void>[] = [];
    for (const e of this.models.values()) {
      tasks.push(
        e.queue.then(async () => {
          const unloading: Promise<void>[] = [];
          for (const [v, ve] of e.versions) {
            if (!ve.model) continue;
            const mv = ve.model;
            ve.state = 'UNLOADING';
            unloading.push(
              mv.loaded.unload(timeoutMs).then(() => {
                ve.state = 'UNAVAILABLE';
                ve.reason = 'unloaded';
                ve.model = undefined;
                this.o.observer.modelUnloaded(e.name, String(v));
              }),
            );
          }
          await Promise.all(unloading);
          e.release?.();
        }),
      );
    }
    await Promise.all(tasks);
  }
}

function repositoryNames(repositories: string[]): string[] {
  try {
    const scan = scanRepositories(repositories);
    return [...scan.models.map((m) => m.name), ...scan.unavailable.map((u) => u.name)];
  } catch {
    return [];
  }
}
