/**
 * GPU detection (core/gpus.ts) against a directory laid out as the NVIDIA driver's
 * /proc/driver/nvidia/gpus (one folder per GPU, an `information` file in each), narrowed by
 * CUDA_VISIBLE_DEVICES the way CUDA reads it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { detectGpus } from '../../src/core/gpus.js';

const UUIDS = ['GPU-e28f252b-179f-c1e1-3ae6-6a9dcba1949f', 'GPU-8104d303-c25c-fe4e-1c6b-5fa37358e9f4'];
const proc = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-nvidia-proc-'));
// Written in reverse bus order: detection sorts them, as CUDA numbers them by bus.
for (const [i, bus] of ['0000:00:07.0', '0000:00:06.0'].entries()) {
  fs.mkdirSync(path.join(proc, bus));
  fs.writeFileSync(
    path.join(proc, bus, 'information'),
    `Model: \t\t NVIDIA H200\nIRQ:   \t\t 40\nGPU UUID: \t ${UUIDS[1 - i]}\nVideo BIOS: \t ??.??.??.??.??\nBus Location: \t ${bus}\n`,
  );
}
afterAll(() => fs.rmSync(proc, { recursive: true, force: true }));

const detect = (env: NodeJS.ProcessEnv) => detectGpus(env, proc);
const hasNvidiaSmi = spawnSync('nvidia-smi', ['-L']).status === 0;

describe('detectGpus', () => {
  it('lists every GPU the driver has, and none without the driver', () => {
    expect(detect({})).toEqual([0, 1]);
    expect(detectGpus({}, path.join(proc, 'no-such-dir'))).toEqual([]);
  });

  it('narrows to CUDA_VISIBLE_DEVICES, renumbered from 0', () => {
    expect(detect({ CUDA_VISIBLE_DEVICES: '1' })).toEqual([0]);
    expect(detect({ CUDA_VISIBLE_DEVICES: '1,0' })).toEqual([0, 1]);
    expect(detect({ CUDA_VISIBLE_DEVICES: '' })).toEqual([]);
  });

  it('takes GPU UUIDs and unique UUID prefixes, as CUDA does', () => {
    expect(detect({ CUDA_VISIBLE_DEVICES: UUIDS[1] })).toEqual([0]);
    expect(detect({ CUDA_VISIBLE_DEVICES: `${UUIDS[0]},1` })).toEqual([0, 1]);
    expect(detect({ CUDA_VISIBLE_DEVICES: 'GPU-8104' })).toEqual([0]);
    // "GPU-" alone matches both: not unique, so it names no device.
    expect(detect({ CUDA_VISIBLE_DEVICES: 'GPU-' })).toEqual([]);
  });

  it('stops at the first entry that names no device, as CUDA does', () => {
    expect(detect({ CUDA_VISIBLE_DEVICES: '0,7,1' })).toEqual([0]);
    expect(detect({ CUDA_VISIBLE_DEVICES: '-1' })).toEqual([]);
    expect(detect({ CUDA_VISIBLE_DEVICES: '1,GPU-ffff,0' })).toEqual([0]);
  });

  it('shows no device when one is named twice, as CUDA does', () => {
    expect(detect({ CUDA_VISIBLE_DEVICES: '0,0' })).toEqual([]);
    expect(detect({ CUDA_VISIBLE_DEVICES: `0,${UUIDS[0]}` })).toEqual([]);
  });

  it.skipIf(hasNvidiaSmi)('counts a MIG instance as one device where nvidia-smi cannot list them', () => {
    // No nvidia-smi here: the entry cannot be checked, so it is taken as a valid one.
    expect(detect({ CUDA_VISIBLE_DEVICES: 'MIG-5c89e2d1-3f0a-5b7e-9d44-1b2c3d4e5f60' })).toEqual([0]);
  });

  it('TRITIUM_GPUS overrides detection', () => {
    expect(detect({ TRITIUM_GPUS: '0,1,2', CUDA_VISIBLE_DEVICES: '0' })).toEqual([0, 1, 2]);
    expect(detect({ TRITIUM_GPUS: '' })).toEqual([]);
  });
});
