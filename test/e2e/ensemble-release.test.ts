/**
 * An ensemble gives a step's buffers back as soon as no later step can read them, not at the end
 * of the request. test/models/ensemble_chunk_count: a decoupled step (chunk_stream) streams 40
 * chunks of 1 MiB, each reduced to two numbers by byte_count. The chunks live in the stub's
 * output arena until the ensemble releases them; held until the stream ends, that arena would
 * grow to 40 MiB. Released once byte_count has answered for each, it stays a few MiB, which the
 * suite measures (the pages the chunk_stream instance's segments hold: memfds of the server and
 * the stubs, or /dev/shm files where those are the segments) while the stream runs.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { segmentsOf } from '../helpers/memfd.js';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const CHUNKS = 40;
const MIB = 1 << 20;
let server: Tritium;
let repo: string;

beforeAll(async () => {
  repo = makeRepo(['ensemble_chunk_count', 'chunk_stream', 'byte_count']);
  server = await startTritium({ repos: [repo] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(repo, { recursive: true, force: true });
});

/** Bytes the chunk_stream instance's segments really hold (memfds of the server and its stubs, or /dev/shm files). */
function chunkStreamShm(): number {
  let bytes = 0;
  for (const [label, b] of segmentsOf(server.proc.pid!, 'allocated')) if (label.includes('_chunk_stream_0_0.')) bytes += b;
  return bytes;
}

describe('ensemble step buffers', () => {
  it('are released while a decoupled stream goes on, once the step reading them is done', async () => {
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, chunkStreamShm());
    }, 20);
    const res = await fetch(`${server.http}/v2/models/ensemble_chunk_count/generate_stream`, {
      method: 'POST',
      body: JSON.stringify({ N: CHUNKS, BYTES: MIB, PACE_MS: 15, COUNT_MS: 0 }),
    });
    const text = await res.text();
    clearInterval(sampler);
    expect(res.status).toBe(200);
    const events = text
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => JSON.parse(e.slice('data: '.length)));
    expect(events).toHaveLength(CHUNKS);
    // Each chunk was read whole by byte_count. Its two instances may answer neighbouring chunks
    // out of order (an ensemble does not reorder a decoupled step's responses, nor does Triton's).
    expect(events.map((e) => e.COUNT)).toEqual(Array(CHUNKS).fill(MIB));
    const sums = events.map((e) => e.SUM as number).sort((x, y) => x - y);
    expect(sums).toEqual(Array.from({ length: CHUNKS }, (_, i) => (i % 256) * MIB));
    // n0 (1 MiB) plus a few chunks in flight, far from the 40 MiB of all of them.
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThan(12 * MIB);
  }, 60_000);
});
