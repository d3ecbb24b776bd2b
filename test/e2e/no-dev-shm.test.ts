/**
 * No /dev/shm needed: the server runs with a read-only 1 MiB /dev/shm (a private mount
 * namespace, so the host's is not touched; the small or unwritable /dev/shm of Fargate,
 * SageMaker and `docker run` without `--shm-size`), and a 100 MiB tensor still goes through a
 * Python model and back, because the regions' segments are memfds handed between Node and the
 * stub as descriptors (docs/ipc.md, "Segments"). Both directions grow segments beyond n0 (Node's
 * n<k> for the input, the stub's s<k> for the output). The verbose log says which backing is used.
 *
 * Needs `unshare -m` and a tmpfs mount (root, or unprivileged user namespaces); skipped otherwise.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memfdsOf } from '../helpers/memfd.js';
import { makeRepo, startTritium, type Tritium } from '../helpers/server.js';

const MiB = 1 << 20;
/** A read-only 1 MiB tmpfs on /dev/shm in a new mount namespace, then node and its arguments. */
const TINY_RO_SHM = ['unshare', '-m', 'sh', '-c', 'mount -t tmpfs -o size=1m,ro tmpfs /dev/shm && exec "$0" "$@"'];
const canUnshare = spawnSync('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs -o size=1m,ro tmpfs /dev/shm'], { stdio: 'ignore' }).status === 0;

let server: Tritium | undefined;

beforeAll(async () => {
  if (!canUnshare) return;
  server = await startTritium({
    repos: [makeRepo(['identity_all'])],
    args: ['--log-verbose=1', `--http-max-input-size=${256 * MiB}`],
    wrap: TINY_RO_SHM,
  });
}, 120_000);

afterAll(async () => {
  // The tmpfs goes with the namespace; memfds go with the processes.
  await server?.stop();
});

async function echo(t: Tritium, bytes: number, fill: number): Promise<{ status: number; text: string; ok: boolean }> {
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'IN_UINT8', datatype: 'UINT8', shape: [bytes], parameters: { binary_data_size: bytes } }],
      outputs: [{ name: 'OUT_UINT8', parameters: { binary_data: true } }],
    }),
  );
  const res = await fetch(`${t.http}/v2/models/identity_all/infer`, {
    method: 'POST',
    headers: { 'Inference-Header-Content-Length': String(header.length), 'Content-Type': 'application/octet-stream' },
    body: Buffer.concat([header, Buffer.alloc(bytes, fill)]),
  });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) return { status: res.status, text: body.toString().slice(0, 2000), ok: false };
  const data = body.subarray(Number(res.headers.get('inference-header-content-length')));
  return { status: 200, text: '', ok: data.length === bytes && data.every((b) => b === fill) };
}

if (!canUnshare) {
  it.skip('serves a 100 MiB tensor with a read-only 1 MiB /dev/shm: skipped, `unshare -m` with a tmpfs mount is not permitted here (needs root or unprivileged user namespaces)', () => {});
}

describe.skipIf(!canUnshare)('a read-only 1 MiB /dev/shm', () => {
  it('serves a 100 MiB tensor through a Python model, with memfd segments and nothing in /dev/shm', async () => {
    const t = server!;
    const privateShm = `/proc/${t.proc.pid}/root/dev/shm`;
    const st = fs.statfsSync(privateShm);
    expect(st.blocks * st.bsize).toBeLessThanOrEqual(MiB);
    expect(t.log()).toContain('Python backend shared memory: memfd segments (no /dev/shm needed)');
    expect(t.log()).toMatch(/IPC path: .*; segments: memfd/);

    expect(await echo(t, 100 * MiB, 0x5a)).toEqual({ status: 200, text: '', ok: true });
    // Node grew an input segment for it; the instance still serves small tensors afterwards.
    expect([...memfdsOf(t.proc.pid!).keys()].some((l) => l.endsWith('.n1'))).toBe(true);
    expect(await echo(t, 1000, 7)).toEqual({ status: 200, text: '', ok: true });
    expect(fs.readdirSync(privateShm)).toEqual([]);
  }, 120_000);
});
