/**
 * The core's supervision policy (core/instance/lifecycle.ts) on its own, with incarnations that
 * are plain numbers: start, death, back-off, warmup on restart, give-up, stop. The policy is
 * core logic; the e2e suites (test/e2e/supervision.test.ts, test/onnx/restart.test.ts) run it
 * with real stubs and real onnxruntime workers. Time is faked, so back-off delays are exact.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { InstanceLifecycle, type Incarnations, type LifecycleOptions } from '../../src/core/instance/lifecycle.js';
import { classifyStartFailure } from '../../src/core/instance/resource-failure.js';
import { createLogger } from '../../src/core/logger.js';

/** A backend whose starts succeed (numbered 1, 2, ...) unless told to fail or to hang. */
class FakeBackend {
  starts = 0;
  readonly failures: Error[] = [];
  hang = false;
  readonly discarded: number[] = [];
  readonly stopped: Array<{ id: number; graceful: boolean }> = [];
  readonly killed: number[] = [];
  readonly incarnations: Incarnations<number> = {
    start: async (signal) => {
      const id = ++this.starts;
      if (this.hang) {
        await new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error(`start ${id} aborted`))));
      }
      const failure = this.failures.shift();
      if (failure) throw failure;
      return id;
    },
    discard: async (id) => {
      this.discarded.push(id);
    },
    stop: async (id, how) => {
      this.stopped.push({ id, graceful: how.graceful });
    },
    kill: (id) => {
      this.killed.push(id);
    },
  };
}

/** What the lifecycle told the core. */
class Events {
  readiness: boolean[] = [];
  restarts = 0;
  warmups = 0;
  /** Replaces the next warmups' outcome. */
  warmup: () => Promise<void> = async () => {};
  readonly hooks = {
    onReadinessChange: (ready: boolean) => this.readiness.push(ready),
    onRestart: () => this.restarts++,
    warmup: () => {
      this.warmups++;
      return this.warmup();
    },
  };
}

let backend: FakeBackend;
let events: Events;
let lines: string[];

function lifecycle(o: Partial<LifecycleOptions<number>> = {}): InstanceLifecycle<number> {
  return new InstanceLifecycle<number>({
    name: 'm_0',
    label: "Instance 'm_0'",
    logSource: 'm',
    logger: createLogger({ info: true, warning: true, error: true, verbose: 0 }, (l) => lines.push(l)),
    incarnations: backend.incarnations,
    events: events.hooks,
    ...o,
  });
}

const advance = (ms: number) => vi.advanceTimersByTimeAsync(ms);

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
  backend = new FakeBackend();
  events = new Events();
  lines = [];
});

afterEach(() => {
  vi.useRealTimers();
});

describe('first start', () => {
  it('is ready at once; warming the first start up is the model manager’s, so no warmup and no hooks here', async () => {
    const life = lifecycle();
    expect(await life.start()).toBe(1);
    expect(life.state).toBe('ready');
    expect(life.isReady()).toBe(true);
    expect(life.serving).toBe(1);
    expect(life.reason).toBe('');
    expect(events).toMatchObject({ readiness: [], restarts: 0, warmups: 0 });
  });

  it('rejects with the load error and never restarts', async () => {
    backend.failures.push(new Error('initialize raised'));
    const life = lifecycle();
    await expect(life.start()).rejects.toThrow('initialize raised');
    expect(life.state).toBe('failed');
    await advance(60_000);
    expect(backend.starts).toBe(1);
  });
});

describe('a death while ready', () => {
  it('turns not ready with the reason, restarts after 250 ms, warms up before it serves, counts the restart', async () => {
    const life = lifecycle();
    await life.start();
    life.died(1, "Instance 'm_0' died.");
    expect(life.isReady()).toBe(false);
    expect(life.serving).toBeUndefined();
    expect(life.state).toBe('restarting');
    expect(life.reason).toBe("Instance 'm_0' died.");
    expect(events.readiness).toEqual([false]);
    expect(lines.some((l) => l.includes("Instance 'm_0' died. Restarting it."))).toBe(true);

    await advance(249);
    expect(backend.starts).toBe(1);
    let release!: () => void;
    events.warmup = () => new Promise<void>((r) => (release = r));
    await advance(1);
    expect(backend.starts).toBe(2);
    // Warming: it executes (the warmup samples), it is not ready for traffic.
    expect(life.state).toBe('warming');
    expect(life.serving).toBe(2);
    expect(life.isReady()).toBe(false);
    expect(events.restarts).toBe(0);

    release();
    await advance(0);
    expect(life.state).toBe('ready');
    expect(life.reason).toBe('');
    expect(events).toMatchObject({ readiness: [false, true], restarts: 1, warmups: 1 });
    expect(life.restarts).toBe(1);
    expect(lines.some((l) => l.includes("Instance 'm_0' restarted (restart 1)."))).toBe(true);
  });

  it('ignores the death of an incarnation that is no longer in place', async () => {
    const life = lifecycle();
    await life.start();
    life.died(1, 'first death');
    await advance(250);
    expect(life.state).toBe('ready');
    life.died(1, 'the old one again');
    expect(life.state).toBe('ready');
    expect(events.readiness).toEqual([false, true]);
  });
});

