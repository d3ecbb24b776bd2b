/**
 * @module core/model/model-entry
 * What the model manager keeps per model name: the state of each version (READY, LOADING,
 * UNLOADING, UNAVAILABLE with a reason, as the repository index reports them), the config the
 * serving versions were loaded from, and the queue that runs the model's loads and unloads one
 * at a time.
 */
import type { ModelConfig } from '../../generated/model_config_pb.js';
import type { BackendInstance } from '../backend.js';
import type { ModelVersion } from './model-version.js';

export type VersionState = 'LOADING' | 'READY' | 'UNAVAILABLE' | 'UNLOADING';

export interface VersionEntry {
  state: VersionState;
  reason: string;
  model?: ModelVersion;
  /** Draining and unloading (no longer part of the serving generation). */
  retiring?: boolean;
}

export interface ModelEntry {
  name: string;
  versions: Map<number, VersionEntry>;
  /** A failure before any version could be tried (config error, unknown backend). */
  error?: string;
  /** Config of the serving versions (dependencies, unload_dependents). */
  config?: ModelConfig;
  /** Fingerprint of the model directory when it was last loaded (poll mode compares it). */
  fingerprint?: string;
  /** Removes what the serving versions were loaded from when it is temporary (file overrides). */
  release?: () => void;
  /** Tail of the model's load/unload operations: each waits for the one before it. */
  queue: Promise<void>;
  /** Loads queued or running: an unload asked for meanwhile shows their versions UNLOADING. */
  loading: number;
  /** An unload was asked for while a load ran: the load's versions come up UNLOADING. */
  unloadPending: boolean;
}

export function newModelEntry(name: string): ModelEntry {
  return { name, versions: new Map(), queue: Promise.resolve(), loading: 0, unloadPending: false };
}

/** Runs `op` after every earlier operation on the model, whatever their outcome. */
export function enqueue<T>(entry: ModelEntry, op: () => Promise<T>): Promise<T> {
  const run = entry.queue.then(op);
  entry.queue = run.then(
    () => undefined,
    () => undefined,
  );
  return run;
}

export function gaveUp(i: BackendInstance): boolean {
  return i.gaveUp === true;
}

/** `instance '<name>': <reason>` for every instance that is not ready, joined. */
export function instanceReasons(instances: readonly BackendInstance[]): string {
  return instances
    .filter((i) => !i.isReady())
    .map((i) => `instance '${i.name}': ${i.reason || 'not ready'}`)
    .join('; ');
}
