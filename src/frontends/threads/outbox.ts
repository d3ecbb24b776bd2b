/**
 * @module frontends/threads/outbox
 * What one thread posts to the other in one event-loop turn, posted as one message: small
 * requests and responses as records in one transferred buffer (wire-records.ts), the rest as
 * objects (wire.ts), in the order they were posted.
 */
import type { RecordsMessage } from './wire.js';
import { RecordWriter } from './wire-records.js';

/** The part of a Worker or MessagePort an Outbox posts on. */
export interface PostTarget {
  postMessage(m: unknown, transfer?: readonly ArrayBuffer[]): void;
}

/**
 * Messages of one event-loop turn posted as one: each post wakes the other thread and pays a
 * serialisation, so under load the requests (or responses) that one turn produced cross
 * together, in order, once the turn's I/O callbacks have run (setImmediate). Requests and
 * responses written as records (`record`) go in the turn's record buffer; a message posted as an
 * object between two records closes the run of records before it, so the order holds.
 */
export class Outbox<M> {
  private messages: Array<M | RecordsMessage> = [];
  private transfer: ArrayBuffer[] = [];
  private scheduled = false;
  private readonly records = new RecordWriter();
  /** Where the records not yet closed into a `bin` message begin; -1 when none are open. */
  private runStart = -1;

  constructor(private readonly target: PostTarget) {}

  post(m: M, transfer?: ArrayBuffer): void {
    this.closeRun();
    this.messages.push(m);
    if (transfer !== undefined) this.transfer.push(transfer);
    this.schedule();
  }

  /**
   * Writes a record with `write` (wire-records.ts) and queues it; false when `write` declined,
   * and the caller posts the message as an object.
   */
  record<A, B, C>(write: (w: RecordWriter, a: A, b: B, c: C) => boolean, a: A, b: B, c: C): boolean {
    const w = this.records;
    const start = w.length;
    if (!write(w, a, b, c)) return false;
    if (this.runStart < 0) this.runStart = start;
    this.schedule();
    return true;
  }

  private schedule(): void {
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  private closeRun(): void {
    if (this.runStart < 0) return;
    // buf is set at flush, when the turn's buffer is complete.
    this.messages.push({ t: 'bin', buf: undefined as unknown as ArrayBuffer, start: this.runStart, end: this.records.length });
    this.runStart = -1;
  }

  readonly flush = (): void => {
    this.scheduled = false;
    this.closeRun();
    const messages = this.messages;
    if (messages.length === 0) return;
    const transfer = this.transfer;
    this.messages = [];
    this.transfer = [];
    if (this.records.length > 0) {
      const buf = this.records.take();
      for (const m of messages) if ((m as RecordsMessage).t === 'bin') (m as RecordsMessage).buf = buf;
      transfer.push(buf);
    }
    if (messages.length === 1) this.target.postMessage(messages[0], transfer);
    else this.target.postMessage({ t: 'batch', messages }, transfer);
  };
}