describe('failed restarts', () => {
  it('back off 250 ms doubling, and give up after 5 in a row with the death and the last error', async () => {
    const life = lifecycle();
    await life.start();
    for (let k = 1; k <= 5; k++) backend.failures.push(new Error(`start error ${k}`));
    life.died(1, "Instance 'm_0' is not healthy. It died.");
    let attempts = 1;
    for (const delay of [250, 500, 1000, 2000, 4000]) {
      await advance(delay - 1);
      expect(backend.starts).toBe(attempts);
      await advance(1);
      expect(backend.starts).toBe(++attempts);
      if (attempts <= 5) expect(life.reason).toBe(`Instance 'm_0' is not healthy. It died. Restart ${attempts - 1} failed: start error ${attempts - 1}`);
    }
    expect(life.state).toBe('failed');
    expect(life.gaveUp).toBe(true);
    expect(life.reason).toBe(
      "Instance 'm_0' is not healthy. It died. Restarting it failed 5 times in a row, so it will not be restarted again; last error: start error 5",
    );
    // Not ready when it died, and once more when it gave up (the model manager checks then).
    expect(events.readiness).toEqual([false, false]);
    expect(lines.filter((l) => /Restart of 'm_0' failed \(\d in a row\)/.test(l))).toHaveLength(5);
    await advance(60_000);
    expect(backend.starts).toBe(6);
  });

  it('caps the back-off at 10 s', async () => {
    const life = lifecycle({ policy: { maxFailedStarts: 8 } });
    await life.start();
    for (let k = 0; k < 8; k++) backend.failures.push(new Error('no'));
    life.died(1, 'died');
    let attempts = 1;
    for (const delay of [250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000]) {
      await advance(delay - 1);
      expect(backend.starts).toBe(attempts);
      await advance(1);
      expect(backend.starts).toBe(++attempts);
    }
    expect(life.gaveUp).toBe(true);
  });

  it('a success resets the count: five more failures are needed to give up', async () => {
    const life = lifecycle();
    await life.start();
    for (let k = 0; k < 4; k++) backend.failures.push(new Error('no'));
    life.died(1, 'died');
    await advance(250 + 500 + 1000 + 2000 + 4000);
    expect(life.state).toBe('ready');
    for (let k = 0; k < 4; k++) backend.failures.push(new Error('no'));
    life.died(backend.starts, 'died again');
    // Back to the first delay.
    await advance(249);
    const before = backend.starts;
    await advance(1);
    expect(backend.starts).toBe(before + 1);
    await advance(500 + 1000 + 2000 + 4000);
    expect(life.state).toBe('ready');
    expect(life.gaveUp).toBe(false);
  });

  it('a failing warmup is a failed start: the incarnation is discarded and the next follows the back-off', async () => {
    const life = lifecycle();
    await life.start();
    events.warmup = async () => {
      throw new Error("failed to run warmup sample 'zeros'");
    };
    life.died(1, 'died');
    await advance(250);
    expect(backend.discarded).toEqual([2]);
    expect(life.state).toBe('restarting');
    expect(life.serving).toBeUndefined();
    expect(life.reason).toBe("died Restart 1 failed: failed to run warmup sample 'zeros'");
    events.warmup = async () => {};
    await advance(500);
    expect(life.state).toBe('ready');
    expect(life.serving).toBe(3);
  });

  it('an incarnation that dies while warming fails the attempt even when its warmup completes', async () => {
    const life = lifecycle();
    await life.start();
    let release!: () => void;
    events.warmup = () => new Promise<void>((r) => (release = r));
    life.died(1, 'died');
    await advance(250);
    expect(life.state).toBe('warming');
    life.died(2, 'died while warming');
    release();
    await advance(0);
    expect(life.state).toBe('restarting');
    expect(life.reason).toBe('died Restart 1 failed: died while warming');
    expect(backend.discarded).toEqual([2]);
  });

  it('a resource shortage is retried every 2 s for as long as it lasts, not counted, and logged once', async () => {
    const life = lifecycle({ classifyStartFailure });
    await life.start();
    // Texts that differ from try to try (sizes, names) are still one shortage: one log line.
    for (let k = 0; k < 12; k++) backend.failures.push(Object.assign(new Error(`spawn python3 EMFILE (fd ${k})`), { code: 'EMFILE' }));
    life.died(1, 'died');
    await advance(250);
    for (let k = 0; k < 11; k++) {
      const before = backend.starts;
      await advance(1_999);
      expect(backend.starts).toBe(before);
      await advance(1);
      expect(backend.starts).toBe(before + 1);
      expect(life.reason).toContain('waiting for resources: spawn python3 EMFILE (fd ');
    }
    expect(life.gaveUp).toBe(false);
    expect(lines.filter((l) => l.includes('could not get resources'))).toHaveLength(1);
    await advance(2_000);
    expect(life.state).toBe('ready');
    expect(life.reason).toBe('');
  });

  it('crashes after a shortage count towards the give-up with the usual back-off', async () => {
    const life = lifecycle({ classifyStartFailure });
    await life.start();
    backend.failures.push(new Error('/dev/shm is full: cannot create segment'), ...Array.from({ length: 5 }, () => new Error('initialize raised')));
    life.died(1, 'died');
    await advance(250); // shortage
    await advance(2_000); // crash 1, then 500, 1000, 2000, 4000 ms to crashes 2..5
    await advance(500 + 1_000 + 2_000 + 3_999);
    expect(life.gaveUp).toBe(false);
    await advance(1);
    expect(life.gaveUp).toBe(true);
    expect(life.reason).toContain('failed 5 times in a row');
  });
});

