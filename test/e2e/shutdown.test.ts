/**
 * Shutdown and shared-memory hygiene, end to end with the real CLI and real stubs:
 * SIGTERM under load answers every in-flight request and calls finalize; the exit timeout
 * bounds both the wait and a finalize that never returns; a second signal exits at once; a
 * signal during start-up; a SIGKILLed server leaves no memfd segment behind, and with /dev/shm
 * files (the fallback, `TRITIUM_MEMFD=0`) its files are removed by the next start (only those
 * whose owner is gone). After every exit path: no stub left, no segment left.
 *
 * Last, with /dev/shm files, a /dev/shm too small for a request (a private tmpfs in a mount
 * namespace, when the test may create one): only that request fails, with the size needed, the
 * free space and the flag (the fallback's texts; memfd segments need no /dev/shm, no-dev-shm.test.ts).
 *
 * Model: test/models/slow_execute (2 instances; execute sleeps MS ms and answers VALUE + 1).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { memfdsOf } from '../helpers/memfd.js';
import { descendantsOf, stubPidsOf } from '../helpers/processes.js';
import { ensureBuilt, makeRepo, PYTHON, ROOT, shmFilesOf, startTritium, type StartOptions, type Tritium } from '../helpers/server.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `p`, or a failure naming `what` when it has not settled after `ms` (a bound on a wait, not a speed check). */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`gave up waiting ${ms} ms for ${what}`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

let dir: string;
let repo: string | undefined;
const started: Tritium[] = [];

async function start(o: Partial<StartOptions> = {}): Promise<Tritium> {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-tag-'));
  repo ??= makeRepo(['slow_execute']);
  const t = await startTritium({ repos: [repo], ...o, env: { MODEL_STATE_DIR: dir, ...o.env } });
  started.push(t);
  return t;
}

