/**
 * @module core/gpus
 * Finds the host's NVIDIA GPUs without native code: the driver lists one directory per GPU
 * under /proc/driver/nvidia/gpus. `CUDA_VISIBLE_DEVICES` narrows the list as CUDA would.
 * `TRITIUM_GPUS` (e.g. "0,1" or "") overrides detection, for tests and odd hosts.
 */
import fs from 'node:fs';

export function detectGpus(env: NodeJS.ProcessEnv = process.env): number[] {
  const override = env['TRITIUM_GPUS'];
  if (override !== undefined) return parseList(override);
  let count = 0;
  try {
    count = fs.readdirSync('/proc/driver/nvidia/gpus').length;
  } catch {
    return [];
  }
  const all = Array.from({ length: count }, (_, i) => i);
  const visible = env['CUDA_VISIBLE_DEVICES'];
  if (visible === undefined) return all;
  // Visible devices are renumbered from 0 by CUDA.
  return parseList(visible)
    .filter((i) => i < count)
    .map((_, k) => k);
}

function parseList(s: string): number[] {
  return s
    .split(',')
    .map((x) => x.trim())
    .filter((x) => /^\d+$/.test(x))
    .map(Number);
}
