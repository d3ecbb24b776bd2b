/**
 * @module core/scheduling/rate-limiter
 * Triton's rate limiter (`--rate-limit=execution_count`; docs/protocol-notes.md, "Rate
 * limiter"): an instance runs only when the resources its `instance_group.rate_limiter` asks for
 * are free, and of the instances waiting to run, across every model, the one with the fewest
 * executions × priority goes first. Resources are per device (an instance's GPU, device 0 for
 * CPU and MODEL instances) or global; their counts are the largest need of any instance, or what
 * `--rate-limit-resource` gives (an unlisted resource then has none).
 *
 *   scheduler ─► InstancePool picks an idle instance ─► acquire(): staged; runs if it is the
 *   first staged instance and its resources fit ─► execute ─► release(): resources back,
 *   executions + 1, every staged instance's scheduler tried again in that order
 *
 * Only the first staged instance is tried (head of line, as Triton): a lower priority instance
 * whose resources are free still waits behind one that needs what is taken.
 */
import { Errors } from '../errors.js';
import type { ExecutionInstance } from './types.js';

/** `--rate-limit-resource=<name>:<count>[:<device>]`; device -1 = every device. */
export interface RateLimitResource {
  name: string;
  count: number;
  device: number;
}

/** One instance's `rate_limiter` as its model version registers it. */
export interface LimitedInstance {
  instance: ExecutionInstance;
  /** The device its per-device resources are counted on (0 for CPU and MODEL instances). */
  device: number;
  resources: Array<{ name: string; global: boolean; count: number }>;
  priority: number;
}

interface Need {
  key: string;
  name: string;
  global: boolean;
  count: number;
}

class Entry {
  execCount = 0;
  stagedAt = 0;
  constructor(
    readonly needs: Need[],
    readonly priority: number,
    /** Tries the instance's scheduler again. */
    public wake: () => void,
  ) {}
  get weight(): number {
    return this.execCount * this.priority;
  }
}

const GLOBAL = 'global';
const keyOf = (name: string, device: number | typeof GLOBAL): string => `${name}\u0000${device}`;

export class RateLimiter {
  private readonly entries = new Map<ExecutionInstance, Entry>();
  private readonly allocated = new Map<string, number>();
  private limits = new Map<string, number>();
  private readonly staged = new Set<Entry>();
  private order = 0;

  constructor(private readonly explicit: readonly RateLimitResource[]) {}

  /** The resources a model version's instances need; throws Triton's load error when one could never run. */
  register(instances: readonly LimitedInstance[]): void {
    // Resource names are the server's: one kind per name, over this model and those registered.
    const kinds = new Map<string, boolean>();
    for (const e of this.entries.values()) for (const n of e.needs) kinds.set(n.name, n.global);
    for (const i of instances) {
      for (const r of i.resources) {
        const global = kinds.get(r.name);
        if (global !== undefined && global !== r.global) throw Errors.rateLimitMixedResource(r.name);
        kinds.set(r.name, r.global);
      }
    }
    const added = new Map<ExecutionInstance, Entry>();
    for (const i of instances) {
      const needs = i.resources.map((r) => ({ key: keyOf(r.name, r.global ? GLOBAL : i.device), name: r.name, global: r.global, count: r.count }));
      added.set(i.instance, new Entry(needs, Math.max(1, i.priority), () => {}));
    }
    const limits = this.limitsFor([...this.entries.values(), ...added.values()]);
    for (const e of added.values()) {
      for (const n of e.needs) {
        const limit = limits.get(n.key) ?? 0;
        if (n.count > limit) throw Errors.rateLimitResourceShort(n.name, limit, n.count);
      }
    }
    for (const [instance, e] of added) this.entries.set(instance, e);
    this.limits = limits;
  }

  /** Forgets a version's instances (unloaded). */
  unregister(instances: readonly ExecutionInstance[]): void {
    for (const i of instances) {
      const e = this.entries.get(i);
      if (e !== undefined) this.staged.delete(e);
      this.entries.delete(i);
    }
    this.limits = this.limitsFor([...this.entries.values()]);
  }

  /** Whether `instance` is under the limiter (its model version registered it). */
  covers(instance: ExecutionInstance): boolean {
    return this.entries.has(instance);
  }

  /** How `wake` tries the instance's scheduler again (its pool's free callback). */
  setWake(instance: ExecutionInstance, wake: () => void): void {
    const e = this.entries.get(instance);
    if (e !== undefined) e.wake = wake;
  }

  /** The weight the limiter orders `instance` by (executions × priority); instances of one pool prefer the lowest. */
  weight(instance: ExecutionInstance): number {
    return this.entries.get(instance)?.weight ?? 0;
  }

  /**
   * `instance` has work: true when it may run now (its resources are taken until release()),
   * false when it waits, staged, for a release.
   */
  acquire(instance: ExecutionInstance): boolean {
    const e = this.entries.get(instance);
    if (e === undefined) return true;
    if (!this.staged.has(e)) {
      e.stagedAt = this.order++;
      this.staged.add(e);
    }
    if (this.first() !== e || !this.fits(e)) return false;
    this.staged.delete(e);
    for (const n of e.needs) this.allocated.set(n.key, (this.allocated.get(n.key) ?? 0) + n.count);
    return true;
  }

  /** `instance` finished an execution: its resources go back and the staged instances try again, first one first. */
  release(instance: ExecutionInstance): void {
    const e = this.entries.get(instance);
    if (e === undefined) return;
    e.execCount++;
    for (const n of e.needs) this.allocated.set(n.key, (this.allocated.get(n.key) ?? 0) - n.count);
    // Staged instances whose schedulers no longer have work would block the others: every one
    // is asked again, in the order the limiter serves them, and stages again if it still has work.
    const waiting = [...this.staged].sort((a, b) => a.weight - b.weight || a.stagedAt - b.stagedAt);
    this.staged.clear();
    for (const w of waiting) w.wake();
  }

  private first(): Entry | undefined {
    let best: Entry | undefined;
    for (const e of this.staged) if (best === undefined || e.weight < best.weight || (e.weight === best.weight && e.stagedAt < best.stagedAt)) best = e;
    return best;
  }

  private fits(e: Entry): boolean {
    for (const n of e.needs) if ((this.allocated.get(n.key) ?? 0) + n.count > (this.limits.get(n.key) ?? 0)) return false;
    return true;
  }

  /** Resource counts: explicit ones when any is given (unlisted: 0), else the largest need. */
  private limitsFor(entries: readonly Entry[]): Map<string, number> {
    const limits = new Map<string, number>();
    for (const e of entries) {
      for (const n of e.needs) {
        if (limits.has(n.key)) {
          if (this.explicit.length === 0) limits.set(n.key, Math.max(limits.get(n.key)!, n.count));
          continue;
        }
        limits.set(n.key, this.explicit.length === 0 ? n.count : this.explicitCount(n.key, n.name));
      }
    }
    return limits;
  }

  private explicitCount(key: string, name: string): number {
    const device = key.slice(name.length + 1);
    const same = this.explicit.filter((r) => r.name === name);
    if (device === GLOBAL) return same.reduce((m, r) => Math.max(m, r.count), 0);
    const dev = Number(device);
    return same.filter((r) => r.device === dev || r.device === -1).reduce((m, r) => Math.max(m, r.count), 0);
  }
}