afterEach(() => {
  for (const t of started.splice(0)) if (t.proc.exitCode === null && t.proc.signalCode === null) t.proc.kill('SIGKILL');
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Direct children of `pid` (the stubs of a server), from /proc. */
/** The server's stub processes (forked stubs are its fork server's children). */
const childPids = (pid: number): number[] => stubPidsOf(pid);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie is gone for our purposes: it only waits for its parent to reap it.
    return !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Stubs still running after `timeoutMs`; those are SIGKILLed so a failing check leaves none. */
async function waitGone(pids: number[], timeoutMs = 5000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let left = pids.filter(alive);
  while (left.length && Date.now() < deadline) {
    await sleep(50);
    left = left.filter(alive);
  }
  for (const pid of left) process.kill(pid, 'SIGKILL');
  return left;
}

interface Outcome {
  value: number;
  status?: number;
  body?: any;
  /** A transport error (refused, reset) instead of an HTTP answer. */
  error?: string;
}

function infer(t: Tritium, ms: number, value: number): Promise<Outcome> {
  const body = JSON.stringify({
    inputs: [
      { name: 'MS', shape: [1], datatype: 'INT32', data: [ms] },
      { name: 'VALUE', shape: [1], datatype: 'INT32', data: [value] },
    ],
  });
  return fetch(`${t.http}/v2/models/slow_execute/infer`, { method: 'POST', body, signal: AbortSignal.timeout(30_000) }).then(
    async (res) => {
      const text = await res.text();
      return { value, status: res.status, body: text ? JSON.parse(text) : undefined };
    },
    (err: Error) => ({ value, error: String((err.cause as Error | undefined)?.message ?? err.message) }),
  );
}

/** Waits until `n` requests wait in the model's queue (so they were all received). */
async function waitPending(t: Tritium, n: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const text = await (await fetch(`http://127.0.0.1:${t.metricsPort}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('nv_inference_pending_request_count{') && l.includes('model="slow_execute"'));
    last = line ?? '';
    if (line && Number(line.split(' ').pop()) === n) return;
    await sleep(20);
  }
  throw new Error(`pending count never reached ${n}; last: ${last}`);
}

describe('SIGTERM / SIGINT', () => {
  it('under load: finishes every in-flight request, calls finalize on every instance, exits 0, /dev/shm clean', async () => {
    const t = await start();
    const pid = t.proc.pid!;
    const stubs = childPids(pid);
    // Every process of the server's: the stubs, and the fork server they came from.
    const below = descendantsOf(pid);
    expect(stubs).toHaveLength(2);
    expect(shmFilesOf(pid).length).toBeGreaterThan(0);

    const inflight = Array.from({ length: 30 }, (_, i) => infer(t, 150, i));
    // 2 executing, 28 pending: 2 waiting in the stubs' rings (the default scheduler pipelines
    // one more request into each instance whose executions are long), 26 queued; all received.
    await waitPending(t, 28);
    t.proc.kill('SIGTERM');
    const deadline = Date.now() + 10_000;
    while (!t.log().includes('received SIGTERM') && Date.now() < deadline) await sleep(5);
    // Requests after the server took the signal are refused (503 or connection refused),
    // never left hanging.
    const late: Outcome[] = [];
    for (let i = 0; i < 5; i++) {
      late.push(await infer(t, 0, 1000 + i));
      await sleep(20);
    }
    const results = await Promise.all(inflight);
    const exit = await t.exited;

    for (const r of results) {
      expect(r.error).toBeUndefined();
      expect(r.status).toBe(200);
      expect(r.body.outputs[0].data).toEqual([r.value + 1]);
    }
    for (const r of late) {
      if (r.error === undefined) {
        expect(r.status).toBe(503);
        expect(typeof r.body.error).toBe('string');
      }
    }
    expect(exit).toEqual({ code: 0, signal: null });
    expect(t.log()).toContain('received SIGTERM; shutting down');
    expect(
      fs
        .readdirSync(dir)
        .filter((f) => f.startsWith('finalized_'))
        .sort(),
    ).toEqual(['finalized_slow_execute_0_0', 'finalized_slow_execute_0_1']);
    expect(await waitGone(below)).toEqual([]);
    expect(shmFilesOf(pid)).toEqual([]);
  });

  it('--exit-timeout-secs: requests that cannot finish in time get an error answer; exit 1 as Triton', async () => {
    const t = await start({ args: ['--exit-timeout-secs=2'] });
    const pid = t.proc.pid!;
    expect(childPids(pid)).toHaveLength(2);
    // Every process of the server's: the stubs, and the fork server they came from.
    const below = descendantsOf(pid);
    const inflight = Array.from({ length: 6 }, (_, i) => infer(t, 8000, i));
    await waitPending(t, 4); // 2 executing, 2 in the stubs' rings, 2 queued
    t.proc.kill('SIGTERM');
    const results = await Promise.all(inflight);
    const exit = await within(t.exited, 30_000, 'the server to exit after the exit timeout');

    // Handed to a stub (executing or waiting in its ring): failed with the stub it was handed
    // to. Still in the scheduler's queue: refused by the stopping scheduler.
    const executing = results.filter((r) => r.status === 500);
    const queued = results.filter((r) => r.status === 503);
    expect(executing).toHaveLength(4);
    expect(queued).toHaveLength(2);
    for (const r of executing) {
      expect(r.body.error).toMatch(
        /^Stub process 'slow_execute_0_[01]' is not healthy\. The server is shutting down and the stub did not stop within the exit timeout \(\d+ ms\); it was killed\.$/,
      );
    }
    for (const r of queued) expect(r.body.error).toBe('Server is stopping, scheduler for model has stopped accepting new inference requests');
    expect(exit).toEqual({ code: 1, signal: null });
    expect(t.log()).toContain('Exit timeout expired.');
    expect(await waitGone(below)).toEqual([]);
    expect(shmFilesOf(pid)).toEqual([]);
  });

  it('SIGINT with a finalize that never returns: bounded by the exit timeout, then killed; exit 0, /dev/shm clean', async () => {
    const t = await start({ args: ['--exit-timeout-secs=2'], env: { FINALIZE_HANG: '1' } });
    const pid = t.proc.pid!;
    expect(childPids(pid)).toHaveLength(2);
    // Every process of the server's: the stubs, and the fork server they came from.
    const below = descendantsOf(pid);
    const ok = await infer(t, 0, 41);
    expect(ok.status).toBe(200);
    t.proc.kill('SIGINT');
    // finalize never returns: the server exits only because the exit timeout ends it.
    const exit = await within(t.exited, 30_000, 'the server to exit with a hanging finalize');
    expect(exit).toEqual({ code: 0, signal: null });
    expect(t.log()).toMatch(/finalize of 'slow_execute_0_[01]' did not end within \d+ ms; killing the stub/);
    expect(await waitGone(below)).toEqual([]);
    expect(shmFilesOf(pid)).toEqual([]);
  });

  it('a second signal exits at once, still removing shared memory and stopping the stubs', async () => {
    const t = await start();
    const pid = t.proc.pid!;
    expect(childPids(pid)).toHaveLength(2);
    // Every process of the server's: the stubs, and the fork server they came from.
    const below = descendantsOf(pid);
    const inflight = Array.from({ length: 6 }, (_, i) => infer(t, 20_000, i));
    await waitPending(t, 4);
    t.proc.kill('SIGTERM');
    await sleep(300);
    t.proc.kill('SIGTERM');
    // Well before the 20 s executes could end (a server that waited for them would answer 200).
    const exit = await within(t.exited, 15_000, 'the server to exit after the second signal');
    expect(exit).toEqual({ code: 1, signal: null });
    expect(t.log()).toContain('received SIGTERM again; exiting now');
    // The clients learn at once (the connection closes); nothing waits for the 20 s executes.
    const results = await Promise.all(inflight);
    expect(results.every((r) => r.error !== undefined || r.status! >= 400)).toBe(true);
    expect(await waitGone(below)).toEqual([]);
    expect(shmFilesOf(pid)).toEqual([]);
  });

  it('a signal during start-up (initialize still running) stops the stubs and leaves /dev/shm clean', async () => {
    const t = await start({ expectFailure: true, env: { INIT_SLEEP_S: '20' } });
    const pid = t.proc.pid!;
    const deadline = Date.now() + 30_000;
    // After the auto-complete stub is gone, 'loading:' starts the two instance stubs.
    while (Date.now() < deadline && (!t.log().includes('loading: slow_execute:1') || childPids(pid).length < 2)) await sleep(50);
    await sleep(500); // both are inside initialize now (it sleeps 20 s)
    const stubs = childPids(pid);
    // Every process of the server's: the stubs, and the fork server they came from.
    const below = descendantsOf(pid);
    expect(stubs).toHaveLength(2);
    expect(shmFilesOf(pid).length).toBeGreaterThanOrEqual(2);
    t.proc.kill('SIGTERM');
    const exit = await t.exited;
    expect(exit.signal).toBeNull();
    expect(t.log()).toContain('received SIGTERM during start-up');
    expect(await waitGone(below)).toEqual([]);
    expect(shmFilesOf(pid)).toEqual([]);
  });
});

describe('SIGTERM while a model control load is still initializing', () => {
  /** Starts in explicit mode, asks for slow_execute whose initialize sleeps an hour, waits until both instances are inside it. */
  async function loadingForever(): Promise<{ t: Tritium; stubs: number[]; load: Promise<unknown> }> {
    const t = await start({ args: ['--model-control-mode=explicit', '--exit-timeout-secs=3'], env: { INIT_SLEEP_S: '3600' } });
    const load = fetch(`${t.http}/v2/repository/models/slow_execute/load`, { method: 'POST' }).then(
      (r) => r.status,
      (err: Error) => err.message,
    );
    const inside = () => ['slow_execute_0_0', 'slow_execute_0_1'].every((i) => fs.existsSync(path.join(dir, `initializing_${i}`)));
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && !inside()) await sleep(50);
    expect(inside()).toBe(true);
    expect(childPids(t.proc.pid!)).toHaveLength(2);
    // Every process of the server's: the stubs, and the fork server they came from.
    return { t, stubs: descendantsOf(t.proc.pid!), load };
  }

  async function expectBoundedExit(t: Tritium, stubs: number[]): Promise<void> {
    const pid = t.proc.pid!;
    expect(shmFilesOf(pid).length).toBeGreaterThanOrEqual(2);
    t.proc.kill('SIGTERM');
    // The exit timeout (3 s) bounds the wait for the load; the test waits up to ten times that.
    const exit = await within(t.exited, 30_000, 'the server to exit while initialize sleeps');
    // Triton fails its stop when the exit timeout expires with a model still live: exit 1.
    expect(exit).toEqual({ code: 1, signal: null });
    expect(t.log()).toMatch(/Exit timeout expired\. Exiting immediately; model\(s\) still loading: slow_execute\./);
    expect(await waitGone(stubs)).toEqual([]);
    expect(shmFilesOf(pid)).toEqual([]);
  }

  it('abandons the load at the exit timeout: stubs killed, regions removed, exit 1', async () => {
    const { t, stubs, load } = await loadingForever();
    await expectBoundedExit(t, stubs);
    // The load's client got an answer or a closed connection, not a hang.
    await within(load, 10_000, 'the load request to end');
  });

  it('does the same when the model was asked to unload while still loading', async () => {
    const { t, stubs, load } = await loadingForever();
    const unload = fetch(`${t.http}/v2/repository/models/slow_execute/unload`, { method: 'POST' }).then(
      (r) => r.status,
      (err: Error) => err.message,
    );
    await expectBoundedExit(t, stubs);
    await within(Promise.all([load, unload]), 10_000, 'the load and unload requests to end');
  });
});

describe('a SIGKILLed server', () => {
  it('leaves no shared memory: its memfd segments go with the last process holding them', async () => {
    const t = await start();
    const pid = t.proc.pid!;
    const stubs = childPids(pid);
    // Every process of the server's: the stubs, and the fork server they came from.
    const below = descendantsOf(pid);
    const segments = shmFilesOf(pid);
    // Both instances' n0 are memfds of the server (and of their stub); nothing is in /dev/shm.
    expect(segments.filter((s) => s.endsWith('.n0'))).toHaveLength(2);
    expect(fs.readdirSync('/dev/shm').filter((f) => f.startsWith(`tritium_${pid}_`))).toEqual([]);
    const label = segments[0]!;
    const inStub = () => stubs.some((s) => memfdsOf(s, label).has(label));
    expect(inStub()).toBe(true);
    t.proc.kill('SIGKILL');
    await t.exited;
    // The stubs notice their parent is gone (stub/tritium_stub/parent_watch.py, at the next heartbeat: within 0.5 s).
    expect(await waitGone(below)).toEqual([]);
    expect(inStub()).toBe(false);
    expect(shmFilesOf(pid)).toEqual([]);
  });

  it('with /dev/shm files (the fallback), leaves files that the next start removes, only those whose owner process is gone', async () => {
    const first = await start({ env: { TRITIUM_MEMFD: '0' } });
    const pid = first.proc.pid!;
    expect(childPids(pid)).toHaveLength(2);
    // Every process of the server's: the stubs, and the fork server they came from.
    const below = descendantsOf(pid);
    const files = shmFilesOf(pid);
    expect(files.length).toBeGreaterThan(0);
    first.proc.kill('SIGKILL');
    await first.exited;
    // The stubs notice their parent is gone (stub/tritium_stub/parent_watch.py, at the next heartbeat: within 0.5 s)
    // and exit by themselves; the files stay behind. (Soft: the file checks below still run.)
    expect.soft(await waitGone(below)).toEqual([]);
    expect(shmFilesOf(pid)).toEqual(files);

    // A file whose owner is alive (this test process) must survive the cleanup.
    const liveFile = path.join('/dev/shm', `tritium_${process.pid}_0badcafe_live.n0`);
    fs.writeFileSync(liveFile, '');
    try {
      // Started with memfds (the default): the stale-file cleanup runs all the same.
      const second = await start();
      expect(shmFilesOf(pid)).toEqual([]);
      expect(fs.existsSync(liveFile)).toBe(true);
      // This suite runs alone (vitest.config.ts), so no other server can have removed them.
      expect(second.log()).toMatch(/removed \d+ shared-memory file\(s\) left by servers that no longer run/);
      const secondPid = second.proc.pid!;
      expect((await second.stop()).code).toBe(0);
      expect(shmFilesOf(secondPid)).toEqual([]);
    } finally {
      fs.rmSync(liveFile, { force: true });
    }
  });
});

// A private, small /dev/shm needs a mount namespace: root, or unprivileged user namespaces.
const canUnshare = spawnSync('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs -o size=1m tmpfs /dev/shm'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!canUnshare)('a /dev/shm too small for a request', () => {
  it('fails only that request, naming the size needed, the free space and the flag; the instance keeps serving', async () => {
    ensureBuilt();
    const repo = makeRepo(['identity_all']);
    const args = [
      path.join(ROOT, 'bin', 'tritium.js'),
      `--model-repository=${repo}`,
      '--http-port=0',
      '--allow-grpc=false',
      '--allow-metrics=false',
      '--http-address=127.0.0.1',
      `--backend-config=python,python-executable=${PYTHON}`,
      '--http-max-input-size=134217728',
    ];
    // 12 MiB of /dev/shm for the server and its stub only; `exec` keeps the server's pid.
    const proc = spawn('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs -o size=12m tmpfs /dev/shm && exec "$@"', 'sh', process.execPath, ...args], {
      cwd: ROOT,
      env: { ...process.env, TRITIUM_MEMFD: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let log = '';
    proc.stdout.on('data', (d) => (log += d));
    proc.stderr.on('data', (d) => (log += d));
    const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
    try {
      let port = 0;
      for (let i = 0; i < 1200 && !port; i++) {
        port = Number(/Started HTTPService at [^:\s]+:(\d+)/.exec(log)?.[1] ?? 0);
        if (!port) await sleep(50);
        if (proc.exitCode !== null) throw new Error(`server exited:\n${log}`);
      }
      const privateShm = `/proc/${proc.pid}/root/dev/shm`;
      const echo = async (n: number) => {
        const header = Buffer.from(
          JSON.stringify({
            inputs: [{ name: 'IN_UINT8', shape: [n], datatype: 'UINT8', parameters: { binary_data_size: n } }],
            outputs: [{ name: 'OUT_UINT8', parameters: { binary_data: true } }],
          }),
        );
        const res = await fetch(`http://127.0.0.1:${port}/v2/models/identity_all/infer`, {
          method: 'POST',
          headers: { 'Inference-Header-Content-Length': String(header.length) },
          body: Buffer.concat([header, Buffer.alloc(n, 7)]),
        });
        const body = Buffer.from(await res.arrayBuffer());
        return { status: res.status, body };
      };

      // Node's side: the 32 MiB input cannot get a segment.
      const tooBig = await echo(32 * 2 ** 20);
      expect(tooBig.status).toBe(500);
      const inError = JSON.parse(tooBig.body.toString()).error as string;
      expect(inError).toMatch(
        /^\/dev\/shm is full: cannot create \d+-byte segment \S+ for 33554432 bytes of tensor data\. \d+ of \d+ bytes of \/dev\/shm are free\. This server holds \d+ bytes: \d+ in the n0 segments of its 1 Python instances/,
      );
      expect(inError).toContain('--shm-size');
      expect(inError).toContain('--backend-config=python,shm-default-byte-size');

      // The stub's side: a 6 MiB input fits, its 6 MiB echo does not.
      const noRoomForOutput = await echo(6 * 2 ** 20);
      expect(noRoomForOutput.status).toBe(500);
      const outError = JSON.parse(noRoomForOutput.body.toString()).error as string;
      expect(outError).toMatch(
        /\/dev\/shm is full: cannot create \d+-byte output segment \S+ for 6291456 bytes of tensor data\. \d+ of \d+ bytes of \/dev\/shm are free/,
      );
      expect(outError).toContain('--shm-size');
      expect(outError).toContain('--backend-config=python,shm-default-byte-size');

      // Only those requests failed: the instance is ready and serves what fits.
      const small = await echo(1000);
      expect(small.status).toBe(200);
      expect(small.body.subarray(small.body.length - 1000).equals(Buffer.alloc(1000, 7))).toBe(true);
      expect((await fetch(`http://127.0.0.1:${port}/v2/models/identity_all/ready`)).status).toBe(200);
      expect(fs.readdirSync(privateShm).every((f) => f.startsWith(`tritium_${proc.pid}_`))).toBe(true);
    } finally {
      proc.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
