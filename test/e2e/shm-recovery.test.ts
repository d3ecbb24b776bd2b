/**
 * A stub comes back after a crash even when something else took every free byte of /dev/shm,
 * and when even the space held back for that is gone, it waits for space instead of giving up.
 *
 * The server runs in a private 64 MiB /dev/shm (a mount namespace of its own, so the host's is
 * not touched) with 8 MiB n0 segments. The suite plays a greedy neighbour: a file in that
 * /dev/shm (reached through /proc/<pid>/root) that grows into any space freed. Killing the stub
 * frees its n0; the neighbour takes it before the restart (which waits 250 ms). Then:
 *  1. the restart succeeds on the n0's worth the backend held back (backends/python/ipc/
 *     shm-reserve.ts): the instance is ready and health checks pass; a request whose outputs
 *     need arena blocks fails with a clear "/dev/shm is full" until there is room for them
 *     (small outputs travel inside the stub's answer and are served), and the reserve cannot be
 *     taken again while the neighbour holds everything;
 *  2. a second crash finds no reserve: the restart fails with "/dev/shm is full", which is a
 *     shortage, not a crash: the instance says "waiting for resources" (readiness and repository
 *     index), it is retried and not given up on;
 *  3. when the neighbour goes, the instance turns ready by itself, the reserve is taken again,
 *     and requests succeed, without restarting the server.
 * Needs root for `unshare -m` and the tmpfs mount; skipped otherwise.
 *
 * This is the /dev/shm fallback (`TRITIUM_MEMFD=0`, as where memfd_create is refused): memfd
 * segments take memory rather than /dev/shm space, and hold no reserve (docs/design.md, "Supervision").
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inferAddSub } from './infer-helpers.js';
import { editConfig, makeRepo, startTritium, type Tritium } from '../helpers/server.js';
import { stubPidsOf } from '../helpers/processes.js';

const SMALL_SHM = ['unshare', '-m', 'sh', '-c', 'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$0" "$@"'];
const canUnshare = process.getuid?.() === 0 && spawnSync('unshare', ['-m', 'true']).status === 0;
const N0_BYTES = 8 * 1024 * 1024;

let server: Tritium;
let repo: string;
/** The server's /dev/shm, seen through its mount namespace. */
let shm: string;

beforeAll(async () => {
  if (!canUnshare) return;
  repo = makeRepo(['add_sub']);
  // Any length: a request of 100 elements has outputs too large to travel inside the stub's
  // answer (docs/ipc.md, inline descriptors), so they need room in its arena.
  editConfig(repo, 'add_sub', (c) => c.replaceAll('dims: [ 4 ]', 'dims: [ -1 ]'));
  server = await startTritium({
    repos: [repo],
    args: [`--backend-config=python,shm-default-byte-size=${N0_BYTES}`],
    wrap: SMALL_SHM,
    env: { TRITIUM_MEMFD: '0' },
  });
  shm = `/proc/${server.proc.pid}/root/dev/shm`;
}, 120_000);

