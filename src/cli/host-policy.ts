/**
 * @module cli/host-policy
 * `--host-policy=<name>,<setting>=<value>` (repeatable): the CPUs the stubs of instances under a
 * policy may run on (docs/protocol-notes.md, "Host policy"). Settings, as tritonserver takes
 * them: `cpu-cores` (`2`, `0-3`, `0-1,4`) and `numa-node` (the node's CPUs, from sysfs; tritium
 * pins the CPUs but does not bind memory, and says so). An instance's policy is its group's
 * `host_policy`, else `cpu` for KIND_CPU, `model` for KIND_MODEL, `gpu_<id>` for KIND_GPU.
 */
import fs from 'node:fs';
import os from 'node:os';
import { InvalidArgumentError } from 'commander';

export type HostPolicyEntry = [name: string, setting: string, value: string];

/** commander's parser: one `<name>,<setting>=<value>` entry, checked for form and setting. */
export function parseHostPolicy(value: string, previous: HostPolicyEntry[] | undefined): HostPolicyEntry[] {
  const m = /^([^,=]+),([^=]+)=(.*)$/.exec(value);
  if (!m) throw new InvalidArgumentError(`--host-policy expects <policy_name>,<setting>=<value>, got '${value}'.`);
  const [, name, setting, v] = m as unknown as [string, string, string, string];
  if (setting !== 'cpu-cores' && setting !== 'numa-node') {
    // tritonserver's text.
    throw new InvalidArgumentError(`Unsupported host policy setting '${setting}' is specified, supported settings are 'numa-node', 'cpu-cores'`);
  }
  return [...(previous ?? []), [name, setting, v]];
}

/** `0-3,6` → [0, 1, 2, 3, 6]; undefined when malformed. */
function cpuList(text: string): number[] | undefined {
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const m = /^\s*(\d+)(?:\s*-\s*(\d+))?\s*$/.exec(part);
    if (!m) return undefined;
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) return undefined;
    for (let c = lo; c <= hi; c++) out.add(c);
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * The CPUs of each policy. Throws an Error naming the flag for a value this host cannot
 * honour; pushes a warning for numa-node (memory is not bound).
 */
export function resolveHostPolicies(entries: readonly HostPolicyEntry[], warnings: string[]): Map<string, number[]> {
  const cpuCount = os.cpus().length;
  const policies = new Map<string, { cores?: number[]; node?: number[] }>();
  for (const [name, setting, value] of entries) {
    const flag = `--host-policy=${name},${setting}=${value}`;
    const p = policies.get(name) ?? {};
    if (setting === 'cpu-cores') {
      const cores = cpuList(value);
      if (cores === undefined || cores.length === 0) throw new Error(`${flag}: cpu-cores expects core numbers or ranges such as 0-3,6.`);
      const missing = cores.filter((c) => c >= cpuCount);
      if (missing.length > 0) throw new Error(`${flag}: this host has CPUs 0-${cpuCount - 1}, not ${missing.join(',')}.`);
      p.cores = cores;
    } else {
      if (!/^\d+$/.test(value)) throw new Error(`${flag}: numa-node expects a node number.`);
      let list: string;
      try {
        list = fs.readFileSync(`/sys/devices/system/node/node${value}/cpulist`, 'utf8').trim();
      } catch {
        throw new Error(`${flag}: this host has no NUMA node ${value}.`);
      }
      p.node = cpuList(list) ?? [];
      warnings.push(`${flag}: the stubs run on the node's CPUs (${list}); their memory is not bound to the node`);
    }
    policies.set(name, p);
  }
  // cpu-cores is the CPU setting when both are given; numa-node then only names the memory.
  return new Map([...policies].map(([name, p]) => [name, p.cores ?? p.node ?? []]));
}
