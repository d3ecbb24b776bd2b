/**
 * Tokenizer for the protobuf text format as Triton's C++ parser reads it
 * (config.pbtxt). Kept separate from the parser so that every token carries
 * its line and column: load errors must point at the offending spot, which
 * the text-format reader of @bufbuild/protobuf does not report.
 */

import { Errors, type ConfigError } from '../errors.js';
import type { SyntaxEntry, SyntaxSite } from '../errors/config-syntax.js';

export interface SourcePosition {
  /** 1-based line. */
  readonly line: number;
  /** 1-based column, in UTF-16 code units. */
  readonly column: number;
}

export type Token = SourcePosition &
  (
    | { readonly kind: 'eof' }
    | { readonly kind: 'punct'; readonly text: '{' | '}' | '<' | '>' | '[' | ']' | ':' | ',' | ';' | '-' }
    | { readonly kind: 'ident'; readonly text: string }
    /** Integer literal; `value` is always non-negative (the sign is its own token). */
    | { readonly kind: 'int'; readonly text: string; readonly value: bigint }
    | { readonly kind: 'float'; readonly text: string; readonly value: number }
    /** A quoted string, already unescaped to bytes (C escapes may produce non-UTF-8). */
    | { readonly kind: 'string'; readonly text: string; readonly bytes: Uint8Array }
  );

/**
 * A lexical error: the lexer does not know the file name, so it carries the catalogue entry and
 * its arguments, and the parser builds the ConfigError (`toConfigError`) once it adds the file.
 */
export class LexError extends Error {
  constructor(
    readonly toConfigError: (site: SyntaxSite) => ConfigError,
    readonly line: number,
    readonly column: number,
  ) {
    super('lexical error in a model configuration');
  }
}

const PUNCT = new Set(['{', '}', '<', '>', '[', ']', ':', ',', ';', '-']);

function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}
function isHex(c: string): boolean {
  return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
function isIdentStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}
function isIdentPart(c: string): boolean {
  return isIdentStart(c) || isDigit(c);
}

const utf8 = new TextEncoder();

export class Lexer {
  private pos = 0;
  private line = 1;
  private lineStart = 0;
  private peeked: Token | undefined;

  constructor(private readonly src: string) {
    // A UTF-8 BOM left by some editors is not part of the text.
    if (src.charCodeAt(0) === 0xfeff) {
      this.pos = 1;
      this.lineStart = 1;
    }
  }

  peek(): Token {
    this.peeked ??= this.scan();
    return this.peeked;
  }

  next(): Token {
    const t = this.peek();
    this.peeked = undefined;
    return t;
  }

  private here(): SourcePosition {
    return { line: this.line, column: this.pos - this.lineStart + 1 };
  }

  private fail<A extends unknown[]>(at: SourcePosition, entry: SyntaxEntry<A>, ...args: A): never {
    throw new LexError((site) => entry(site, ...args), at.line, at.column);
  }

  private skipSpaceAndComments(): void {
    const s = this.src;
    while (this.pos < s.length) {
      const c = s[this.pos]!;
      if (c === '\n') {
        this.pos++;
        this.line++;
        this.lineStart = this.pos;
      } else if (c === ' ' || c === '\t' || c === '\r' || c === '\f' || c === '\v') {
        this.pos++;
      } else if (c === '#') {
        while (this.pos < s.length && s[this.pos] !== '\n') this.pos++;
      } else {
        return;
      }
    }
  }

  private scan(): Token {
    this.skipSpaceAndComments();
    const at = this.here();
    const s = this.src;
    if (this.pos >= s.length) return { kind: 'eof', ...at };
    const c = s[this.pos]!;
    if (isIdentStart(c)) {
      const start = this.pos;
      while (this.pos < s.length && isIdentPart(s[this.pos]!)) this.pos++;
      return { kind: 'ident', text: s.slice(start, this.pos), ...at };
    }
    if (isDigit(c) || (c === '.' && isDigit(s[this.pos + 1] ?? ''))) return this.scanNumber(at);
    if (c === '"' || c === "'") return this.scanString(at);
    if (PUNCT.has(c)) {
      this.pos++;
      return { kind: 'punct', text: c as '{', ...at };
    }
    return this.fail(at, Errors.lexUnexpectedChar, c);
  }

