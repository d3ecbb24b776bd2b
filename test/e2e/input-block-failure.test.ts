/**
 * A batch whose inputs cannot all be copied into shared memory fails as a whole, every request
 * with the reason, and none is left waiting: the stub never sees the batch, and the server serves
 * the next one.
 *
 * The server runs in a private 24 MiB /dev/shm (a mount namespace of its own, as in
 * shm-recovery.test.ts) on the /dev/shm fallback, so a 32 MiB input cannot get a segment. The
 * batch is three such requests (the batcher batches equal shapes only), formed while a held
 * request occupies the instance (batch_probe; queued requests checked through
 * nv_inference_pending_request_count, no sleeps). The requests of a batch after the one whose
 * copy failed used to be left unanswered.
 * Needs root for `unshare -m` and the tmpfs mount; skipped otherwise.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, type Tritium } from '../helpers/server.js';
import { inferJson, markPath, metricValue, scrape, waitFor, waitForMark } from './infer-helpers.js';

const SMALL_SHM = ['unshare', '-m', 'sh', '-c', 'mount -t tmpfs -o size=24m tmpfs /dev/shm && exec "$0" "$@"'];
const canUnshare = process.getuid?.() === 0 && spawnSync('unshare', ['-m', 'true']).status === 0;
/** Elements of the large request's one row: 32 MiB of FP32, more than the whole /dev/shm. */
const LARGE = 8 * 1024 * 1024;

let server: Tritium;
let repo: string;
const holds: string[] = [];

beforeAll(async () => {
  if (!canUnshare) return;
  repo = makeRepo(['batch_probe']);
  server = await startTritium({
    repos: [repo],
    args: [`--backend-config=python,shm-default-byte-size=${4 * 1024 * 1024}`],
    wrap: SMALL_SHM,
    env: { TRITIUM_MEMFD: '0' },
  });
}, 120_000);

afterAll(async () => {
  // A failed assertion may leave the held request waiting: let it go before the server stops.
  for (const h of holds) fs.writeFileSync(h, '');
  await server?.stop();
  for (const h of holds) fs.rmSync(h, { force: true });
  if (repo) fs.rmSync(repo, { recursive: true, force: true });
});

async function pending(): Promise<number> {
  const m = await scrape(server.metricsPort!);
  return metricValue(m.samples, 'nv_inference_pending_request_count', { model: 'batch_probe', version: '1' }) ?? -1;
}

/** batch_probe on one row of `n` FP32 elements, sent as binary data (a JSON body of 8 M numbers would be slow to build). */
async function inferBinary(n: number): Promise<{ status: number; error?: string }> {
  const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'IN', shape: [1, n], datatype: 'FP32', parameters: { binary_data_size: 4 * n } }] }));
  const res = await fetch(`${server.http}/v2/models/batch_probe/infer`, {
    method: 'POST',
    headers: { 'Inference-Header-Content-Length': String(header.length), 'Content-Type': 'application/octet-stream' },
    body: Buffer.concat([header, Buffer.alloc(4 * n)]),
  });
  const text = await res.text();
  return { status: res.status, error: res.status === 200 ? undefined : (JSON.parse(text) as { error: string }).error };
}

describe.skipIf(!canUnshare)('a batch whose inputs do not fit in shared memory', () => {
  it('fails every request of the batch with the reason, and the next request is served', async () => {
    // Hold the one instance so that the next three requests queue up and form one batch.
    const mark = markPath('mark');
    const release = markPath('hold');
    holds.push(release);
    const held = inferJson(server.http, 'batch_probe', { params: { mark, hold: release } });
    await waitForMark(mark);

    const large = [inferBinary(LARGE)];
    await waitFor('the first request to queue', async () => (await pending()) === 1);
    large.push(inferBinary(LARGE), inferBinary(LARGE));
    await waitFor('all three to queue', async () => (await pending()) === 3);
    fs.writeFileSync(release, '');

    expect((await held).status).toBe(200);
    for (const r of await Promise.all(large)) {
      expect(r.status).toBe(500);
      expect(r.error).toContain('/dev/shm is full');
    }

    // Nothing of the failed batch stays allocated or queued: the next requests are served.
    expect(await pending()).toBe(0);
    const after = await inferJson(server.http, 'batch_probe', { value: 3 });
    expect(after.status).toBe(200);
    expect(after.out.OUT).toEqual([3]);
    expect(after.out.BATCH_LEN).toEqual([1]);
  }, 60_000);
});
