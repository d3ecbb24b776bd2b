/**
 * @module frontends/http/wire/chunked
 * Incremental decoder of a chunked request body (RFC 9112 §7.1): size line (hex, optional
 * extensions), data, CRLF, ..., a zero-size chunk, optional trailer fields, and an empty line.
 * Extensions and trailers are read and dropped. Sizes are bounded: a size line or trailer line
 * longer than `MAX_LINE` or a size above 2^48 is a 400 `WireError`.
 */
import { WireError } from './request-head.js';

const MAX_LINE = 4096;
const MAX_CHUNK = 2 ** 48;

type State = 'size' | 'data' | 'data-crlf' | 'trailer' | 'done';

export class ChunkedDecoder {
  private state: State = 'size';
  private remaining = 0;
  /** Bytes of an unfinished size or trailer line. */
  private line = '';

  get done(): boolean {
    return this.state === 'done';
  }

  /**
   * Consumes bytes of `buf` from `start`, handing each piece of body data to `onData` (views of
   * `buf`, not copies). Returns the index just past what was consumed: `buf.length`, or the end
   * of the body once `done` (the rest belongs to the next request).
   */
  push(buf: Buffer, start: number, onData: (chunk: Buffer) => void): number {
    let i = start;
    while (i < buf.length && this.state !== 'done') {
      switch (this.state) {
        case 'data': {
          const n = Math.min(this.remaining, buf.length - i);
          onData(buf.subarray(i, i + n));
          i += n;
          this.remaining -= n;
          if (this.remaining === 0) this.state = 'data-crlf';
          break;
        }
        case 'data-crlf': {
          // Exactly CRLF after the data; collected in `line` in case it straddles two reads.
          this.line += String.fromCharCode(buf[i++]!);
          if (this.line.length < 2) break;
          if (this.line !== '\r\n') throw new WireError(400, 'malformed chunked body: no CRLF after chunk data');
          this.line = '';
          this.state = 'size';
          break;
        }
        case 'size':
        case 'trailer': {
          const lf = buf.indexOf(0x0a, i);
          const end = lf < 0 ? buf.length : lf + 1;
          if (this.line.length + (end - i) > MAX_LINE) throw new WireError(400, 'chunk size or trailer line too long');
          this.line += buf.toString('latin1', i, end);
          i = end;
          if (lf < 0) break;
          if (!this.line.endsWith('\r\n')) throw new WireError(400, 'malformed chunked body: bare LF');
          const text = this.line.slice(0, -2);
          this.line = '';
          if (this.state === 'trailer') {
            if (text === '') this.state = 'done';
            continue;
          }
          this.onSizeLine(text);
          break;
        }
      }
    }
    return i;
  }

  private onSizeLine(text: string): void {
    const semi = text.indexOf(';');
    const hex = (semi < 0 ? text : text.slice(0, semi)).trimEnd();
    if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) throw new WireError(400, 'malformed chunk size');
    const size = parseInt(hex, 16);
    if (size > MAX_CHUNK) throw new WireError(400, 'chunk too large');
    if (size === 0) {
      this.state = 'trailer';
      return;
    }
    this.remaining = size;
    this.state = 'data';
  }
}
