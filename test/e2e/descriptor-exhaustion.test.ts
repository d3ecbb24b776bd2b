/**
 * A server whose descriptors are all taken by idle clients still recovers a crashed stub. Run
 * under `prlimit --nofile=128:128`, the suite opens keep-alive connections (each answered one
 * health check) until the server has no descriptor left, SIGKILLs the model's stub, then closes
 * the connections: the stub is restarted on the descriptors the server holds back for recovery
 * (core/instance/fd-reserve.ts) rather than crash-looping on EMFILE until supervision gives up,
 * and requests succeed again without restarting the server.
 */
import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inferAddSub } from './infer-helpers.js';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { stubPidsOf } from '../helpers/processes.js';

const FD_LIMIT = 128;
let server: Tritium;
let repo: string;

beforeAll(async () => {
  repo = makeRepo(['add_sub']);
  // No connection limit: this suite is about what happens when clients do get every descriptor
  // (connection-limit.test.ts covers the limit that normally prevents it).
  server = await startTritium({ repos: [repo], args: ['--http-max-connections=0'], wrap: ['prlimit', `--nofile=${FD_LIMIT}:${FD_LIMIT}`] });
});

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(repo, { recursive: true, force: true });
});

const openFds = (pid: number) => fs.readdirSync(`/proc/${pid}/fd`).length;

/** utime + stime of a process, in seconds (/proc/<pid>/stat fields 14 and 15, in clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);

const stubPids = (serverPid: number): number[] => stubPidsOf(serverPid);

/** A keep-alive connection that got its answer to one health check, or undefined if refused. */
function idleConnection(port: number): Promise<net.Socket | undefined> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const timer = setTimeout(() => resolve(s), 2_000); // accepted but not (yet) answered: holds a descriptor too
    s.once('data', () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once('error', () => {
      clearTimeout(timer);
      resolve(undefined);
    });
    s.once('close', () => {
      clearTimeout(timer);
      resolve(undefined);
    });
    s.write('GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n');
  });
}

const infer = async () => (await inferAddSub(server.http)).status;

async function waitFor(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}\n${server.log().slice(-3000)}`);
}

describe('descriptor exhaustion', () => {
  it('restarts a killed stub while idle clients hold every descriptor, and serves once they leave', async () => {
    const pid = server.proc.pid!;
    expect(await infer()).toBe(200);
    const [stub] = stubPids(pid);
    expect(stub).toBeDefined();

    // Take descriptors until the server has none left to accept with: new connections are
    // then closed at once (the count of /proc/<pid>/fd alone can be off by inherited ones).
    const held: net.Socket[] = [];
    let closed = 0;
    for (let i = 0; i < FD_LIMIT * 2 && closed < 3; i++) {
      const s = await idleConnection(server.httpPort);
      if (s) held.push(s);
      else closed++;
    }
    expect(closed).toBe(3);
    expect(openFds(pid)).toBeGreaterThanOrEqual(FD_LIMIT - 2);
    // Accept failures are invisible to Node (libuv closes such connections itself); the
    // descriptor watch notices and says so once for the whole burst.
    await waitFor('the exhaustion warning', () => server.log().includes('file descriptors of the server are in use'));
    const cpuBefore = cpuSeconds(pid);
    const refused = await Promise.all(Array.from({ length: 20 }, () => idleConnection(server.httpPort)));
    await new Promise((r) => setTimeout(r, 1_000));
    // Not spinning on the listening socket while clients keep knocking: well under a core.
    expect(cpuSeconds(pid) - cpuBefore).toBeLessThan(1);
    for (const s of refused) s?.destroy();

    process.kill(stub!, 'SIGKILL');
    await waitFor('the stub to be restarted', () => server.log().includes("Stub process 'add_sub_0_0' restarted"));
    expect(server.log()).not.toContain('will not be restarted again');
    const [restarted] = stubPids(pid);
    expect(restarted).toBeDefined();
    expect(restarted).not.toBe(stub);

    for (const s of held) s.destroy();
    await waitFor('the server to answer again', async () => {
      try {
        return (await fetch(`${server.http}/v2/health/ready`)).status === 200;
      } catch {
        return false;
      }
    });
    expect(await infer()).toBe(200);
    await waitFor('the end of the burst', () => server.log().includes('file descriptors are available again'));
    expect(server.log().match(/file descriptors of the server are in use/g)).toHaveLength(1);
    const metrics = await (await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`)).text();
    expect(metric(metrics, 'tritium_descriptor_exhaustion_total')).toBeGreaterThanOrEqual(1);
    expect(metric(metrics, 'tritium_descriptors_limit')).toBe(FD_LIMIT);
    expect(metric(metrics, 'tritium_descriptors_open')).toBeLessThan(FD_LIMIT / 2);
    // The same server process throughout.
    expect(server.proc.exitCode).toBeNull();
    expect(server.proc.pid).toBe(pid);
  }, 120_000);
});
