/**
 * @module frontends/http/json-parse
 * Parsing of request JSON. `JSON.parse` is fast but turns every number into a double, which
 * corrupts INT64/UINT64 tensor data and 64-bit `sequence_id`s above 2^53. One byte scan over
 * the text (cheap next to the parse itself) finds out whether the document nests deeper than
 * Triton's limit and whether it holds an integer literal too long for a double; only then does
 * a slower parser run that yields bigints for those literals. That parser also accepts
 * `NaN`/`Infinity`, which Triton's rapidjson settings accept and clients may send.
 */
import { isUtf8 } from 'node:buffer';
import { Errors } from '../../core/errors.js';

/** Triton rejects request JSON nested deeper than this. */
export const MAX_JSON_DEPTH = 100;

/** Integer literals with more digits than this may not fit a double exactly. */
const SAFE_DIGITS = 15;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_SQUARE = 0x5b;
const CLOSE_SQUARE = 0x5d;
const OPEN_CURLY = 0x7b;
const CLOSE_CURLY = 0x7d;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;

/**
 * Parses `buf[start, end)` as UTF-8 JSON. Integer literals that do not fit a double exactly
 * come back as bigint; everything else as `JSON.parse` would return it.
 * @throws TritonError INVALID_ARG on malformed JSON or nesting deeper than MAX_JSON_DEPTH.
 */
export function parseJsonBuffer(buf: Buffer, start = 0, end = buf.length, info?: JsonScanInfo): unknown {
  if (end <= start) throw Errors.jsonParse('The document is empty. at 0');
  // JSON text is UTF-8 (RFC 8259). Decoding would silently turn bad bytes into U+FFFD, so a
  // name or id would reach the model altered; refuse instead (simdutf: costs next to nothing).
  if (!isUtf8(buf.subarray(start, end))) {
    throw Errors.jsonParse(`Invalid encoding in string. at ${firstInvalidUtf8(buf, start, end) - start}`);
  }
  const found = scan(buf, start, end);
  if (info !== undefined) info.floatLiterals = (found & FLOAT_LITERAL) !== 0;
  const needsSlowParser = (found & NEEDS_SLOW) !== 0;
  const text = buf.toString('utf8', start, end);
  if (!needsSlowParser) {
    try {
      return JSON.parse(text);
    } catch {
      // Fall through: the slow parser accepts NaN/Infinity and words its errors with offsets.
    }
  }
  return new SlowParser(text).parseDocument();
}

/** What the byte scan saw besides nesting. */
export interface JsonScanInfo {
  /** Some number is written with a fraction or an exponent (`1.0`, `1e2`, `0.5`). */
  floatLiterals: boolean;
}

/**
 * A number written with a fraction or an exponent, as `parseJsonMarkingFloats` returns it.
 * rapidjson (Triton) holds such a literal as a double even when its value is whole, so Triton
 * refuses `1.0` and `1e2` for an integer tensor; `JSON.parse` cannot tell them from `1`.
 */
export class FloatLiteral {
  constructor(readonly value: number) {}
}

/**
 * Parses again, returning every number written with a fraction or an exponent as a
 * `FloatLiteral`. Only for the rare request whose integer tensors must be checked for such
 * literals (infer-request.ts); everything else reads the `parseJsonBuffer` result.
 */
export function parseJsonMarkingFloats(buf: Buffer, start = 0, end = buf.length): unknown {
  return new SlowParser(buf.toString('utf8', start, end), true).parseDocument();
}

const NEEDS_SLOW = 1;
const FLOAT_LITERAL = 2;

