/**
 * @module frontends/http/wire/request-head
 * Parses an HTTP/1.x request head (request line + header fields, RFC 9112) from a buffer.
 *
 * Strict on purpose, since a lenient parser in front of a model server is a smuggling risk:
 * CRLF line ends only, no obsolete line folding, tokens and field values checked byte by
 * byte, one framing (Content-Length or chunked, never both, equal values when repeated), and
 * bounded sizes. Anything else is a `WireError` with the status to answer (400, 431, 501, 505).
 */
import { LastBytes } from '../../../core/string-memo.js';

/** A parsed head; the same object comes back for a later head with the same bytes (never change it). */
export interface RequestHead {
  readonly method: string;
  /** The request-target as sent (origin-form for the routes this server has). */
  readonly url: string;
  /** 0 for HTTP/1.0, 1 for HTTP/1.1. */
  readonly versionMinor: number;
  /** Field names lower-cased; repeated fields joined with ", " (as node:http does for most). */
  readonly headers: Readonly<Record<string, string>>;
  /** Body length from Content-Length; -1 when chunked; 0 when neither is present. */
  readonly contentLength: number;
  readonly chunked: boolean;
  /** The connection may carry another request after this one. */
  readonly keepAlive: boolean;
  /** `Expect: 100-continue` (any other expectation is ignored, as Triton does). */
  readonly expectContinue: boolean;
}

/** A request the server cannot read; `status` is the answer before the connection closes. */
export class WireError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Node's default `--max-http-header-size`: the whole head, request line included. */
export const MAX_HEAD_BYTES = 16 * 1024;
/** More fields than any client of this server sends; a flood of tiny fields is refused. */
export const MAX_HEADER_FIELDS = 128;

// The byte classes below are shared with head-prefix.ts, which applies the same rules to a
// head still arriving.

// tchar of RFC 9110: ! # $ % & ' * + - . ^ _ ` | ~ DIGIT ALPHA
export const TOKEN = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~") TOKEN[c.charCodeAt(0)] = 1;
for (let c = 0x30; c <= 0x39; c++) TOKEN[c] = 1;
for (let c = 0x41; c <= 0x5a; c++) TOKEN[c] = 1;
for (let c = 0x61; c <= 0x7a; c++) TOKEN[c] = 1;

// field-vchar / obs-text plus SP and HTAB inside a value; no other control byte.
export const VALUE = new Uint8Array(256);
for (let c = 0x20; c <= 0xff; c++) VALUE[c] = 1;
VALUE[0x7f] = 0;
VALUE[0x09] = 1;

// request-target: visible ASCII (no SP, no controls); UTF-8 bytes are tolerated as node does.
export const TARGET = new Uint8Array(256);
for (let c = 0x21; c <= 0xff; c++) TARGET[c] = 1;
TARGET[0x7f] = 0;

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;
const COLON = 0x3a;

const bad = (why: string): WireError => new WireError(400, why);

/**
 * Where the head ends: the index just past its empty line, or -1 when more bytes are needed.
 * Throws 431 once `MAX_HEAD_BYTES` have arrived without one.
 */
export function findHeadEnd(buf: Buffer, start: number): number {
  const at = buf.indexOf('\r\n\r\n', start, 'latin1');
  if (at >= 0) {
    if (at + 4 - start > MAX_HEAD_BYTES) throw new WireError(431, 'request head too large');
    return at + 4;
  }
  if (buf.length - start > MAX_HEAD_BYTES) throw new WireError(431, 'request head too large');
  return -1;
}

/** Heads longer than this are not remembered (a client's usual head is a few hundred bytes). */
const MAX_REMEMBERED_HEAD = 2048;
/**
 * The last head parsed and its bytes: a client sends the same head on every request of a kind
 * (perf_analyzer's and tritonclient's infer requests differ only in their bodies), and the
 * parse is a function of the bytes alone. Not frozen: freezing the header record (a
 * dictionary-mode object) cost more than the parse it saves when heads change every request;
 * RequestHead's fields and record are typed read-only instead.
 */
let lastHead: RequestHead | undefined;
const lastHeadBytes = new LastBytes(MAX_REMEMBERED_HEAD);

/**
 * Parses `buf[start, end)`, a whole head ending in CRLF CRLF (see findHeadEnd). The same object
 * comes back for a head with the same bytes as the last one: never change it.
 */
export function parseRequestHead(buf: Buffer, start: number, end: number): RequestHead {
  if (lastHeadBytes.equals(buf, start, end)) return lastHead!;
  const head = readHead(buf, start, end);
  if (lastHeadBytes.keep(buf, start, end)) lastHead = head;
  return head;
}

