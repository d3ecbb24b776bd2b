/**
 * @module frontends/threads/frontend-pool
 * N frontend threads serving one HTTP port (`--http-thread-count`) or one gRPC port
 * (`--grpc-thread-count`): each runs that server on a socket of its own bound with
 * SO_REUSEPORT, so the kernel spreads connections across them, and sends what it parsed to the
 * main thread's core (core-host.ts), where requests of every thread meet in the same
 * schedulers and batches. One body budget and one connection
 * limit hold for the whole server (shared memory). A thread that dies is logged and replaced;
 * its requests are cancelled, the other threads keep serving. `close()` drains every thread.
 */
import { MessageChannel, Worker } from 'node:worker_threads';
import { ConnectionLimit, type ConnectionLimitCounts } from '../connection-limit.js';
import { sharedFrontendMemory } from '../shared-limits.js';
import type { LogSettingsStore } from '../../core/logger.js';
import type { ServerCore } from '../../core/server-core.js';
import { CoreHost, type HostLogger } from './core-host.js';
import { listenShared, numericAddress } from './listen-socket.js';
import { createRing } from './record-ring.js';
import type { FrontendStatus } from './status.js';
import { THREAD_LABEL, type LifecycleMessage, type PoolMessage, type ThreadData, type ThreadServer } from './thread-data.js';

export interface FrontendPoolOptions {
  threads: number;
  core: ServerCore;
  logSettings: LogSettingsStore;
  logger: HostLogger;
  status: FrontendStatus;
  /** Told of descriptor shortages a thread met on accept (DescriptorWatch.report). */
  descriptors?: { report(err: unknown): boolean };
}

/** Restarts of a thread that keeps dying wait longer each time, up to this. */
const MAX_RESTART_DELAY_MS = 10_000;
/** A thread that served this long before it died is restarted at once. */
const STABLE_MS = 10_000;

interface Slot {
  worker: Worker;
  startedAt: number;
  /** Resolves when the thread has exited. */
  exited: Promise<void>;
  /** Restarts in a row that did not last STABLE_MS. */
  failures: number;
}

/** The pool's handle: what a frontend's server handle has, plus its live threads. */
export interface FrontendThreadsHandle {
  port: number;
  readonly connectionCounts: ConnectionLimitCounts;
  close(): Promise<void>;
  /**
   * After close() began: settles once every thread has posted the requests it read before it
   * heard of the close (they are then in the core, admitted: InferRequest.readBeforeExit).
   */
  quiesced(): Promise<void>;
  /** The threads serving now (diagnostics, and tests that make one fail). */
  threads(): Worker[];
}

/**
 * Starts `o.threads` threads serving `server` (its options as the server's own start function
 * takes them, less what the threads get from here: logger, log settings, descriptors).
 */
