/**
 * @module frontends/threads/inbox
 * The receiving end of a link between a frontend thread and the main thread: takes the chunks
 * of the ring (record-ring.ts) as they come and reads their records; a chunk's objects came in
 * one message on the link's port, taken with the chunk when its head counts any (outbox.ts).
 *
 * After a wake-up it does not ask for the next one at once: it looks again on the loop's next
 * turn (setImmediate) and asks only once a turn found nothing. Under load the other side's
 * chunks are then picked up between this loop's own turns, and publishing them wakes nobody.
 */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { RingReader } from './record-ring.js';
import { CHUNK_HEAD_BYTES } from './outbox.js';
import { readRecords, type RecordHandler } from './wire-records.js';

/** What a side does with the objects and the records' messages. */
export interface InboxHandler<M> extends Omit<RecordHandler, 'object'> {
  object(m: M): void;
}

/** Chunks one drain reads at most; under load each is a whole turn of the other side. */
const MAX_CHUNKS_PER_DRAIN = 64;

export class Inbox<M> {
  private closed = false;
  private draining = false;
  private readonly records: RecordHandler;
  /** The objects of the chunk being read, and the next one's index. */
  private chunkObjects: M[] = [];
  private nextObject = 0;

  constructor(
    private readonly ring: RingReader,
    private readonly objects: MessagePort,
    handler: InboxHandler<M>,
  ) {
    this.records = { ...handler, object: () => handler.object(this.takeObject()) };
  }

  /** Starts waiting for chunks. */
  start(): void {
    this.ring.wait(this.woken);
  }

  /**
   * Reads the chunks published so far, at most MAX_CHUNKS_PER_DRAIN (a writer that keeps up
   * with this reader must not hold its loop: the rest are read a turn later); true when there
   * was one.
   */
  drain(): boolean {
    // A drain from inside a handler would read later chunks before the rest of this one.
    if (this.draining) return false;
    this.draining = true;
    let any = false;
    try {
      for (let n = 0; n < MAX_CHUNKS_PER_DRAIN; n++) {
        if (this.closed) return any;
        const chunk = this.ring.take();
        if (chunk === undefined) return any;
        any = true;
        this.takeObjects(chunk[0]! + chunk[1]! * 0x100 + chunk[2]! * 0x10000 + chunk[3]! * 0x1000000);
        readRecords(chunk.buffer as ArrayBuffer, chunk.byteOffset + CHUNK_HEAD_BYTES, chunk.byteOffset + chunk.length, this.records);
      }
      return any;
    } finally {
      this.draining = false;
    }
  }

  /** The other side is gone: stop reading, and end the wait. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.ring.interrupt();
  }

  private readonly woken = (): void => {
    if (this.closed) return;
    try {
      this.drain();
    } finally {
      // A handler that threw does not stop the link: the rest of its chunk is lost, the next
      // chunks are read as before (each brings its own objects), and the error reaches the loop.
      setImmediate(this.again);
    }
  };

  /** A turn after a wake-up: read what came meanwhile, and ask for a wake-up once nothing did. */
  private readonly again = (): void => {
    if (this.closed) return;
    let any = true;
    try {
      any = this.drain();
    } finally {
      if (any) setImmediate(this.again);
      else this.ring.wait(this.woken);
    }
  };

  /** The `count` objects of the chunk now taken: its message on the port, if it counts any. */
  private takeObjects(count: number): void {
    this.nextObject = 0;
    if (count === 0) {
      this.chunkObjects = [];
      return;
    }
    const got = receiveMessageOnPort(this.objects);
    // Posted before the chunk was published (Outbox.flush).
    if (got === undefined) throw new Error(`frontend thread link: a chunk of ${count} object(s) without their message`);
    this.chunkObjects = got.message as M[];
    if (this.chunkObjects.length !== count) {
      throw new Error(`frontend thread link: a chunk of ${count} object(s) with a message of ${this.chunkObjects.length}`);
    }
  }

  private takeObject(): M {
    if (this.nextObject >= this.chunkObjects.length) throw new Error('frontend thread link: more object records than objects');
    return this.chunkObjects[this.nextObject++]!;
  }
}