afterAll(async () => {
  await server?.stop();
  if (repo) fs.rmSync(repo, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Grows the neighbour's file until /dev/shm has no byte left (tmpfs allocates what is written). */
function takeAllFreeSpace(): void {
  const fd = fs.openSync(path.join(shm, 'neighbour'), 'a');
  try {
    for (const chunk of [Buffer.alloc(1 << 20), Buffer.alloc(4096)]) {
      for (;;) {
        try {
          fs.writeSync(fd, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw err;
        }
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** Bytes a file in the server's /dev/shm really holds (0 when absent). */
function allocated(name: string): number {
  try {
    return fs.statSync(path.join(shm, name)).blocks * 512;
  } catch {
    return 0;
  }
}

const files = () => fs.readdirSync(shm);
const reserveName = () => files().find((f) => f.endsWith('_reserve'));
const n0Files = () => files().filter((f) => f.endsWith('.n0'));

function stubPid(): number {
  const stub = stubPidsOf(server.proc.pid!)[0];
  if (stub === undefined) throw new Error('no stub process');
  return stub;
}

/**
 * Kills the stub, and as soon as its region is gone the neighbour takes the space it frees (the
 * pages go a moment after the names). True when the neighbour was first: no new region exists
 * yet, so the restart (250 ms after the death) finds only what the server held back. On a loaded
 * machine the restart can come first.
 */
async function crashAndTakeItsSpace(): Promise<boolean> {
  const n0 = n0Files();
  expect(n0).toHaveLength(1);
  const region = n0[0]!.slice(0, -'.n0'.length);
  const grownFrom = allocated('neighbour');
  process.kill(stubPid(), 'SIGKILL');
  const deadline = Date.now() + 10_000;
  while (files().some((f) => f.startsWith(`${region}.`))) {
    if (Date.now() > deadline) throw new Error('the dead stub’s region was not removed');
    await sleep(2);
  }
  const soon = Date.now() + 150;
  do {
    takeAllFreeSpace();
    await sleep(2);
  } while (allocated('neighbour') - grownFrom < N0_BYTES && Date.now() < soon);
  return allocated('neighbour') - grownFrom >= N0_BYTES && n0Files().length === 0;
}

/** crashAndTakeItsSpace, played again once the instance is back, until the neighbour is first. */
async function crashWhileNeighbourWins(): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    if (await crashAndTakeItsSpace()) return;
    await waitFor('the instance to be back', modelReady);
  }
  throw new Error('the restart came before the neighbour five times in a row');
}

const restartsLogged = () => server.log().match(/Stub process 'add_sub_0_0' restarted/g)?.length ?? 0;

const infer = async () => (await inferAddSub(server.http)).status;

/** add_sub on 100 elements: 400-byte outputs, which take blocks of the stub's arena. */
async function inferLarge(): Promise<{ status: number; text: string }> {
  const data = Array.from({ length: 100 }, (_, i) => i);
  const res = await fetch(`${server.http}/v2/models/add_sub/infer`, {
    method: 'POST',
    body: JSON.stringify({
      inputs: [
        { name: 'INPUT0', shape: [100], datatype: 'FP32', data },
        { name: 'INPUT1', shape: [100], datatype: 'FP32', data },
      ],
    }),
  });
  return { status: res.status, text: await res.text() };
}

async function waitFor(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await cond()) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}\n${server.log().slice(-3000)}`);
}

const modelReady = async () => (await fetch(`${server.http}/v2/models/add_sub/ready`)).status === 200;

async function indexEntry(): Promise<{ state?: string; reason?: string }> {
  const index = await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json();
  return index.find((e: { name: string }) => e.name === 'add_sub');
}

describe.skipIf(!canUnshare)('/dev/shm taken by others', () => {
  it('a crashed stub restarts on the space held back for it', async () => {
    expect(await infer()).toBe(200);
    const reserve = reserveName();
    expect(reserve).toBeDefined();
    expect(allocated(reserve!)).toBeGreaterThanOrEqual(N0_BYTES);

    takeAllFreeSpace();
    const before = restartsLogged();
    await crashWhileNeighbourWins();
    await waitFor('the restart', () => restartsLogged() > before);
    expect(await modelReady()).toBe(true);
    expect((await fetch(`${server.http}/v2/health/ready`)).status).toBe(200);
    // The reserve went into the new n0; with /dev/shm full it cannot be taken again yet. Small
    // answers travel inside the stub's message and need no room; a request whose outputs need
    // a block fails with what to do until there is room for them.
    expect(reserveName()).toBeUndefined();
    expect(await infer()).toBe(200);
    const full = await inferLarge();
    expect(full.status).toBe(500);
    expect(full.text).toContain('/dev/shm');
  }, 60_000);

  it('without a reserve left, the restart waits for space, says so, and comes back by itself', async () => {
    // Normally the first crash finds no reserve; if a lost race gave it back (the restart came
    // first and took the reserve again), a restart consumes it and the next crash is the one.
    const shortage = () => server.log().includes("Restart of 'add_sub_0_0' could not get resources");
    for (let crash = 0; crash < 3 && !shortage(); crash++) {
      const before = restartsLogged();
      await crashWhileNeighbourWins();
      await waitFor('a restart or the shortage warning', () => shortage() || restartsLogged() > before);
    }
    expect(shortage()).toBe(true);
    const waiting = await indexEntry();
    expect(waiting.state).toBe('READY'); // the version is not given up on; its instance is not ready
    expect(waiting.reason).toContain('Restart is waiting for resources');
    expect(waiting.reason).toContain('/dev/shm is full');
    expect(await modelReady()).toBe(false);
    // Several tries later: still retried, never counted as failed starts.
    await sleep(5_000);
    expect(server.log()).not.toMatch(/Restart of 'add_sub_0_0' failed/);
    expect(server.log().match(/could not get resources/g)).toHaveLength(1);

    fs.rmSync(path.join(shm, 'neighbour'));
    await waitFor('the instance to be ready again', modelReady);
    expect(await infer()).toBe(200);
    expect((await inferLarge()).status).toBe(200);
    expect((await indexEntry()).reason).toBeUndefined();
    const reserve = reserveName();
    expect(reserve).toBeDefined();
    expect(allocated(reserve!)).toBeGreaterThanOrEqual(N0_BYTES);
    expect(server.proc.exitCode).toBeNull();
  }, 60_000);
});