  private scanNumber(at: SourcePosition): Token {
    const s = this.src;
    const start = this.pos;
    let isFloat = false;
    let value: bigint | undefined;
    if (s[this.pos] === '0' && (s[this.pos + 1] === 'x' || s[this.pos + 1] === 'X')) {
      this.pos += 2;
      const digits = this.pos;
      while (this.pos < s.length && isHex(s[this.pos]!)) this.pos++;
      if (this.pos === digits) this.fail(at, Errors.lexHexDigits);
      value = BigInt('0x' + s.slice(digits, this.pos));
    } else if (s[this.pos] === '0' && isDigit(s[this.pos + 1] ?? '')) {
      // Leading zero: octal, as in C.
      this.pos++;
      const digits = this.pos;
      while (this.pos < s.length && isDigit(s[this.pos]!)) this.pos++;
      const text = s.slice(digits, this.pos);
      if (/[89]/.test(text)) this.fail(at, Errors.lexOctal, text);
      value = BigInt('0o' + text);
    } else {
      while (this.pos < s.length && isDigit(s[this.pos]!)) this.pos++;
      if (s[this.pos] === '.') {
        isFloat = true;
        this.pos++;
        while (this.pos < s.length && isDigit(s[this.pos]!)) this.pos++;
      }
      if (s[this.pos] === 'e' || s[this.pos] === 'E') {
        const save = this.pos;
        this.pos++;
        if (s[this.pos] === '+' || s[this.pos] === '-') this.pos++;
        if (!isDigit(s[this.pos] ?? '')) {
          this.pos = save;
          this.fail(this.here(), Errors.lexExponent);
        }
        while (this.pos < s.length && isDigit(s[this.pos]!)) this.pos++;
        isFloat = true;
      }
      if (!isFloat) value = BigInt(s.slice(start, this.pos));
    }
    const body = s.slice(start, this.pos);
    // C++ accepts a trailing f/F, which makes the literal a float.
    if (s[this.pos] === 'f' || s[this.pos] === 'F') {
      this.pos++;
      isFloat = true;
    }
    if (this.pos < s.length && isIdentPart(s[this.pos]!)) {
      this.fail(this.here(), Errors.lexNumberIdent);
    }
    const text = s.slice(start, this.pos);
    if (isFloat) return { kind: 'float', text, value: Number(value ?? body), ...at };
    return { kind: 'int', text, value: value!, ...at };
  }

  private scanString(at: SourcePosition): Token {
    const s = this.src;
    const quote = s[this.pos]!;
    const start = this.pos;
    this.pos++;
    const out: number[] = [];
    const pushUtf8 = (text: string): void => {
      for (const b of utf8.encode(text)) out.push(b);
    };
    for (;;) {
      if (this.pos >= s.length) this.fail(at, Errors.lexUnterminated);
      const c = s[this.pos]!;
      if (c === '\n') this.fail(at, Errors.lexStringNewline);
      if (c === quote) {
        this.pos++;
        break;
      }
      if (c !== '\\') {
        // Copy one code point (surrogate pairs stay together).
        const cp = s.codePointAt(this.pos)!;
        const len = cp > 0xffff ? 2 : 1;
        pushUtf8(s.slice(this.pos, this.pos + len));
        this.pos += len;
        continue;
      }
      const escAt = this.here();
      this.pos++;
      const e = s[this.pos] ?? '';
      this.pos++;
      switch (e) {
        case 'a':
          out.push(0x07);
          break;
        case 'b':
          out.push(0x08);
          break;
        case 'f':
          out.push(0x0c);
          break;
        case 'n':
          out.push(0x0a);
          break;
        case 'r':
          out.push(0x0d);
          break;
        case 't':
          out.push(0x09);
          break;
        case 'v':
          out.push(0x0b);
          break;
        case '\\':
          out.push(0x5c);
          break;
        case '?':
          out.push(0x3f);
          break;
        case "'":
          out.push(0x27);
          break;
        case '"':
          out.push(0x22);
          break;
        case 'x':
        case 'X': {
          let hex = '';
          while (hex.length < 2 && isHex(s[this.pos] ?? '')) hex += s[this.pos++];
          if (hex === '') this.fail(escAt, Errors.lexEscapeHex);
          out.push(parseInt(hex, 16));
          break;
        }
        case 'u':
        case 'U': {
          const n = e === 'u' ? 4 : 8;
          const hex = s.slice(this.pos, this.pos + n);
          if (hex.length !== n || ![...hex].every(isHex)) {
            this.fail(escAt, Errors.lexEscapeDigits, e, n);
          }
          this.pos += n;
          const cp = parseInt(hex, 16);
          if (cp > 0x10ffff) this.fail(escAt, Errors.lexUnicode, `${e}${hex}`);
          pushUtf8(String.fromCodePoint(cp));
          break;
        }
        default: {
          if (e >= '0' && e <= '7') {
            let oct = e;
            while (oct.length < 3 && (s[this.pos] ?? '') >= '0' && (s[this.pos] ?? '') <= '7') oct += s[this.pos++];
            out.push(parseInt(oct, 8) & 0xff);
            break;
          }
          this.fail(escAt, Errors.lexEscape, e);
        }
      }
    }
    return { kind: 'string', text: s.slice(start, this.pos), bytes: Uint8Array.from(out), ...at };
  }
}

/** How a token reads in an error message. */
export function describeToken(t: Token): string {
  switch (t.kind) {
    case 'eof':
      return 'end of input';
    case 'string':
      return `string ${t.text}`;
    default:
      return `'${t.text}'`;
  }
}
