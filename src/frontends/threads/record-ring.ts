/**
 * @module frontends/threads/record-ring
 * One direction between a frontend thread and the main thread: a byte ring in a
 * SharedArrayBuffer with one writer and one reader, each an event loop. The writer copies a
 * turn's records (outbox.ts) in as one chunk; the reader copies each chunk out and hands it on
 * (inbox.ts).
 *
 * Why not a MessagePort, as before: every post paid a serialisation and a transfer, and woke
 * the other loop even while it was busy (the post and its wake were about 13 % of the main
 * thread's samples with 2 HTTP threads). Here the writer wakes the reader only when the reader
 * said it is about to sleep: a reader that finds a chunk looks again on its next loop turn
 * before it asks to be woken, so under load chunks cross with no wake-up at all.
 *
 * Header (Int32 words; positions are byte counts that wrap at 2^32, the ring's size a power of
 * two so `position & mask` is the index):
 *
 *   head      bytes the reader has consumed            (reader stores)
 *   tail      bytes the writer has published           (writer stores, after the bytes)
 *   doorbell  bumped with each publish; the reader waits on it (Atomics.waitAsync)
 *   sleeping  1: the reader waits, wake it              (reader sets, writer takes with exchange)
 *   waiting   1: the writer has a chunk that did not fit (writer sets, reader takes with exchange)
 *   space     bumped when the reader freed room for a waiting writer; the writer waits on it
 *
 * A chunk is a u32 length, its bytes, padding to 8; a length of WRAP says the rest of the ring
 * up to its end is unused and the chunk starts at the beginning. The sleeping/waiting words
 * follow one rule on both sides: set the word, look once more, then wait; the other side
 * publishes first, then takes the word. JavaScript's atomics are sequentially consistent, so
 * either the look sees the publish or the publisher sees the word.
 */

import { waitAsync } from '../wait-async.js';

const HEAD = 0;
const TAIL = 1;
const DOORBELL = 2;
const SLEEPING = 3;
const WAITING = 4;
const SPACE = 5;
const HEADER_BYTES = 64;
const WRAP = 0xffffffff;

/** Each direction's ring: room for many turns of small requests or responses. */
export const RING_BYTES = 1 << 20;

/** The shared memory of one ring of `bytes` (a power of two) data bytes. */
export function createRing(bytes = RING_BYTES): SharedArrayBuffer {
  if (!(bytes >= 64 && (bytes & (bytes - 1)) === 0 && bytes <= 1 << 30)) throw new RangeError(`ring size ${bytes}: a power of two from 64 to 2^30`);
  return new SharedArrayBuffer(HEADER_BYTES + bytes);
}

const pad8 = (n: number): number => (n + 7) & ~7;

class RingMemory {
  protected readonly words: Int32Array;
  protected readonly data: Uint8Array;
  protected readonly view: DataView;
  protected readonly size: number;
  protected readonly mask: number;

  constructor(sab: SharedArrayBuffer) {
    this.size = sab.byteLength - HEADER_BYTES;
    if (!(this.size >= 64 && (this.size & (this.size - 1)) === 0)) throw new RangeError('not a record ring (createRing)');
    this.words = new Int32Array(sab, 0, HEADER_BYTES / 4);
    this.data = new Uint8Array(sab, HEADER_BYTES, this.size);
    this.view = new DataView(sab, HEADER_BYTES, this.size);
    this.mask = this.size - 1;
  }
}

/** The writer's end. */
export class RingWriter extends RingMemory {
  /** Chunks that did not fit yet, copies, in order; they go before anything written later. */
  private readonly pending: Uint8Array[] = [];
  private waitingAsync = false;
  private closed = false;

  /** The largest chunk: it always fits once the reader has caught up, wherever the tail is. */
  get maxChunk(): number {
    return this.size / 2 - 16;
  }

  /**
   * Publishes `bytes` as one chunk, now or, when the ring is full, once the reader has made room
   * (copied meanwhile; later chunks queue behind it). Throws when it is larger than maxChunk.
   */
  write(bytes: Uint8Array): void {
    if (this.closed) return;
    if (bytes.length > this.maxChunk) throw new RangeError(`record chunk of ${bytes.length} bytes exceeds the ring's ${this.maxChunk}`);
    if (this.pending.length === 0 && this.tryWrite(bytes)) return;
    // A copy (a Buffer's slice() would be a view of the caller's buffer, which it reuses).
    this.pending.push(new Uint8Array(bytes));
    this.waitForSpace();
  }

  /** Chunks not yet in the ring. */
  get backlog(): number {
    return this.pending.length;
  }

  /**
   * Blocks the calling thread until every pending chunk is in the ring (a frontend thread only,
   * before it waits for the main thread or says it has posted everything; the main thread
   * never blocks). False when the reader made no room within `timeoutMs`.
   */
  flushBlocking(timeoutMs: number): boolean {
    const until = Date.now() + timeoutMs;
    while (this.pending.length > 0 && !this.closed) {
      if (this.tryWrite(this.pending[0]!)) {
        this.pending.shift();
        continue;
      }
      const seen = Atomics.load(this.words, SPACE);
      Atomics.store(this.words, WAITING, 1);
      if (this.fits(this.pending[0]!.length)) continue;
      const left = until - Date.now();
      if (left <= 0 || Atomics.wait(this.words, SPACE, seen, left) === 'timed-out') return false;
    }
    return true;
  }