/** parseRequestHead's parse proper, for bytes it has not just seen. */
function readHead(buf: Buffer, start: number, end: number): RequestHead {
  // Request line: method SP request-target SP HTTP/1.x CRLF
  let i = start;
  while (i < end && TOKEN[buf[i]!] === 1) i++;
  if (i === start || buf[i] !== SP) throw bad('malformed request line');
  const method = knownMethod(buf, start, i);
  const targetStart = ++i;
  while (i < end && TARGET[buf[i]!] === 1) i++;
  if (i === targetStart || buf[i] !== SP) throw bad('malformed request target');
  const url = sameTarget(buf, targetStart, i);
  i++;
  // HTTP/d.d CRLF; a well-formed version other than 1.0 and 1.1 is 505, anything else 400.
  const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;
  if (
    i + 10 > end ||
    buf[i] !== 0x48 || // H
    buf[i + 1] !== 0x54 || // T
    buf[i + 2] !== 0x54 || // T
    buf[i + 3] !== 0x50 || // P
    buf[i + 4] !== 0x2f || // /
    !isDigit(buf[i + 5]) ||
    buf[i + 6] !== 0x2e ||
    !isDigit(buf[i + 7]) ||
    buf[i + 8] !== CR ||
    buf[i + 9] !== LF
  ) {
    throw bad('malformed HTTP version');
  }
  const minorByte = buf[i + 7]!;
  if (buf[i + 5] !== 0x31 || (minorByte !== 0x30 && minorByte !== 0x31)) throw new WireError(505, 'HTTP version not supported');
  const versionMinor = minorByte - 0x30;
  i += 10;

  // Fields are collected here and put in the record by fieldRecord: stores into a fresh
  // null-prototype object kept re-tuning this function's inline caches on every request, so
  // V8 never optimized it (about 15 µs per head instead of 5).
  // Module-level scratch arrays (this function never re-enters): no arrays grown per head.
  const names = NAMES;
  const values = VALUES;
  let count = 0;
  let fields = 0;
  let contentLength = -2; // -2: absent
  let transferEncoding: string | undefined;
  let connection = '';
  let expectContinue = false;
  const last = end - 2; // the final CRLF
  while (i < last) {
    if (++fields > MAX_HEADER_FIELDS) throw new WireError(431, 'too many header fields');
    const nameStart = i;
    while (TOKEN[buf[i]!] === 1) i++;
    if (i === nameStart) {
      throw bad(buf[i] === SP || buf[i] === HTAB ? 'obsolete line folding is not accepted' : 'malformed header field name');
    }
    if (buf[i] !== COLON) throw bad('malformed header field');
    const known = knownField(buf, nameStart, i);
    const name = known >= 0 ? KNOWN_NAMES[known]! : buf.toString('latin1', nameStart, i).toLowerCase();
    i++;
    while (buf[i] === SP || buf[i] === HTAB) i++;
    const valueStart = i;
    while (VALUE[buf[i]!] === 1) i++;
    if (buf[i] !== CR || buf[i + 1] !== LF) throw bad('invalid character in a header field value');
    let valueEnd = i;
    while (valueEnd > valueStart && (buf[valueEnd - 1] === SP || buf[valueEnd - 1] === HTAB)) valueEnd--;
    const value = known >= 0 ? knownValue(known, buf, valueStart, valueEnd) : buf.toString('latin1', valueStart, valueEnd);
    i += 2;

    switch (name) {
      case 'content-length': {
        if (!/^[0-9]{1,15}$/.test(value)) throw bad('invalid Content-Length');
        const n = Number(value);
        if (contentLength !== -2 && contentLength !== n) throw bad('conflicting Content-Length fields');
        if (contentLength === -2) {
          names[count] = name;
          values[count++] = value;
        }
        contentLength = n;
        continue;
      }
      case 'transfer-encoding':
        transferEncoding = transferEncoding === undefined ? value : `${transferEncoding}, ${value}`;
        break;
      case 'connection':
        connection = connection === '' ? value : `${connection}, ${value}`;
        break;
      case 'expect':
        if (value.toLowerCase() === '100-continue') expectContinue = true;
        break;
    }
    names[count] = name;
    values[count++] = value;
  }

  let chunked = false;
  if (transferEncoding !== undefined) {
    if (contentLength !== -2) throw bad('both Content-Length and Transfer-Encoding');
    if (versionMinor === 0) throw bad('Transfer-Encoding in an HTTP/1.0 request');
    // Only "chunked" as the one coding: anything else could not be framed safely.
    if (transferEncoding.trim().toLowerCase() !== 'chunked') throw new WireError(501, 'unsupported Transfer-Encoding');
    chunked = true;
  }

  // Most clients send no Connection field: HTTP/1.1 then keeps the connection, 1.0 closes it.
  const tokens = connection.toLowerCase();
  const keepAlive =
    connection === '' ? versionMinor === 1 : versionMinor === 1 ? !/(?:^|[\s,])close(?:$|[\s,])/.test(tokens) : /(?:^|[\s,])keep-alive(?:$|[\s,])/.test(tokens);
  const headers = fieldRecord(names, values, count);
  // A loop, not fill(): Array.prototype.fill on these arrays runs V8's generic C++ builtin.
  for (let k = 0; k < count; k++) {
    names[k] = '';
    values[k] = '';
  }
  return {
    method,
    url,
    versionMinor,
    headers,
    contentLength: chunked ? -1 : contentLength === -2 ? 0 : contentLength,
    chunked,
    keepAlive,
    expectContinue,
  };
}

