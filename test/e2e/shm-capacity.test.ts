/**
 * Shared memory gives capacity back: in a 64 MiB /dev/shm (a private mount namespace, so the
 * host's /dev/shm is not touched), requests of 20 MB, 30 MB, eight concurrent ones of 5 MB and
 * 30 MB again all succeed, and after each the space in use falls back to the instance's n0,
 * because the segments a large tensor grew are hollowed once their last block is freed
 * (docs/ipc.md, "Segments"). Before, the 20 MB request's segments (input and output) stayed
 * allocated and the 30 MB request found /dev/shm full. Needs root for `unshare -m` and the tmpfs mount; skipped
 * otherwise.
 *
 * The segments are /dev/shm files here (`TRITIUM_MEMFD=0`, the fallback where memfd_create is
 * refused), so the texts are the fallback's; memfd segments are hollowed the same way
 * (test/ipc.test.ts) and need no /dev/shm (no-dev-shm.test.ts).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, type Tritium } from '../helpers/server.js';

const MB = 1_000_000;
/** Mounts a 64 MiB tmpfs on /dev/shm in a new mount namespace, then runs node and its arguments. */
const SMALL_SHM = ['unshare', '-m', 'sh', '-c', 'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$0" "$@"'];
const canUnshare = process.getuid?.() === 0 && spawnSync('unshare', ['-m', 'true']).status === 0;

let server: Tritium;

beforeAll(async () => {
  if (!canUnshare) return;
  server = await startTritium({ repos: [makeRepo(['identity_all'])], wrap: SMALL_SHM, env: { TRITIUM_MEMFD: '0' } });
}, 120_000);

afterAll(async () => {
  // The tmpfs goes with the namespace; nothing is left in the host's /dev/shm either way.
  await server?.stop();
});

async function echo(bytes: number, fill: number): Promise<{ status: number; text: string; ok: boolean }> {
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'IN_UINT8', datatype: 'UINT8', shape: [bytes], parameters: { binary_data_size: bytes } }],
      outputs: [{ name: 'OUT_UINT8', parameters: { binary_data: true } }],
    }),
  );
  const res = await fetch(`${server.http}/v2/models/identity_all/infer`, {
    method: 'POST',
    headers: { 'Inference-Header-Content-Length': String(header.length), 'Content-Type': 'application/octet-stream' },
    body: Buffer.concat([header, Buffer.alloc(bytes, fill)]),
  });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) return { status: res.status, text: body.toString(), ok: false };
  const headerLength = Number(res.headers.get('inference-header-content-length'));
  const data = body.subarray(headerLength);
  const ok = data.length === bytes && data[0] === fill && data[bytes - 1] === fill;
  return { status: res.status, text: '', ok };
}

/** Bytes in use in the server's own /dev/shm (seen through its mount namespace). */
function shmUsed(): number {
  const st = fs.statfsSync(`/proc/${server.proc.pid}/root/dev/shm`);
  return (st.blocks - st.bfree) * st.bsize;
}

/** Waits (bounded) until the space in use falls under `bytes`: output blocks are released a moment after the response. */
async function expectShmUsedBelow(bytes: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (shmUsed() >= bytes && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(shmUsed()).toBeLessThan(bytes);
}

describe.skipIf(!canUnshare)('shared memory in a 64 MiB /dev/shm', () => {
  it('gives the space of large tensors back after each request', async () => {
    expect(fs.statfsSync(`/proc/${server.proc.pid}/root/dev/shm`).blocks * 4096).toBeLessThanOrEqual(64 * 1024 * 1024);
    expect(await echo(20 * MB, 3)).toEqual({ status: 200, text: '', ok: true });
    await expectShmUsedBelow(4 * MB);
    expect(await echo(30 * MB, 7)).toEqual({ status: 200, text: '', ok: true });
    await expectShmUsedBelow(4 * MB);
    const small = await Promise.all(Array.from({ length: 8 }, (_, i) => echo(5 * MB, i + 1)));
    for (const r of small) expect(r).toEqual({ status: 200, text: '', ok: true });
    await expectShmUsedBelow(4 * MB);
    expect(await echo(30 * MB, 9)).toEqual({ status: 200, text: '', ok: true });
  }, 120_000);

  it('says what holds /dev/shm and what helps when a tensor does not fit, and serves the next one', async () => {
    const r = await echo(70 * MB, 1);
    expect(r.status).toBe(500);
    const error = JSON.parse(r.text).error as string;
    expect(error).toContain('/dev/shm is full: cannot create');
    expect(error).toMatch(/This server holds \d+ bytes: \d+ in the n0 segments of its 1 Python instances/);
    expect(error).toContain('docker run --shm-size');
    expect(await echo(30 * MB, 5)).toEqual({ status: 200, text: '', ok: true });
  }, 120_000);
});
