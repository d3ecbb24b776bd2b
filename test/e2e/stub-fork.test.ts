/**
 * Stubs forked from the fork server (src/backends/python/fork-server.ts, stub/fork_server.py),
 * end to end: real servers, real stubs. A forked stub must look to model code like a spawned
 * one (command line, sys.argv, sys.path, __main__, descriptors, signal dispositions), which one
 * server of each `stub-start` shows from inside the probe model (test/models/stub_env_probe);
 * a forked stub that is killed comes back forked; a fork server that is killed takes its stubs
 * with it and the instances come back through a new one; shutdown leaves no process behind.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cmdlineOf, descendantsOf, parentOf, stubPidsOf } from '../helpers/processes.js';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { inferAddSub, waitFor } from './infer-helpers.js';

interface Facts {
  argv: string[];
  path: string[];
  main: string | null;
  our_main_imported: boolean;
  env: string[];
  inheritable_fds: number[];
  sigchld_default: boolean;
  sigint_handler: string;
  wakeup_fd: number | null;
  stdout_line_buffered: boolean;
  cmdline: string[];
  pid: number;
  ppid: number;
}

async function facts(s: Tritium): Promise<Facts> {
  const res = await fetch(`${s.http}/v2/models/stub_env_probe/infer`, {
    method: 'POST',
    body: JSON.stringify({ inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [1] }] }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { outputs: Array<{ data: string[] }> };
  return JSON.parse(body.outputs[0]!.data[0]!) as Facts;
}

/** add_sub's OUTPUT0 for [1, 2, 3, 4] + [1, 1, 1, 1]. */
async function addSub(s: Tritium): Promise<number[]> {
  const { status, text } = await inferAddSub(s.http);
  expect(status).toBe(200);
  return (JSON.parse(text) as { outputs: Array<{ name: string; data: number[] }> }).outputs.find((o) => o.name === 'OUTPUT0')!.data;
}

const alive = (pid: number): boolean => fs.existsSync(`/proc/${pid}`) && !/\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));

/** The server's fork server processes. */
const forkServersOf = (s: Tritium): number[] => descendantsOf(s.proc.pid!).filter((p) => cmdlineOf(p).includes('stub/fork_server.py'));

/** The command line without what differs between two servers and instances: region name, server pid, instance name. */
const comparable = (cmdline: string[]): string[] => cmdline.map((w, i) => (i === 3 || i === 5 || i === 6 ? '<differs>' : w));

let forked: Tritium;
let spawned: Tritium;

beforeAll(async () => {
  const repo = makeRepo(['add_sub', 'stub_env_probe']);
  [forked, spawned] = await Promise.all([startTritium({ repos: [repo] }), startTritium({ repos: [repo], args: ['--backend-config=python,stub-start=spawn'] })]);
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(spawned);
});

describe('a forked stub, seen from model code', () => {
  it('is the fork server\u2019s child, while stub-start=spawn makes it the server\u2019s', async () => {
    const f = await facts(forked);
    const s = await facts(spawned);
    expect(forkServersOf(forked)).toEqual([f.ppid]);
    expect(forkServersOf(spawned)).toEqual([]);
    expect(s.ppid).toBe(spawned.proc.pid);
    expect(parentOf(f.ppid)).toBe(forked.proc.pid);
  });

  it('looks like a spawned stub: command line, argv, path, __main__, descriptors, signals', async () => {
    const f = await facts(forked);
    const s = await facts(spawned);
    expect(f.cmdline[1]).toMatch(/stub\/main\.py$/);
    expect(f.cmdline[6]).toMatch(/^stub_env_probe_0_[01]$/);
    expect(comparable(f.cmdline)).toEqual(comparable(s.cmdline));
    expect(f.argv).toEqual(s.argv);
    expect(f.path).toEqual(s.path);
    expect(f.main).toEqual(s.main);
    expect(f.our_main_imported).toBe(false);
    expect(f.env).toEqual(s.env);
    expect(f.inheritable_fds).toEqual(s.inheritable_fds);
    expect(f.sigchld_default).toBe(true);
    expect(f.sigint_handler).toBe(s.sigint_handler);
    expect(f.wakeup_fd).toBe(s.wakeup_fd);
    expect(f.stdout_line_buffered).toBe(true);
    // ps and pgrep -f see each stub's own command line, not the fork server's.
    expect(stubPidsOf(forked.proc.pid!, 'stub_env_probe')).toHaveLength(2);
    expect(await addSub(forked)).toEqual(await addSub(spawned));
  });
});

describe('supervision of forked stubs', () => {
  it('restarts a killed stub through the fork server', async () => {
    const [stub] = stubPidsOf(forked.proc.pid!, '/add_sub/');
    const server = parentOf(stub!);
    process.kill(stub!, 'SIGKILL');
    await waitFor('a new add_sub stub', () => {
      const now = stubPidsOf(forked.proc.pid!, '/add_sub/');
      return now.length === 1 && now[0] !== stub;
    });
    const [again] = stubPidsOf(forked.proc.pid!, '/add_sub/');
    expect(parentOf(again!)).toBe(server);
    await waitFor('add_sub ready', async () => (await fetch(`${forked.http}/v2/models/add_sub/ready`)).status === 200);
    expect(await addSub(forked)).toEqual([2, 3, 4, 5]);
  });

  it('kills the stubs of a fork server that dies, and restarts them through a new one', async () => {
    const [server] = forkServersOf(forked);
    const before = stubPidsOf(forked.proc.pid!);
    expect(before).toHaveLength(3);
    process.kill(server!, 'SIGKILL');
    await waitFor('the old stubs to end', () => before.every((p) => !alive(p)));
    await waitFor('three new stubs under a new fork server', () => {
      const servers = forkServersOf(forked);
      const stubs = stubPidsOf(forked.proc.pid!);
      return servers.length === 1 && servers[0] !== server && stubs.length === 3 && stubs.every((p) => !before.includes(p) && parentOf(p) === servers[0]);
    });
    expect(forked.log()).toMatch(/The stub fork server was terminated by signal SIGKILL; killing the 3 stub\(s\) it started/);
    await waitFor('add_sub ready', async () => (await fetch(`${forked.http}/v2/models/add_sub/ready`)).status === 200);
    expect(await addSub(forked)).toEqual([2, 3, 4, 5]);
  });

  it('leaves no stub and no fork server behind at shutdown', async () => {
    const processes = descendantsOf(forked.proc.pid!);
    expect(processes.length).toBe(4);
    await stopAndExpectNoShm(forked);
    for (const p of processes) expect(alive(p), cmdlineOf(p)).toBe(false);
  });
});
