/**
 * @module core/model/repository-poll
 * Poll mode (`--model-control-mode=poll`): every `--repository-poll-secs` the repositories are
 * scanned again; a model that appeared is loaded, one whose directory changed (config.pbtxt,
 * model files, version directories) is reloaded — a failed reload keeps the old one serving —
 * and one that disappeared is unloaded. Scans never overlap.
 */
import type { Logger } from '../logger.js';
import { scanRepositories } from '../repository/scan.js';
import type { ModelControl } from './model-control.js';
import type { ModelEntry } from './model-entry.js';
import { fingerprintModel } from './repository-fingerprint.js';

export class RepositoryPoller {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly models: ReadonlyMap<string, ModelEntry>,
    private readonly control: ModelControl,
    private readonly repositories: string[],
    private readonly logger: Logger,
    private readonly configName = '',
  ) {}

  start(intervalMs: number): void {
    if (intervalMs <= 0) return;
    const tick = () => {
      this.running = this.poll().finally(() => {
        this.running = undefined;
        if (this.timer) this.timer = setTimeout(tick, intervalMs);
      });
    };
    this.timer = setTimeout(tick, intervalMs);
    this.timer.unref();
  }

  /** Stops polling; resolves when a scan in progress has finished. */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One scan: loads, reloads and unloads what changed; resolves when those have settled. */
  async poll(): Promise<void> {
    let scan;
    try {
      scan = scanRepositories(this.repositories, this.configName);
    } catch (err) {
      this.logger.error(`failed to poll the model repository: ${(err as Error).message}`);
      return;
    }
    const work: Promise<void>[] = [];
    const seen = new Set<string>();
    for (const source of scan.models) {
      seen.add(source.name);
      const entry = this.models.get(source.name);
      if (entry && entry.fingerprint === fingerprintModel(source.dir)) continue;
      // Errors are logged by the load itself; the old version, if any, keeps serving.
      work.push(this.control.load(source.name, undefined, source).catch(() => {}));
    }
    for (const name of this.models.keys()) {
      const entry = this.models.get(name)!;
      if (!seen.has(name) && [...entry.versions.values()].some((v) => v.model && !v.retiring)) {
        this.logger.info(`model '${name}' left the repository: unloading`);
        work.push(this.control.unload(name).done);
      }
    }
    await Promise.all(work);
  }
}