/** Offset of the first byte that does not start a well-formed UTF-8 sequence (error text only). */
function firstInvalidUtf8(buf: Buffer, start: number, end: number): number {
  let i = start;
  while (i < end) {
    const c = buf[i]!;
    let n: number;
    let min: number;
    if (c < 0x80) {
      i++;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) [n, min] = [1, 0x80];
    else if (c >= 0xe0 && c <= 0xef) [n, min] = [2, 0x800];
    else if (c >= 0xf0 && c <= 0xf4) [n, min] = [3, 0x10000];
    else return i;
    if (i + n >= end) return i;
    let cp = c & (0x3f >> n);
    for (let k = 1; k <= n; k++) {
      const b = buf[i + k]!;
      if ((b & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (b & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n + 1;
  }
  return end;
}

/**
 * One pass over the raw bytes: enforces the depth limit and reports whether the slow parser
 * is needed (a long integer literal, or a letter that may start NaN/Infinity).
 */
function scan(buf: Buffer, start: number, end: number): number {
  let depth = 0;
  let found = 0;
  for (let i = start; i < end; i++) {
    const c = buf[i]!;
    if (c === QUOTE) {
      // Skip the string; an escaped quote does not end it.
      for (i++; i < end; i++) {
        const s = buf[i]!;
        if (s === BACKSLASH) i++;
        else if (s === QUOTE) break;
      }
    } else if (c === OPEN_SQUARE || c === OPEN_CURLY) {
      if (++depth > MAX_JSON_DEPTH) {
        throw Errors.jsonParse(`JSON nesting depth exceeds the limit of ${MAX_JSON_DEPTH} at ${i - start}`);
      }
    } else if (c === CLOSE_SQUARE || c === CLOSE_CURLY) {
      depth--;
    } else if ((c >= ZERO && c <= NINE) || c === MINUS) {
      let digits = 0;
      let integer = true;
      for (; i < end; i++) {
        const d = buf[i]!;
        if (d >= ZERO && d <= NINE) digits++;
        else if (d === 0x2e /* . */ || d === 0x65 /* e */ || d === 0x45 /* E */) integer = false;
        else if (d !== MINUS && d !== 0x2b /* + */) break;
      }
      i--;
      if (!integer) found |= FLOAT_LITERAL;
      else if (digits > SAFE_DIGITS) found |= NEEDS_SLOW;
    } else if (c === 0x4e /* N */ || c === 0x49 /* I */) {
      found |= NEEDS_SLOW;
    }
  }
  return found;
}

/** Recursive-descent JSON parser; depth is already bounded by `scan`. */
class SlowParser {
  private pos = 0;
  constructor(
    private readonly text: string,
    /** Return fraction/exponent literals as FloatLiteral (parseJsonMarkingFloats). */
    private readonly markFloats = false,
  ) {}

  parseDocument(): unknown {
    const value = this.value();
    this.ws();
    if (this.pos !== this.text.length) this.fail('The document root must not be followed by other values.');
    return value;
  }

  private fail(what: string): never {
    throw Errors.jsonParse(`${what} at ${this.pos}`);
  }

  private ws(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
      this.pos++;
    }
  }

  private value(): unknown {
    this.ws();
    const t = this.text;
    if (this.pos >= t.length) this.fail('Invalid value.');
    const c = t.charCodeAt(this.pos);
    if (c === OPEN_CURLY) return this.object();
    if (c === OPEN_SQUARE) return this.array();
    if (c === QUOTE) return this.string();
    if ((c >= ZERO && c <= NINE) || c === MINUS) return this.number();
    for (const [word, val] of WORDS) {
      if (t.startsWith(word, this.pos)) {
        this.pos += word.length;
        return val;
      }
    }
    return this.fail('Invalid value.');
  }

  private object(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.pos++;
    this.ws();
    if (this.text.charCodeAt(this.pos) === CLOSE_CURLY) {
      this.pos++;
      return out;
    }
    for (;;) {
      this.ws();
      if (this.text.charCodeAt(this.pos) !== QUOTE) this.fail('Missing a name for object member.');
      const key = this.string();
      this.ws();
      if (this.text.charCodeAt(this.pos) !== 0x3a /* : */) this.fail('Missing a colon after a name of object member.');
      this.pos++;
      // defineProperty, so a "__proto__" key is data and not a prototype change.
      Object.defineProperty(out, key, { value: this.value(), enumerable: true, writable: true, configurable: true });
      this.ws();
      const c = this.text.charCodeAt(this.pos);
      this.pos++;
      if (c === CLOSE_CURLY) return out;
      if (c !== 0x2c /* , */) {
        this.pos--;
        this.fail("Missing a comma or '}' after an object member.");
      }
    }
  }

  private array(): unknown[] {
    const out: unknown[] = [];
    this.pos++;
    this.ws();
    if (this.text.charCodeAt(this.pos) === CLOSE_SQUARE) {
      this.pos++;
      return out;
    }
    for (;;) {
      out.push(this.value());
      this.ws();
      const c = this.text.charCodeAt(this.pos);
      this.pos++;
      if (c === CLOSE_SQUARE) return out;
      if (c !== 0x2c /* , */) {
        this.pos--;
        this.fail("Missing a comma or ']' after an array element.");
      }
    }
  }

  private string(): string {
    const t = this.text;
    const begin = this.pos;
    let escaped = false;
    for (let i = begin + 1; i < t.length; i++) {
      const c = t.charCodeAt(i);
      if (c === BACKSLASH) {
        escaped = true;
        i++;
      } else if (c === QUOTE) {
        this.pos = i + 1;
        if (!escaped) return t.slice(begin + 1, i);
        try {
          // Escapes are rare in request JSON; let the built-in parser decode them.
          return JSON.parse(t.slice(begin, i + 1)) as string;
        } catch {
          this.pos = begin;
          return this.fail('Invalid escape character in string.');
        }
      } else if (c < 0x20) {
        this.pos = i;
        this.fail('Invalid encoding in string.');
      }
    }
    return this.fail('Missing a closing quotation mark in string.');
  }

  private number(): number | bigint | FloatLiteral {
    const t = this.text;
    const m = NUMBER.exec(t.slice(this.pos, this.pos + 400));
    if (m === null) return this.fail('Invalid value.');
    const lit = m[0];
    this.pos += lit.length;
    if (lit === '-') {
      // "-Infinity"
      if (t.startsWith('Infinity', this.pos)) {
        this.pos += 8;
        return -Infinity;
      }
      this.pos--;
      return this.fail('Invalid value.');
    }
    const n = Number(lit);
    if (m[2] === undefined && m[3] === undefined) return Number.isSafeInteger(n) ? n : BigInt(lit);
    return this.markFloats ? new FloatLiteral(n) : n;
  }
}

const NUMBER = /^-?(?:(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?)?/;

const WORDS: ReadonlyArray<readonly [string, unknown]> = [
  ['true', true],
  ['false', false],
  ['null', null],
  ['NaN', NaN],
  ['Infinity', Infinity],
];
