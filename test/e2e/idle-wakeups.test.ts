/**
 * An idle server stays asleep: with nothing asked of it, the server's main thread wakes for one
 * housekeeping timer a second (the stubs' watchdogs and the descriptor probe share it,
 * core/second-tick.ts) plus the CPU metrics reading, however many stubs it has, and a stub's
 * main thread waits in one-second slices without a look at the load in between
 * (native/src/python_ipc.cc). Counted as the threads' voluntary context switches (each a sleep
 * that ended) from /proc over a few seconds of a real server with four stubs: a count, not a
 * time, so a busy machine does not change it. docs/benchmarks.md, "An idle server", has the CPU.
 *
 * Before this: one watchdog timer per stub, the probe every 500 ms and a gRPC read sweep every
 * second (about 9 wakes a second with four stubs), and a stub's main thread woke every 100 ms.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stubPidsOf } from '../helpers/processes.js';
import { editConfig, makeRepo, startTritium, type Tritium } from '../helpers/server.js';

const WINDOW_MS = 3000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Times the main thread of `pid` went to sleep and was woken, so far. */
function sleepsOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  return Number(/^voluntary_ctxt_switches:\s+(\d+)$/m.exec(status)![1]);
}

let t: Tritium;

beforeAll(async () => {
  const repo = makeRepo(['slow_execute']);
  editConfig(repo, 'slow_execute', (c) => c.replace('count: 2', 'count: 4'));
  t = await startTritium({ repos: [repo] });
}, 120_000);

afterAll(async () => {
  await t?.stop();
});

describe('an idle server', () => {
  it('wakes a few times a second whatever its number of stubs, and its stubs once a second', async () => {
    const stubs = stubPidsOf(t.proc.pid!);
    expect(stubs).toHaveLength(4);
    // Past start-up's own work (first heartbeats, the stubs' first slices).
    await sleep(1500);
    const pids = [t.proc.pid!, ...stubs];
    const before = pids.map(sleepsOf);
    await sleep(WINDOW_MS);
    const woke = pids.map((p, i) => sleepsOf(p) - before[i]!);
    const [server, ...perStub] = woke;
    // Expected about 1.5 a second (the tick, the CPU metrics every 2 s); a margin for V8's own
    // delayed tasks. Four watchdog timers of their own would make it 9 a second.
    expect(server, `server main thread woke ${server} times in ${WINDOW_MS} ms`).toBeLessThanOrEqual(12);
    // Once a second (a whole slice); 30 with the old 100 ms slices.
    for (const n of perStub) expect(n, `a stub's main thread woke ${n} times in ${WINDOW_MS} ms`).toBeLessThanOrEqual(6);
  });
});