export async function startFrontendThreads(
  server: ThreadServer & { options: { port: number; address: string } },
  o: FrontendPoolOptions,
): Promise<FrontendThreadsHandle> {
  const label = THREAD_LABEL[server.kind];
  const ip = await numericAddress(server.options.address);
  const first = listenShared(ip, server.options.port);
  const port = first.port;
  const shared = sharedFrontendMemory();
  let closing = false;
  const slots: Array<Slot | undefined> = new Array(o.threads).fill(undefined);

  /** Starts thread `i` on descriptor `fd`; resolves once it listens, rejects if it dies first. */
  function spawn(i: number, fd: number, failures: number): Promise<void> {
    const channel = new MessageChannel();
    const objects = new MessageChannel();
    const toMain = createRing();
    const toThread = createRing();
    const callFlag = new SharedArrayBuffer(4);
    const data = {
      ...server,
      options: { ...server.options, port },
      index: i,
      fd,
      shared,
      status: o.status.memory,
      toMain,
      toThread,
      objectPort: objects.port2,
      callFlag,
      callPort: channel.port2,
    } as ThreadData;
    const worker = new Worker(new URL('./thread-main.js', import.meta.url), {
      workerData: data,
      transferList: [channel.port2, objects.port2],
      name: `${server.kind}-${i}`,
    });
    const host = new CoreHost(worker, { toMain, toThread, objects: objects.port1 }, channel.port1, new Int32Array(callFlag), {
      core: o.core,
      logSettings: o.logSettings,
      logger: o.logger,
      status: o.status,
      descriptorShortage: (code) => o.descriptors?.report(Object.assign(new Error(code), { code })),
    });
    let listening = false;
    let exitedNow!: () => void;
    const exited = new Promise<void>((r) => (exitedNow = r));
    const slot: Slot = { worker, startedAt: Date.now(), exited, failures };
    slots[i] = slot;
    return new Promise<void>((resolve, reject) => {
      let failure: Error | undefined;
      worker.on('message', (m: LifecycleMessage) => {
        if (m.t === 'listening') {
          listening = true;
          resolve();
        } else if (m.t === 'evict-ask') {
          void evictElsewhere(i, m.olderThan).then((evicted) => worker.postMessage({ t: 'evict-answer', id: m.id, evicted } satisfies PoolMessage));
        } else if (m.t === 'evict-done') {
          evictions.get(m.id)?.(m.evicted);
          evictions.delete(m.id);
        }
      });
      worker.on('error', (err) => {
        failure = err;
        o.logger.error(`${label} frontend thread ${i} failed: ${err.stack ?? err.message}`);
      });
      worker.on('exit', (code) => {
        // Its descriptor went with it: adopted by its server (closed with the thread's loop) or,
        // if the thread failed before listening, closed by Node's failed listen.
        host.threadGone();
        exitedNow();
        if (slots[i] === slot) slots[i] = undefined;
        if (!listening) {
          reject(failure ?? new Error(`${label} frontend thread ${i} exited with code ${code} before it listened`));
          return;
        }
        if (closing) return;
        if (failure === undefined) o.logger.error(`${label} frontend thread ${i} exited with code ${code}`);
        const stable = Date.now() - slot.startedAt >= STABLE_MS;
        retry(i, stable ? 0 : slot.failures + 1);
      });
    });
  }

  const evictions = new Map<number, (evicted: boolean) => void>();
  let nextEviction = 1;

  /** Asks the threads other than `asking`, one after the other, to close their oldest idle connection if opened before `olderThan`. */
  async function evictElsewhere(asking: number, olderThan: number): Promise<boolean> {
    for (let j = 0; j < slots.length; j++) {
      const s = slots[j];
      if (j === asking || s === undefined) continue;
      const id = nextEviction++;
      const evicted = await Promise.race([
        new Promise<boolean>((r) => {
          evictions.set(id, r);
          s.worker.postMessage({ t: 'evict-one', id, olderThan } satisfies PoolMessage);
        }),
        s.exited.then(() => false),
      ]);
      evictions.delete(id);
      if (evicted) return true;
    }
    return false;
  }

  function restart(i: number, failures: number): void {
    if (closing) return;
    let fd: number;
    try {
      fd = listenShared(ip, port).fd;
    } catch (err) {
      o.logger.error(`${label} frontend thread ${i} could not listen again: ${(err as Error).message}`);
      retry(i, failures + 1);
      return;
    }
    spawn(i, fd, failures).then(
      () => o.logger.info(`${label} frontend thread ${i} restarted`),
      // It died before it listened (an exception is logged by its 'error' handler); the next try waits longer.
      (err: Error) => {
        o.logger.error(`${label} frontend thread ${i} did not restart: ${err.message}`);
        retry(i, failures + 1);
      },
    );
  }

  /** Restarts thread `i` after its `failures`-th failure in a row: at once for the first, then 0.1 s doubling up to 10 s. */
  function retry(i: number, failures: number): void {
    if (closing) return;
    const delay = failures === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 100 * 2 ** (failures - 1));
    setTimeout(() => restart(i, failures), delay).unref();
  }

  try {
    await Promise.all(slots.map((_, i) => spawn(i, i === 0 ? first.fd : listenShared(ip, port).fd, 0)));
  } catch (err) {
    closing = true;
    await Promise.all(slots.map((s) => s?.worker.terminate()));
    throw err;
  }

  let closed: Promise<void> | undefined;
  let quiet: Promise<unknown> = Promise.resolve();
  return {
    port,
    connectionCounts: new ConnectionLimit(0, label, () => {}, shared.connections).counts,
    threads: () => slots.flatMap((s) => (s === undefined ? [] : [s.worker])),
    close: () => {
      closed ??= (async () => {
        closing = true;
        // Each thread posts what it read, stops accepting and answers what it holds; its
        // requests keep running here.
        const live = slots.filter((s) => s !== undefined);
        const answer = (s: Slot, t: 'quiesced' | 'closed') =>
          Promise.race([new Promise<void>((r) => s.worker.on('message', (m: LifecycleMessage) => m.t === t && r())), s.exited]);
        const drained = live.map((s) => answer(s, 'closed'));
        quiet = Promise.all(live.map((s) => answer(s, 'quiesced')));
        for (const s of live) s.worker.postMessage({ t: 'close' });
        await Promise.all(drained);
        await Promise.all(live.map((s) => s.worker.terminate()));
      })();
      return closed;
    },
    quiesced: () => quiet.then(() => {}),
  };
}
