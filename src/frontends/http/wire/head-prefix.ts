/**
 * @module frontends/http/wire/head-prefix
 * Checks a request head while it is still arriving: whether the bytes so far can begin a head
 * that `parseRequestHead` accepts. Bytes that can never end in CRLF CRLF (bare-LF line ends,
 * binary, a TLS ClientHello sent to the plain port) would otherwise wait for the idle timeout
 * or the 16 KiB head bound; this way they are answered 400 at the first byte no head could
 * have there, as llhttp answers them for node:http.
 *
 * The byte rules are parseRequestHead's (request-head.ts), applied as a state machine that
 * looks at each byte once however the head is split across reads, so a slow sender costs no
 * rescans. What only a whole head shows (the version's number, framing, field counts) is still
 * parseRequestHead's to refuse.
 */
import { TARGET, TOKEN, VALUE, WireError } from './request-head.js';

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;
const COLON = 0x3a;

// Where in the head the next byte is.
const METHOD = 0;
const TARGET_STEP = 1;
/** `HTTP/d.d` CR LF; `n` counts its bytes. */
const VERSION = 2;
/** A field line's first byte, or the CR of the empty line ending the head. */
const LINE_START = 3;
const NAME = 4;
const FIELD_VALUE = 5;
/** The LF after a CR. */
const LINE_LF = 6;
/** Past the head's final LF: the head is whole. */
const DONE = 7;

const VERSION_TEXT = Buffer.from('HTTP/0.0\r\n', 'latin1');

/** Whether `c` can be byte `n` of `HTTP/d.d` CR LF. */
function versionByte(n: number, c: number): boolean {
  if (n === 5 || n === 7) return c >= 0x30 && c <= 0x39;
  return c === VERSION_TEXT[n];
}

const bad = (why: string): WireError => new WireError(400, why);

export class HeadPrefix {
  private step = METHOD;
  /** Bytes of the head already checked. */
  private checked = 0;
  /**
   * Bytes of the current element (the method or target, which may not be empty, or the version);
   * after a CR, 1 when it ends the head.
   */
  private n = 0;

  /** Starts over for the next request's head. */
  reset(): void {
    this.step = METHOD;
    this.checked = 0;
    this.n = 0;
  }

  /**
   * Checks the bytes of `head` (a head from index 0, arriving, not yet whole) that were not
   * checked before; throws a 400 `WireError` at the first one no request head could have.
   */
  check(head: Buffer): void {
    let step = this.step;
    let n = this.n;
    for (let i = this.checked; i < head.length && step !== DONE; i++) {
      const c = head[i]!;
      switch (step) {
        case METHOD:
          if (TOKEN[c] === 1) n++;
          else if (c === SP && n > 0) {
            step = TARGET_STEP;
            n = 0;
          } else throw bad('malformed request line');
          break;
        case TARGET_STEP:
          if (TARGET[c] === 1) n++;
          else if (c === SP && n > 0) {
            step = VERSION;
            n = 0;
          } else throw bad('malformed request target');
          break;
        case VERSION:
          if (!versionByte(n, c)) throw bad('malformed HTTP version');
          if (++n === VERSION_TEXT.length) step = LINE_START;
          break;
        case LINE_START:
          if (c === CR) {
            step = LINE_LF;
            n = 1;
          } else if (TOKEN[c] === 1) step = NAME;
          else throw bad(c === SP || c === HTAB ? 'obsolete line folding is not accepted' : 'malformed header field name');
          break;
        case NAME:
          if (c === COLON) step = FIELD_VALUE;
          else if (TOKEN[c] !== 1) throw bad('malformed header field');
          break;
        case FIELD_VALUE:
          if (c === CR) {
            step = LINE_LF;
            n = 0;
          } else if (VALUE[c] !== 1) throw bad('invalid character in a header field value');
          break;
        case LINE_LF:
          // Only LF may follow a CR; it ends a field line (n = 0) or the whole head (n = 1).
          if (c !== LF) throw bad('CR without LF in the request head');
          step = n === 1 ? DONE : LINE_START;
          break;
      }
    }
    this.step = step;
    this.n = n;
    this.checked = head.length;
  }
}