// Clients send the same few fields on every request, mostly with the same values: their
// names are matched against these (case-insensitively) instead of being sliced and lower-cased,
// and a value equal to the last one seen for the field is that same string, not a new one.
const KNOWN_NAMES = [
  'host',
  'user-agent',
  'accept',
  'accept-encoding',
  'content-type',
  'content-length',
  'content-encoding',
  'inference-header-content-length',
  'connection',
  'expect',
  'transfer-encoding',
  'te',
  'keep-alive',
];
const KNOWN_BYTES = KNOWN_NAMES.map((n) => Buffer.from(n, 'latin1'));
/** Known names by length: indexes into KNOWN_NAMES. */
const KNOWN_BY_LENGTH: number[][] = [];
KNOWN_NAMES.forEach((n, k) => (KNOWN_BY_LENGTH[n.length] ??= []).push(k));
/** The last value of each known field, and its bytes. */
const lastValue: string[] = KNOWN_NAMES.map(() => '');
const lastValueBytes: Buffer[] = KNOWN_NAMES.map(() => Buffer.alloc(0));
/** Values longer than this are not remembered (they rarely repeat). */
const MAX_REMEMBERED_VALUE = 256;

/** `buf[start, end)`, a method token, as a string: the usual ones without a new string. */
function knownMethod(buf: Buffer, start: number, end: number): string {
  const n = end - start;
  if (n === 4 && buf[start] === 0x50 && buf[start + 1] === 0x4f && buf[start + 2] === 0x53 && buf[start + 3] === 0x54) return 'POST';
  if (n === 3 && buf[start] === 0x47 && buf[start + 1] === 0x45 && buf[start + 2] === 0x54) return 'GET';
  return buf.toString('latin1', start, end);
}

/** The last request-target parsed, and its bytes: a client asks for the same URL over and over. */
let lastTarget = '';
let lastTargetBytes = Buffer.alloc(0);

/** `buf[start, end)`, a request-target, as a string (UTF-8): the last one again when the bytes are equal. */
function sameTarget(buf: Buffer, start: number, end: number): string {
  const n = end - start;
  const bytes = lastTargetBytes;
  if (n === bytes.length && buf.compare(bytes, 0, n, start, end) === 0) return lastTarget;
  const url = buf.toString('utf8', start, end);
  if (n <= MAX_REMEMBERED_VALUE) {
    lastTarget = url;
    lastTargetBytes = Buffer.from(buf.subarray(start, end));
  }
  return url;
}

/** The index in KNOWN_NAMES of the field name `buf[start, end)` (any case), or -1. */
function knownField(buf: Buffer, start: number, end: number): number {
  const candidates = KNOWN_BY_LENGTH[end - start];
  if (candidates === undefined) return -1;
  next: for (let c = 0; c < candidates.length; c++) {
    const k = candidates[c]!;
    const want = KNOWN_BYTES[k]!;
    for (let j = 0; j < want.length; j++) {
      const b = buf[start + j]!;
      if ((b >= 0x41 && b <= 0x5a ? b | 0x20 : b) !== want[j]) continue next;
    }
    return k;
  }
  return -1;
}

/** The value `buf[start, end)` of known field `k` as a string: the remembered one when the bytes are equal. */
function knownValue(k: number, buf: Buffer, start: number, end: number): string {
  const bytes = lastValueBytes[k]!;
  const n = end - start;
  if (n === bytes.length) {
    let same = true;
    for (let j = 0; j < n; j++) {
      if (buf[start + j] !== bytes[j]) {
        same = false;
        break;
      }
    }
    if (same) return lastValue[k]!;
  }
  const value = buf.toString('latin1', start, end);
  if (n <= MAX_REMEMBERED_VALUE) {
    lastValue[k] = value;
    lastValueBytes[k] = Buffer.from(value, 'latin1');
  }
  return value;
}

const NAMES: string[] = new Array<string>(MAX_HEADER_FIELDS).fill('');
const VALUES: string[] = new Array<string>(MAX_HEADER_FIELDS).fill('');

/** The header record of a head: names lower-cased, a repeated field's values joined with ", ". */
function fieldRecord(names: readonly string[], values: readonly string[], count: number): Record<string, string> {
  const headers = Object.create(null) as Record<string, string>;
  for (let k = 0; k < count; k++) {
    const name = names[k]!;
    const prev = headers[name];
    headers[name] = prev === undefined ? values[k]! : `${prev}, ${values[k]}`;
  }
  return headers;
}