  /** The reader is gone: drop what waits, and end the wait for room. */
  close(): void {
    this.closed = true;
    this.pending.length = 0;
    Atomics.add(this.words, SPACE, 1);
    Atomics.notify(this.words, SPACE);
  }

  /** Bytes a chunk of `n` takes at the tail now, a wrap's skip included; -1 if it does not fit. */
  private needed(n: number, tail: number, head: number): number {
    const at = tail & this.mask;
    const toEnd = this.size - at;
    const need = 8 + pad8(n) <= toEnd ? 8 + pad8(n) : toEnd + 8 + pad8(n);
    return need <= this.size - ((tail - head) | 0) ? need : -1;
  }

  private fits(n: number): boolean {
    return this.needed(n, Atomics.load(this.words, TAIL), Atomics.load(this.words, HEAD)) >= 0;
  }

  private tryWrite(bytes: Uint8Array): boolean {
    const words = this.words;
    let tail = Atomics.load(words, TAIL);
    const need = this.needed(bytes.length, tail, Atomics.load(words, HEAD));
    if (need < 0) return false;
    let at = tail & this.mask;
    if (8 + pad8(bytes.length) > this.size - at) {
      this.view.setUint32(at, WRAP, true);
      tail = (tail + (this.size - at)) | 0;
      at = 0;
    }
    this.view.setUint32(at, bytes.length, true);
    this.data.set(bytes, at + 8);
    Atomics.store(words, TAIL, (tail + 8 + pad8(bytes.length)) | 0);
    Atomics.add(words, DOORBELL, 1);
    if (Atomics.load(words, SLEEPING) === 1 && Atomics.exchange(words, SLEEPING, 0) === 1) Atomics.notify(words, DOORBELL);
    return true;
  }

  /** Writes what is pending while it fits; asks the reader for room and waits (asynchronously) for the rest. */
  private readonly retry = (): void => {
    this.waitingAsync = false;
    while (this.pending.length > 0 && !this.closed) {
      if (this.tryWrite(this.pending[0]!)) this.pending.shift();
      else return this.waitForSpace();
    }
  };

  private waitForSpace(): void {
    if (this.waitingAsync || this.closed) return;
    const seen = Atomics.load(this.words, SPACE);
    Atomics.store(this.words, WAITING, 1);
    if (this.fits(this.pending[0]!.length)) {
      queueMicrotask(this.retry);
      this.waitingAsync = true;
      return;
    }
    const r = waitAsync(this.words, SPACE, seen);
    this.waitingAsync = true;
    if (r.async) void r.value.then(this.retry);
    else queueMicrotask(this.retry);
  }
}

/** The reader's end: `take` copies the next chunk out, `wait` arms the wake-up. */
export class RingReader extends RingMemory {
  /**
   * The next chunk, copied into an ArrayBuffer of its own (the tensors read from it outlive
   * the ring's bytes), or undefined when the ring is empty. Tells a writer waiting for room.
   */
  take(): Uint8Array | undefined {
    const words = this.words;
    let head = Atomics.load(words, HEAD);
    const tail = Atomics.load(words, TAIL);
    if (head === tail) return undefined;
    let at = head & this.mask;
    let n = this.view.getUint32(at, true);
    if (n === WRAP) {
      head = (head + (this.size - at)) | 0;
      at = 0;
      n = this.view.getUint32(0, true);
    }
    if (n > this.size / 2 || ((tail - head) | 0) < 8 + pad8(n)) throw new Error(`record ring corrupt: chunk of ${n} bytes at ${head}, tail ${tail}`);
    // allocUnsafeSlow: an ArrayBuffer of its own, not a slice of the pool, not zeroed.
    const chunk = Buffer.allocUnsafeSlow(n);
    chunk.set(this.data.subarray(at + 8, at + 8 + n));
    Atomics.store(words, HEAD, (head + 8 + pad8(n)) | 0);
    if (Atomics.load(words, WAITING) === 1 && Atomics.exchange(words, WAITING, 0) === 1) {
      Atomics.add(words, SPACE, 1);
      Atomics.notify(words, SPACE);
    }
    return chunk;
  }

  /** Whether a chunk is published and not taken. */
  hasData(): boolean {
    return Atomics.load(this.words, HEAD) !== Atomics.load(this.words, TAIL);
  }

  /**
   * Asks the writer for a wake-up and calls `woken` once one came (or at once, from a microtask,
   * when a chunk is already there). Exactly one call per `wait`. The wait does not keep the
   * event loop alive (the servers on it do).
   */
  wait(woken: () => void): void {
    const words = this.words;
    const seen = Atomics.load(words, DOORBELL);
    Atomics.store(words, SLEEPING, 1);
    if (this.hasData()) {
      Atomics.store(words, SLEEPING, 0);
      queueMicrotask(woken);
      return;
    }
    const r = waitAsync(words, DOORBELL, seen);
    if (r.async) void r.value.then(woken);
    else queueMicrotask(woken);
  }

  /** Ends a wait from this side (the writer is gone): bumps the doorbell and wakes it. */
  interrupt(): void {
    Atomics.add(this.words, DOORBELL, 1);
    Atomics.notify(this.words, DOORBELL);
  }
}
