/**
 * @module core/gpus
 * Finds the host's NVIDIA GPUs without native code: the driver lists one directory per GPU
 * under /proc/driver/nvidia/gpus. `CUDA_VISIBLE_DEVICES` narrows the list as CUDA would.
 * `TRITIUM_GPUS` (e.g. "0,1" or "") overrides detection, for tests and odd hosts.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const NVIDIA_PROC_DIR = '/proc/driver/nvidia/gpus';

/** The ids CUDA will number the usable GPUs with (0..n-1). `procDir` is for tests. */
export function detectGpus(env: NodeJS.ProcessEnv = process.env, procDir = NVIDIA_PROC_DIR): number[] {
  const override = env['TRITIUM_GPUS'];
  if (override !== undefined) return parseList(override);
  let buses: string[];
  try {
    // One directory per GPU, named by PCI bus id: sorted, that is the order CUDA's ids follow
    // on a host of like GPUs.
    buses = fs.readdirSync(procDir).sort();
  } catch {
    return [];
  }
  const visible = env['CUDA_VISIBLE_DEVICES'];
  const count = visible === undefined ? buses.length : visibleCount(visible, buses, procDir);
  // Visible devices are renumbered from 0 by CUDA.
  return Array.from({ length: count }, (_, i) => i);
}

/**
 * How many devices CUDA exposes for a CUDA_VISIBLE_DEVICES value: entries are indices, GPU
 * UUIDs (`GPU-…`, a unique prefix is enough) or MIG instances (`MIG-…`); CUDA stops at the first
 * entry that names no device, so only those before it are visible, and a device named twice
 * leaves none (all three checked against torch's device_count on an H200, docs/gpu.md).
 */
function visibleCount(visible: string, buses: string[], procDir: string): number {
  let uuids: Array<string | undefined> | undefined;
  let migs: string[] | null | undefined;
  const seen = new Set<string>();
  for (const raw of visible.split(',')) {
    const entry = raw.trim();
    let device: string | undefined;
    if (/^\d+$/.test(entry)) {
      device = Number(entry) < buses.length ? `gpu${Number(entry)}` : undefined;
    } else if (/^GPU-/i.test(entry)) {
      const known = (uuids ??= buses.map((bus) => gpuUuid(path.join(procDir, bus))));
      const i = uniquePrefixMatch(known, entry);
      device = i === undefined ? undefined : `gpu${i}`;
    } else if (/^MIG-/i.test(entry)) {
      // MIG instances are not in the driver's /proc: nvidia-smi -L lists them. Where it cannot
      // run, the entry is taken as one device (the instance's own load then says what CUDA says).
      if (migs === undefined) migs = migUuids();
      if (migs === null) device = `mig:${entry}`;
      else {
        const i = uniquePrefixMatch(migs, entry);
        device = i === undefined ? undefined : `mig:${migs[i]}`;
      }
    }
    if (device === undefined) break;
    if (seen.has(device)) return 0;
    seen.add(device);
  }
  return seen.size;
}

function uniquePrefixMatch(known: Array<string | undefined>, entry: string): number | undefined {
  const prefix = entry.toLowerCase();
  const hits = known.flatMap((u, i) => (u?.toLowerCase().startsWith(prefix) ? [i] : []));
  return hits.length === 1 ? hits[0] : undefined;
}

/** The MIG instances' UUIDs from `nvidia-smi -L`; null when it cannot be run. */
function migUuids(): string[] | null {
  try {
    const out = execFileSync('nvidia-smi', ['-L'], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] });
    return [...out.matchAll(/UUID:\s*(MIG-[^)\s]+)/g)].map((m) => m[1]!);
  } catch {
    return null;
  }
}

/** The `GPU UUID:` line of the driver's information file of one GPU. */
function gpuUuid(dir: string): string | undefined {
  try {
    return /^GPU UUID:\s*(\S+)/m.exec(fs.readFileSync(path.join(dir, 'information'), 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

function parseList(s: string): number[] {
  return s
    .split(',')
    .map((x) => x.trim())
    .filter((x) => /^\d+$/.test(x))
    .map(Number);
}
