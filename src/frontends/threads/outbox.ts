/**
 * @module frontends/threads/outbox
 * What one thread sends the other: requests and responses written as records (wire-records.ts)
 * into the turn's buffer, which crosses as one chunk of the link's ring (record-ring.ts) once
 * the turn's I/O callbacks have run; the rest (errors, large tensors, calls, traces) as objects,
 * each leaving an `object` record where it was posted, so the other side takes it in order.
 * The objects of one chunk cross in one message on the link's port, posted before the chunk;
 * the chunk begins with their count (CHUNK_HEAD_BYTES), so the reader takes them with the chunk
 * and a record that fails to be handled cannot leave them for the next chunk's records.
 */
import type { RingWriter } from './record-ring.js';
import { RecordWriter, writeCancelRecord, writeObjectRecord, writeReleaseRecord } from './wire-records.js';

/** A chunk's first bytes: the number of objects its records name (u32, little-endian). */
export const CHUNK_HEAD_BYTES = 4;

/** The part of a MessagePort an Outbox posts objects on. */
export interface PostTarget {
  postMessage(m: unknown, transfer?: readonly ArrayBuffer[]): void;
}

/**
 * The messages of one event-loop turn, sent as one chunk: under load the requests (or
 * responses) that one turn produced cross together, and the other side is woken at most once
 * for them (only if it sleeps).
 */
export class Outbox<M> {
  private scheduled = false;
  private readonly records = new RecordWriter();
  /** The objects of the records not yet sent, and the buffers they move. */
  private objects: unknown[] = [];
  private transfer: ArrayBuffer[] = [];
  /**
   * A turn's records past this many bytes go at once, and a record larger than this goes as an
   * object: no chunk then outgrows the ring (RingWriter.maxChunk).
   */
  private readonly flushBytes: number;

  constructor(
    private readonly ring: RingWriter,
    private readonly port: PostTarget,
  ) {
    this.flushBytes = Math.floor(ring.maxChunk / 2);
  }

  /** Sends `m` as an object (with `transfer` moved, not copied), in order with the records. */
  post(m: M, transfer?: ArrayBuffer): void {
    this.objects.push(m);
    if (transfer !== undefined) this.transfer.push(transfer);
    writeObjectRecord(this.begin());
    this.wrote();
  }

  /**
   * Writes a record with `write` (wire-records.ts) and queues it; false when `write` declined
   * or the record would not fit a chunk, and the caller posts the message as an object.
   */
  record<A, B, C>(write: (w: RecordWriter, a: A, b: B, c: C) => boolean, a: A, b: B, c: C): boolean {
    const w = this.begin();
    const start = w.pos;
    if (!write(w, a, b, c)) return false;
    if (w.pos - start > this.flushBytes) {
      // Large parameters: a record this size would not leave room for a turn's others.
      w.pos = start;
      return false;
    }
    this.wrote();
    return true;
  }

  cancel(no: number): void {
    writeCancelRecord(this.begin(), no);
    this.wrote();
  }

  release(hold: number): void {
    writeReleaseRecord(this.begin(), hold);
    this.wrote();
  }

  /** The turn's writer, its chunk head reserved first. */
  private begin(): RecordWriter {
    const w = this.records;
    if (w.pos === 0) w.u32(0);
    return w;
  }

  /** After each record: every kind counts towards the chunk's size, which must fit the ring. */
  private wrote(): void {
    this.schedule();
    if (this.records.length >= this.flushBytes) this.flush();
  }

  private schedule(): void {
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  /** Sends what this turn wrote now (it reaches the ring at once unless the ring is full). */
  readonly flush = (): void => {
    this.scheduled = false;
    const w = this.records;
    if (w.length <= CHUNK_HEAD_BYTES) {
      w.clear(); // nothing, or only the head of a turn whose one record was declined
      return;
    }
    const objects = this.objects;
    const transfer = this.transfer;
    if (objects.length > 0) {
      this.objects = [];
      this.transfer = [];
    }
    // Cleared whatever happens: a failure here must not make every later turn fail with it.
    try {
      w.setU32(0, objects.length);
      // Queued on the other end before the chunk that names them is published.
      if (objects.length > 0) this.port.postMessage(objects, transfer);
      this.ring.write(w.written());
    } finally {
      w.clear();
    }
  };

  /**
   * Sends what this turn wrote and blocks until all of it is in the ring (a frontend thread,
   * before it waits for the main thread). False when the reader made no room in `timeoutMs`.
   */
  flushBlocking(timeoutMs: number): boolean {
    this.flush();
    return this.ring.flushBlocking(timeoutMs);
  }

  /** The other side is gone: nothing more is sent. */
  close(): void {
    this.ring.close();
  }
}
