/**
 * @module backends/python/ipc/ring
 * Single-producer/single-consumer byte ring in shared memory (docs/ipc.md, "Rings").
 * Positions are u64 byte counters that only grow; the slot is `position % capacity`.
 * Here they are kept as JS numbers (exact up to 2^53 bytes, i.e. centuries of traffic) and
 * published with Atomics on a BigUint64Array so the other process never reads a torn value.
 * Atomics are sequentially consistent, so they also order the plain record reads and writes
 * around them on any CPU: record bytes are written before `Atomics.store(tail)` and read after
 * `Atomics.load(tail)`; `head` likewise (docs/ipc.md, "Memory ordering"). Every access to
 * head/tail must stay an Atomics call for that reason.
 */
import { FRAG_MORE, RECORD_ALIGN, WRAP_MARKER, type RingOffsets } from './shm-layout.js';

const recordSize = (payload: number): number => Math.ceil((4 + payload) / RECORD_ALIGN) * RECORD_ALIGN;

class RingBase {
  protected readonly u8: Uint8Array;
  protected readonly dv: DataView;
  protected readonly i32: Int32Array;
  protected readonly u64: BigUint64Array;

  constructor(
    readonly sab: SharedArrayBuffer,
    protected readonly dataOff: number,
    readonly capacity: number,
    protected readonly offs: RingOffsets,
  ) {
    if (capacity < 64 || (capacity & (capacity - 1)) !== 0) throw new Error(`ring capacity ${capacity} is not a power of two`);
    this.u8 = new Uint8Array(sab, dataOff, capacity);
    this.dv = new DataView(sab, dataOff, capacity);
    this.i32 = new Int32Array(sab);
    this.u64 = new BigUint64Array(sab, 0, Math.floor(sab.byteLength / 8));
  }

  protected loadPos(off: number): number {
    return Number(Atomics.load(this.u64, off / 8));
  }

  protected storePos(off: number, v: number): void {
    Atomics.store(this.u64, off / 8, BigInt(v));
  }
}

/** Producer end. `tryWrite` stages records; `publish` makes them visible and rings the doorbell. */
export class RingProducer extends RingBase {
  private tail: number;
  private published: number;

  constructor(sab: SharedArrayBuffer, dataOff: number, capacity: number, offs: RingOffsets) {
    super(sab, dataOff, capacity, offs);
    this.tail = this.loadPos(offs.tail);
    this.published = this.tail;
  }

  /**
   * Largest payload of one record. Half the ring guarantees that a record fits once the ring
   * is empty, wherever the wrap point falls; bigger messages are sent as fragments.
   */
  get maxRecordPayload(): number {
    return this.capacity / 2 - RECORD_ALIGN;
  }

  /** Writes one record if there is room; false (and nothing written) otherwise. */
  tryWrite(payload: Uint8Array, more: boolean): boolean {
    const len = payload.byteLength;
    if (len > this.maxRecordPayload) throw new RangeError(`ring record of ${len} bytes exceeds ${this.maxRecordPayload}`);
    const need = recordSize(len);
    const free = this.capacity - (this.tail - this.loadPos(this.offs.head));
    let pos = this.tail % this.capacity;
    const toEnd = this.capacity - pos;
    if (need > toEnd) {
      if (toEnd + need > free) return false;
      // toEnd is a multiple of 8, so the 4-byte marker always fits.
      this.dv.setUint32(pos, WRAP_MARKER, true);
      this.tail += toEnd;
      pos = 0;
    } else if (need > free) {
      return false;
    }
    this.dv.setUint32(pos, (more ? FRAG_MORE : 0) | len, true);
    this.u8.set(payload, pos + 4);
    this.tail += need;
    return true;
  }

  /** True when the consumer has drained everything published. */
  isEmpty(): boolean {
    return this.loadPos(this.offs.head) === this.published;
  }

