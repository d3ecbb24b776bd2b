/**
 * The nv_gpu_* families read with nvidia-smi. This machine has no GPU, so a small fake `nvidia-smi`
 * script stands in for the real one (it prints what the real one prints for the same query);
 * test/e2e/metrics-latency.test.ts puts the same kind of script on a real server's PATH.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GpuMetrics, parseGpuCsv } from '../../src/frontends/metrics/gpu-metrics.js';
import { Metrics } from '../../src/frontends/metrics/metrics.js';
import { metricValue, parsePrometheus, waitFor } from '../e2e/infer-helpers.js';

const dirs: string[] = [];
const stops: Array<() => void> = [];
afterEach(() => {
  for (const s of stops.splice(0)) s();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** An executable `nvidia-smi` in a fresh directory; `body` is its shell script. Returns its path. */
function fakeSmi(body: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-smi-'));
  dirs.push(dir);
  const file = path.join(dir, 'nvidia-smi');
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

const UUID_A = 'GPU-8f3c2b1a-0000-1111-2222-333344445555';
const UUID_B = 'GPU-1a2b3c4d-6666-7777-8888-99990000aaaa';

describe('parseGpuCsv', () => {
  it('converts to Triton units and skips [N/A] fields and unusable lines', () => {
    const got = parseGpuCsv(`${UUID_A}, 37, 1024, 81920, 70.25, 400.00, 123456\n${UUID_B}, [N/A], 0, 16384, [N/A], [Not Supported]\n\nno uuid here, 1\n`);
    expect(got).toEqual([
      {
        uuid: UUID_A,
        utilization: 0.37,
        memoryUsedBytes: 1024 * 2 ** 20,
        memoryTotalBytes: 81920 * 2 ** 20,
        powerUsageWatts: 70.25,
        powerLimitWatts: 400,
        energyMillijoules: 123456,
      },
      { uuid: UUID_B, memoryUsedBytes: 0, memoryTotalBytes: 16384 * 2 ** 20 },
    ]);
  });
});

describe('GpuMetrics', () => {
  it('says why there are none when nvidia-smi is missing, and registers no family', async () => {
    const m = new Metrics({ cpuMetrics: false });
    stops.push(() => m.close());
    const found = await m.startGpuMetrics({ intervalMs: 50, command: path.join(os.tmpdir(), 'no-such-dir', 'nvidia-smi') });
    expect(found).toMatchObject({ missing: true });
    expect(await m.render()).not.toMatch(/nv_gpu|nv_energy/);
  });

  it('registers no family when nvidia-smi fails or lists no GPU', async () => {
    const failing = fakeSmi('echo "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver." ; exit 9');
    const m = new Metrics({ cpuMetrics: false });
    stops.push(() => m.close());
    expect(await m.startGpuMetrics({ intervalMs: 50, command: failing })).toEqual({
      none: `${failing} failed: NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.`,
      missing: false,
    });
    expect(await m.startGpuMetrics({ intervalMs: 50, command: fakeSmi('exit 0') })).toEqual({ none: 'nvidia-smi lists no GPU', missing: false });
    expect(await m.render()).not.toMatch(/nv_gpu|nv_energy/);
  });

  it('reads every interval, one run at a time, energy counted from the first reading, until stopped', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-smi-state-'));
    dirs.push(dir);
    const runs = path.join(dir, 'runs');
    // Each run appends a line to `runs` and reports 1000 mJ more energy than the last.
    const smi = fakeSmi(
      [
        `echo x >> ${runs}`,
        `n=$(wc -l < ${runs})`,
        'sleep 0.05',
        `echo "${UUID_A}, 50, 2048, 8192, 100.5, 250.00, $((5000000 + n * 1000))"`,
        `echo "${UUID_B}, 3, 10, 8192, [N/A], [N/A], [N/A]"`,
      ].join('\n'),
    );
    const m = new Metrics({ cpuMetrics: false });
    stops.push(() => m.close());
    expect(await m.startGpuMetrics({ intervalMs: 20, command: smi })).toEqual({ gpus: [UUID_A, UUID_B] });
    await waitFor('3 more readings', () => fs.readFileSync(runs, 'utf8').split('\n').length > 4, 10_000);
    const { samples, type } = parsePrometheus(await m.render());
    expect(metricValue(samples, 'nv_gpu_utilization', { gpu_uuid: UUID_A })).toBe(0.5);
    expect(metricValue(samples, 'nv_gpu_utilization', { gpu_uuid: UUID_B })).toBe(0.03);
    expect(metricValue(samples, 'nv_gpu_memory_used_bytes', { gpu_uuid: UUID_A })).toBe(2048 * 2 ** 20);
    expect(metricValue(samples, 'nv_gpu_power_usage', { gpu_uuid: UUID_B })).toBeUndefined();
    const joules = metricValue(samples, 'nv_energy_consumption', { gpu_uuid: UUID_A })!;
    // At least 3 runs finished (the 4th may be going): 1000 mJ more per reading after the first.
    expect(joules).toBeGreaterThanOrEqual(2);
    expect(Number.isInteger(joules)).toBe(true);
    expect(type.get('nv_energy_consumption')).toBe('counter');
    // The 20 ms interval is shorter than a 50 ms run: ticks that find a run going are skipped.
    m.close();
    const after = fs.readFileSync(runs, 'utf8');
    await new Promise((r) => setTimeout(r, 200));
    expect(fs.readFileSync(runs, 'utf8')).toBe(after);
  });

  it('asks again without the energy field when the driver refuses it', async () => {
    const smi = fakeSmi(
      [
        'case "$1" in *total_energy_consumption*) echo \'Field "total_energy_consumption" is not a valid field to query.\' >&2; exit 2;; esac',
        `echo "${UUID_A}, 12, 1, 2, 3.5, 4"`,
      ].join('\n'),
    );
    const g = new GpuMetrics({ intervalMs: 1000, command: smi });
    stops.push(() => g.stop());
    expect(await g.start()).toEqual({ gpus: [UUID_A] });
    expect(g.latest()[0]).toEqual({
      uuid: UUID_A,
      utilization: 0.12,
      memoryUsedBytes: 2 ** 20,
      memoryTotalBytes: 2 * 2 ** 20,
      powerUsageWatts: 3.5,
      powerLimitWatts: 4,
    });
  });
});
