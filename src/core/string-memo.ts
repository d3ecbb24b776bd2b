/**
 * @module core/string-memo
 * Strings read out of messages that repeat themselves. A client, a frontend thread and a stub
 * each write the same model name, tensor names, datatypes and parameter keys at the same places of
 * every message; a reader that keeps the string it last read at a place, with its bytes, gives that
 * string back when the bytes match, so a repeat builds no string and allocates nothing, and the
 * string the core's maps look up is one whose hash V8 already holds. One implementation serves the
 * gRPC request reader, the HTTP infer-header reader, the frontend threads' records and the stub's
 * `exec_done` reader. LastBytes keeps a whole message's bytes the same way, for readers that
 * answer a repeated message from their last result.
 */

const EMPTY = new Uint8Array(0);

/** The longest string a memo keeps, in bytes. */
export const REMEMBER_MAX = 1024;

/** Strings up to this many bytes are decoded here when ASCII: Buffer#toString's call costs more. */
const SHORT = 32;

/** UTF-8 bytes `buf[start, end)` as a string (malformed sequences become U+FFFD, as Buffer's). */
export function utf8(buf: Uint8Array, start: number, end: number): string {
  if (end - start <= SHORT) {
    let s = '';
    let i = start;
    for (; i < end; i++) {
      const c = buf[i]!;
      if (c >= 0x80) break;
      s += String.fromCharCode(c);
    }
    if (i === end) return s;
  }
  return Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString('utf8');
}

/** The string last read at one place of a message, and its bytes. */
export class StringMemo {
  private bytes: Uint8Array = EMPTY;
  private text = '';

  /** The remembered string when `buf[start, end)` holds its bytes, else undefined. */
  match(buf: Uint8Array, start: number, end: number): string | undefined {
    const bytes = this.bytes;
    const n = bytes.length;
    if (end - start !== n) return undefined;
    // A loop, not Buffer#compare: the names compared here are short, and the native call is not.
    for (let i = 0; i < n; i++) if (buf[start + i] !== bytes[i]) return undefined;
    return this.text;
  }

  /**
   * Keeps `text`, read from `buf[start, end)`, for the next message (the bytes are copied). A
   * string longer than REMEMBER_MAX is not kept: names are short, and a client's one huge name
   * must not stay in memory after its request.
   */
  remember(buf: Uint8Array, start: number, end: number, text: string): void {
    if (end - start > REMEMBER_MAX) {
      this.bytes = EMPTY;
      this.text = '';
      return;
    }
    const copy = new Uint8Array(end - start);
    copy.set(buf.subarray(start, end));
    this.bytes = copy;
    this.text = text;
  }

  /** The string in `buf[start, end)`: the remembered one when the bytes match, else decoded and kept. */
  read(buf: Uint8Array, start: number, end: number): string {
    const same = this.match(buf, start, end);
    if (same !== undefined) return same;
    const text = utf8(buf, start, end);
    this.remember(buf, start, end, text);
    return text;
  }
}

/**
 * The bytes of the last message (or part of one) kept, in a buffer of a fixed size, so keeping
 * them allocates nothing: for a reader that answers a repeat of the same bytes from what it
 * made of them last time (the HTTP request head, the infer header a model sees twice).
 */
export class LastBytes {
  private readonly bytes: Buffer;
  private length = -1;

  constructor(readonly max: number) {
    this.bytes = Buffer.allocUnsafe(max);
  }

  /** Whether `buf[start, end)` holds the kept bytes. */
  equals(buf: Buffer, start: number, end: number): boolean {
    const n = end - start;
    return n === this.length && buf.compare(this.bytes, 0, n, start, end) === 0;
  }

  /** Keeps `buf[start, end)` in place of what was kept; false (nothing changed) past `max` bytes. */
  keep(buf: Buffer, start: number, end: number): boolean {
    const n = end - start;
    if (n > this.max) return false;
    buf.copy(this.bytes, 0, start, end);
    this.length = n;
    return true;
  }
}

/** `n` memos, one per place of a message. */
export const stringMemos = (n: number): StringMemo[] => Array.from({ length: n }, () => new StringMemo());
