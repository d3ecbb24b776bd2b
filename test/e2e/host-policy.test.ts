/**
 * Host policy (docs/protocol-notes.md, "Host policy"): `--host-policy=<name>,cpu-cores=...` /
 * `numa-node=N` pins the stubs of the instances under that policy (the group's `host_policy`,
 * else `cpu` for KIND_CPU), read back from each stub's /proc/<pid>/status Cpus_allowed_list.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, makeRepo, ROOT, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { INSTANCE_PROBE_IO, writeVariant } from './infer-helpers.js';
import { parentOf, stubPidsOf } from '../helpers/processes.js';

const cli = (...args: string[]) => spawnSync(process.execPath, [path.join(ROOT, 'bin', 'tritium.js'), ...args], { encoding: 'utf8', timeout: 30_000 });
const CPUS = os.cpus().length;

const PROBE = `${INSTANCE_PROBE_IO}instance_group [
  { name: "pinned" count: 1 kind: KIND_CPU host_policy: "last_core" },
  { name: "plain" count: 1 kind: KIND_CPU }
]
parameters { key: "INIT_SLEEP_S" value: { string_value: "0" } }
`;

/** Cpus_allowed_list of every instance's stub, by instance name (two requests held at once reach both). */
async function affinities(s: Tritium): Promise<Record<string, string>> {
  const call = () =>
    fetch(`${s.http}/v2/models/probe/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'IN', shape: [1], datatype: 'FP32', data: [1] }] }),
    }).then((r) => r.json());
  const out: Record<string, string> = {};
  for (const r of await Promise.all([call(), call()])) {
    const get = (n: string) => r.outputs.find((o: { name: string }) => o.name === n).data[0];
    const name = JSON.parse(get('ARGS')).model_instance_name as string;
    const status = fs.readFileSync(`/proc/${get('PID')}/status`, 'utf8');
    out[name] = /^Cpus_allowed_list:\s*(\S+)$/m.exec(status)![1]!;
  }
  return out;
}

beforeAll(() => ensureBuilt());

describe('--host-policy', () => {
  it.skipIf(CPUS < 2)("pins each instance's stub to its policy's cores (the group's host_policy, else cpu)", async () => {
    const repo = makeRepo([]);
    writeVariant(repo, 'instance_probe', 'probe', PROBE);
    const last = CPUS - 1;
    const s = await startTritium({ repos: [repo], args: [`--host-policy=last_core,cpu-cores=${last}`, '--host-policy=cpu,cpu-cores=0'] });
    try {
      expect(await affinities(s)).toEqual({ pinned_0: String(last), plain_0: '0' });
      // Spawned, not forked (fork-server.ts): OpenBLAS must see the pinned affinity at import.
      const stubs = stubPidsOf(s.proc.pid!);
      expect(stubs).toHaveLength(2);
      for (const pid of stubs) expect(parentOf(pid)).toBe(s.proc.pid);
    } finally {
      await stopAndExpectNoShm(s);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });

  it.skipIf(!fs.existsSync('/sys/devices/system/node/node0/cpulist'))('pins to the CPUs of a NUMA node, and says memory is not bound', async () => {
    const repo = makeRepo([]);
    writeVariant(repo, 'instance_probe', 'probe', PROBE);
    const nodeCpus = fs.readFileSync('/sys/devices/system/node/node0/cpulist', 'utf8').trim();
    const s = await startTritium({ repos: [repo], args: ['--host-policy=last_core,numa-node=0', `--host-policy=cpu,cpu-cores=0`] });
    try {
      expect(await affinities(s)).toEqual({ pinned_0: nodeCpus, plain_0: '0' });
      expect(s.log()).toContain(`--host-policy=last_core,numa-node=0: the stubs run on the node's CPUs (${nodeCpus}); their memory is not bound to the node`);
    } finally {
      await stopAndExpectNoShm(s);
      fs.rmSync(repo, { recursive: true, force: true });
    }
  });

  it('refuses a setting tritonserver does not know, with its text', () => {
    const r = cli('--model-repository=/nonexistent', '--host-policy=p,bogus=1');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("Unsupported host policy setting 'bogus' is specified, supported settings are 'numa-node', 'cpu-cores'");
  });

  it('refuses cores this host does not have, naming them', () => {
    const r = cli('--model-repository=/nonexistent', `--host-policy=p,cpu-cores=0-${CPUS}`);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`--host-policy=p,cpu-cores=0-${CPUS}: this host has CPUs 0-${CPUS - 1}, not ${CPUS}.`);
  });
});
