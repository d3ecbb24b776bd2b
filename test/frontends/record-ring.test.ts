/**
 * The ring that carries records between a frontend thread and the main thread
 * (src/frontends/threads/record-ring.ts): chunks of every size come out whole and in order as
 * the ring wraps, a full ring holds the writer back (asynchronously on an event loop, blocking
 * in a thread that may block) and lets it go when the reader makes room, and a reader that
 * waits is woken by the writer. The cross-thread cases run the compiled ring (dist/) in a real
 * worker thread against this thread's, over one SharedArrayBuffer.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { createRing, RingReader, RingWriter } from '../../src/frontends/threads/record-ring.js';
import { ensureBuilt, ROOT } from '../helpers/server.js';

/** Chunk i: its length and bytes follow from i, so the reader can check each one. */
function chunk(i: number, max: number): Uint8Array {
  const n = (i * 7919) % (max + 1);
  const b = new Uint8Array(n);
  for (let k = 0; k < n; k++) b[k] = (i + k * 31) & 0xff;
  return b;
}

/** Reads until `count` chunks arrived, waiting (never polling) between them. */
function readAll(reader: RingReader, count: number, max: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let i = 0;
    let wakes = 0;
    const drain = (): void => {
      wakes++;
      for (let c = reader.take(); c !== undefined; c = reader.take()) {
        const want = chunk(i, max);
        if (c.length !== want.length || Buffer.compare(Buffer.from(c), Buffer.from(want)) !== 0) {
          reject(new Error(`chunk ${i}: ${c.length} bytes, not the ${want.length} written`));
          return;
        }
        i++;
      }
      if (i === count) resolve(wakes);
      else reader.wait(drain);
    };
    reader.wait(drain);
  });
}

describe('record ring, one thread', () => {
  it('rejects a size that is not a power of two, and memory that is not a ring', () => {
    expect(() => createRing(1000)).toThrow(/power of two/);
    expect(() => new RingReader(new SharedArrayBuffer(100))).toThrow(/not a record ring/);
  });

  it('returns every chunk whole and in order while the ring wraps many times, empty chunks and the largest included', async () => {
    const ring = createRing(4096);
    const writer = new RingWriter(ring);
    const reader = new RingReader(ring);
    expect(writer.maxChunk).toBe(2048 - 16);
    const count = 2000;
    const read = readAll(reader, count, writer.maxChunk);
    for (let i = 0; i < count; i++) {
      writer.write(chunk(i, writer.maxChunk));
      // Let the reader run now and then, so the writer meets both a full and an empty ring.
      if (i % 5 === 0) await new Promise((r) => setImmediate(r));
    }
    await read;
    expect(writer.backlog).toBe(0);
    expect(reader.hasData()).toBe(false);
  });

  it('keeps reading and writing as the positions pass 2^31 and wrap to negative numbers', async () => {
    const ring = createRing(1024);
    // head and tail (the first two words) a few chunks short of the signed 32-bit limit
    const words = new Int32Array(ring, 0, 2);
    words[0] = words[1] = 2 ** 31 - 2048;
    const writer = new RingWriter(ring);
    const reader = new RingReader(ring);
    const read = readAll(reader, 300, writer.maxChunk);
    for (let i = 0; i < 300; i++) {
      writer.write(chunk(i, writer.maxChunk));
      if (i % 3 === 0) await new Promise((r) => setImmediate(r));
    }
    await read;
    expect(words[1]).toBeLessThan(0); // the tail went past 2^31 - 1
    expect(writer.backlog).toBe(0);
  });

  it('holds chunks that do not fit, in order, and writes them once the reader made room', async () => {
    const ring = createRing(1024);
    const writer = new RingWriter(ring);
    const reader = new RingReader(ring);
    const max = writer.maxChunk;
    for (let i = 0; i < 10; i++) writer.write(chunk(i, max));
    expect(writer.backlog).toBeGreaterThan(0);
    const read = readAll(reader, 10, max);
    await read;
    expect(writer.backlog).toBe(0);
  });

  it('refuses a chunk larger than half the ring', () => {
    const writer = new RingWriter(createRing(1024));
    expect(() => writer.write(new Uint8Array(writer.maxChunk + 1))).toThrow(/exceeds the ring/);
  });

  it('ends a reader wait from its own side (interrupt)', async () => {
    const reader = new RingReader(createRing(1024));
    const woken = new Promise<void>((r) => reader.wait(r));
    reader.interrupt();
    await woken;
    expect(reader.take()).toBeUndefined();
  });
});

describe('record ring, across threads', () => {
  /** A worker running the compiled ring: `role` 'write' writes `count` chunks (blocking when full), 'read' reads them and reports. */
  function worker(ring: SharedArrayBuffer, role: 'write' | 'read', count: number, max: number): Worker {
    ensureBuilt();
    const url = path.join(ROOT, 'dist', 'frontends', 'threads', 'record-ring.js');
    const code = `
      const { workerData, parentPort } = require('node:worker_threads');
      const { ring, role, count, max, url } = workerData;
      ${chunk.toString()}
      import(url).then(({ RingReader, RingWriter }) => {
        if (role === 'write') {
          const w = new RingWriter(ring);
          for (let i = 0; i < count; i++) {
            w.write(chunk(i, max));
            if (!w.flushBlocking(30000)) throw new Error('no room within 30 s');
          }
          parentPort.postMessage({ written: count });
        } else {
          const r = new RingReader(ring);
          // A wait for the ring does not keep a loop alive (a frontend thread's server does).
          const alive = setInterval(() => {}, 1000);
          let i = 0;
          const drain = () => {
            for (let c = r.take(); c !== undefined; c = r.take()) {
              const want = chunk(i, max);
              if (c.length !== want.length || !Buffer.from(c).equals(Buffer.from(want))) throw new Error('chunk ' + i + ' differs');
              i++;
              // A slow reader: the writer meets a full ring.
              if (i % 64 === 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
            }
            if (i === count) {
              clearInterval(alive);
              parentPort.postMessage({ read: i });
            }
            else r.wait(drain);
          };
          r.wait(drain);
        }
      });
    `;
    return new Worker(code, { eval: true, workerData: { ring, role, count, max, url: `file://${url}` } });
  }

  function outcome(w: Worker): Promise<unknown> {
    return new Promise((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
  }

  it('carries chunks from a thread that blocks while the ring is full to a loop that waits for them', async () => {
    const ring = createRing(8192);
    const max = new RingWriter(ring).maxChunk;
    const count = 3000;
    const reader = new RingReader(ring);
    const read = readAll(reader, count, max);
    const w = worker(ring, 'write', count, max);
    try {
      expect(await outcome(w)).toEqual({ written: count });
      const wakes = await read;
      expect(wakes).toBeGreaterThan(0);
    } finally {
      await w.terminate();
    }
  });

  it('carries chunks from a loop that queues while the ring is full to a slow thread', async () => {
    const ring = createRing(8192);
    const writer = new RingWriter(ring);
    const max = writer.maxChunk;
    const count = 3000;
    const w = worker(ring, 'read', count, max);
    try {
      const done = outcome(w);
      for (let i = 0; i < count; i++) {
        writer.write(chunk(i, max));
        if (i % 50 === 0) await new Promise((r) => setImmediate(r));
      }
      expect(await done).toEqual({ read: count });
      expect(writer.backlog).toBe(0);
    } finally {
      await w.terminate();
    }
  });
});