describe('classifyStartFailure', () => {
  it('tells resource shortages from crashes by errno code, wrapped cause or message', () => {
    for (const code of ['EMFILE', 'ENFILE', 'ENOMEM', 'EAGAIN', 'ENOSPC']) {
      expect(classifyStartFailure(Object.assign(new Error('x'), { code }))).toEqual({ shortage: code });
    }
    expect(classifyStartFailure(new Error('outer', { cause: Object.assign(new Error('inner'), { code: 'EMFILE' }) }))).toEqual({ shortage: 'EMFILE' });
    expect(classifyStartFailure(new Error('shm_open /tritium_1_a.n0: Too many open files'))).toEqual({ shortage: 'EMFILE' });
    expect(classifyStartFailure(new Error("Stub process 'm_0' is not healthy. spawn /usr/bin/python3 EAGAIN"))).toEqual({ shortage: 'EAGAIN' });
    expect(classifyStartFailure(new Error('/dev/shm is full: cannot create 1048576-byte segment'))).toEqual({ shortage: 'ENOSPC' });
    expect(classifyStartFailure(new Error('out of memory for shared memory: cannot create 1048576-byte segment'))).toEqual({ shortage: 'ENOMEM' });
    expect(classifyStartFailure(new Error('initialize raised ValueError'))).toBe('crash');
    expect(classifyStartFailure(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBe('crash');
  });
});

describe('stop', () => {
  it('stops a ready incarnation gracefully, anything else not', async () => {
    const ready = lifecycle();
    await ready.start();
    await ready.stop(1000);
    expect(ready.state).toBe('stopped');
    expect(backend.stopped).toEqual([{ id: 1, graceful: true }]);

    const warming = lifecycle();
    await warming.start();
    events.warmup = () => new Promise<void>(() => {});
    warming.died(2, 'died');
    await advance(250);
    expect(warming.state).toBe('warming');
    const stopping = warming.stop(1000);
    // The warmup never ends here; stop does not wait for it.
    await advance(0);
    await stopping;
    expect(backend.stopped).toEqual([
      { id: 1, graceful: true },
      { id: 3, graceful: false },
    ]);
  });

  it('cancels a pending restart', async () => {
    const life = lifecycle();
    await life.start();
    life.died(1, 'died');
    await life.stop(1000);
    await advance(60_000);
    expect(backend.starts).toBe(1);
    expect(life.state).toBe('stopped');
  });

  it('aborts a start in progress, which then leaves nothing behind', async () => {
    const life = lifecycle();
    await life.start();
    backend.hang = true;
    life.died(1, 'died');
    await advance(250);
    expect(life.state).toBe('starting');
    await life.stop(1000);
    expect(life.state).toBe('stopped');
    expect(life.current).toBeUndefined();
    await advance(60_000);
    expect(backend.starts).toBe(2);
    expect(events.readiness).toEqual([false]);
  });

  it('kill: no finalize, and nothing is restarted afterwards', async () => {
    const life = lifecycle();
    await life.start();
    life.kill();
    expect(backend.killed).toEqual([1]);
    life.died(1, 'killed');
    await advance(60_000);
    expect(backend.starts).toBe(1);
    expect(events.readiness).toEqual([]);
  });
});