  /**
   * Stores tail, bumps the doorbell, and wakes the consumer only if it said it is asleep.
   * Atomics.add is a full barrier (lock xadd), so reading `sleeping` after it cannot be
   * reordered before the doorbell store; the consumer sets `sleeping` before FUTEX_WAIT, whose
   * kernel side re-checks the doorbell after a barrier: one of the two always sees the other.
   */
  publish(wake: (doorbellByteOffset: number) => void): void {
    if (this.tail === this.published) return;
    this.storePos(this.offs.tail, this.tail);
    this.published = this.tail;
    Atomics.add(this.i32, this.offs.doorbell / 4, 1);
    if (Atomics.load(this.i32, this.offs.sleeping / 4) !== 0) wake(this.offs.doorbell);
  }
}

/** Consumer end: decodes complete messages (fragments reassembled) in order. */
export class RingConsumer extends RingBase {
  private head: number;
  private fragments: Uint8Array[] = [];
  /**
   * Where each single-record message is copied to be decoded: one process-local buffer reused
   * for every record (grown to the largest seen), instead of a fresh copy per message.
   */
  private scratch = Buffer.allocUnsafe(1024);
  /** The ring's bytes as a Buffer, for a copy into `scratch` that allocates nothing. */
  private readonly data: Buffer;

  constructor(sab: SharedArrayBuffer, dataOff: number, capacity: number, offs: RingOffsets) {
    super(sab, dataOff, capacity, offs);
    this.head = this.loadPos(offs.head);
    this.data = Buffer.from(sab, dataOff, capacity);
  }

  /** Something was published that has not been drained yet. */
  hasData(): boolean {
    return this.loadPos(this.offs.tail) !== this.head;
  }

  /**
   * Decodes every available message with `decode` and returns the results in order. `decode`
   * gets a private copy of the message in `bytes[0, end)`; that copy is reused for the next
   * message, so what `decode` returns must not alias it.
   */
  drain<T>(decode: (bytes: Uint8Array, end: number) => T): T[] {
    const out: T[] = [];
    let tail = this.loadPos(this.offs.tail);
    while (this.head < tail) {
      // Checked as ring_core.h's Consumer checks ring A: a bad word must not move head past
      // tail (the stub's producer would then see a full ring forever) or read past the ring.
      if (tail - this.head > this.capacity) throw new Error('ring is corrupt: tail is more than one capacity ahead of head');
      const pos = this.head % this.capacity;
      const toEnd = this.capacity - pos;
      const word = this.dv.getUint32(pos, true);
      if (word === WRAP_MARKER) {
        if (toEnd > tail - this.head) throw new Error('ring is corrupt: wrap marker beyond the published tail');
        this.head += toEnd;
        continue;
      }
      const more = (word & FRAG_MORE) !== 0;
      const len = (word & ~FRAG_MORE) >>> 0;
      if (4 + len > toEnd || recordSize(len) > tail - this.head || len > this.capacity / 2) {
        throw new Error(`ring is corrupt: record length ${len} runs past the ring or the published tail`);
      }
      if (more || this.fragments.length > 0) {
        this.fragments.push(this.u8.slice(pos + 4, pos + 4 + len));
        if (!more) {
          const whole = Buffer.concat(this.fragments);
          this.fragments = [];
          out.push(decode(whole, whole.byteLength));
        }
      } else {
        // Decode from a private copy: msgpackr's string path uses TextDecoder, which rejects
        // views of a SharedArrayBuffer, and the slot is reused as soon as head moves.
        if (len > this.scratch.byteLength) this.scratch = Buffer.allocUnsafe(Math.max(len, 2 * this.scratch.byteLength));
        this.data.copy(this.scratch, 0, pos + 4, pos + 4 + len);
        out.push(decode(this.scratch, len));
      }
      this.head += recordSize(len);
      // Hand the space back at once so a blocked producer can go on while we dispatch.
      this.storePos(this.offs.head, this.head);
      if (this.head >= tail) tail = this.loadPos(this.offs.tail);
    }
    return out;
  }
}
