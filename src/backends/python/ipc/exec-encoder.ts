/**
 * @module backends/python/ipc/exec-encoder
 * The `exec` message (docs/ipc.md, "Messages") written as msgpack by hand: every request pays
 * for one, and msgpackr's generic object walk over its nested maps and tuples, whose property
 * loads are megamorphic on a server that packs every kind of message, was its largest share of
 * the IPC stage in a profile of the server (`pack`, `encode`, `writePlainObject`). What comes
 * out is plain msgpack, as `codec.ts` writes (maps with string keys, `bin`-free, integers as
 * msgpack ints, bigints as 64-bit ints), so the stub decodes it with the same `unpackb`;
 * test/ipc-exec-encoder.test.ts checks that both encoders decode to the same value.
 */
import { encode } from './codec.js';
import type { ExecMsg, ExecRequestWire, TensorDescriptor } from './messages.js';

/**
 * Thrown where a field holds a value of a type the wire does not declare (a bug elsewhere): the
 * message then goes through the generic encoder, which writes whatever it is, as before this
 * encoder existed, rather than failing the batch here.
 */
const UNUSUAL = new Error('exec field of an undeclared type');

let buf = Buffer.allocUnsafe(16 * 1024);
let pos = 0;

/** Grows the output buffer (keeping what is written) so that `n` more bytes fit. */
function room(n: number): void {
  if (pos + n <= buf.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(2 * buf.length, pos + n));
  buf.copy(bigger, 0, 0, pos);
  buf = bigger;
}

/** A short ASCII map key as its msgpack bytes (fixstr), made once. */
function key(k: string): Buffer {
  return Buffer.from([0xa0 | k.length, ...Buffer.from(k, 'latin1')]);
}

const K = {
  t: key('t'),
  exec: key('exec'),
  id: key('id'),
  reqs: key('reqs'),
  rel: key('rel'),
  rid: key('rid'),
  corr: key('corr'),
  flags: key('flags'),
  timeout: key('timeout'),
  params: key('params'),
  outs: key('outs'),
  inputs: key('inputs'),
  cflag: key('cflag'),
  tr: key('tr'),
};

/** A few bytes: a loop is cheaper than Buffer.copy's call for these. */
function raw(b: Buffer): void {
  const n = b.length;
  room(n);
  for (let i = 0; i < n; i++) buf[pos + i] = b[i]!;
  pos += n;
}

function header(n: number, fix: number, b16: number, b32: number, fixMax: number): void {
  room(5);
  if (n <= fixMax) buf[pos++] = fix | n;
  else if (n < 0x10000) {
    buf[pos++] = b16;
    buf.writeUInt16BE(n, pos);
    pos += 2;
  } else {
    buf[pos++] = b32;
    buf.writeUInt32BE(n, pos);
    pos += 4;
  }
}

const mapHeader = (n: number): void => header(n, 0x80, 0xde, 0xdf, 15);
const arrayHeader = (n: number): void => header(n, 0x90, 0xdc, 0xdd, 15);

function str(s: string): void {
  if (typeof s !== 'string') throw UNUSUAL;
  const n = s.length;
  if (n < 32) {
    // Names, datatypes, segments and ids are short and ASCII: copied by a loop, which beats
    // Buffer.write's call for a few bytes.
    room(1 + n);
    let i = 0;
    for (; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) break;
      buf[pos + 1 + i] = c;
    }
    if (i === n) {
      buf[pos] = 0xa0 | n;
      pos += 1 + n;
      return;
    }
  }
  // At most 3 UTF-8 bytes per UTF-16 unit: the header is sized for that bound, then holds the
  // real length (a wider header than needed is valid msgpack).
  room(5 + 3 * n);
  if (3 * n < 32) {
    const len = buf.write(s, pos + 1, 'utf8');
    buf[pos] = 0xa0 | len;
    pos += 1 + len;
  } else if (3 * n < 0x100) {
    const len = buf.write(s, pos + 2, 'utf8');
    buf[pos] = 0xd9;
    buf[pos + 1] = len;
    pos += 2 + len;
  } else if (3 * n < 0x10000) {
    const len = buf.write(s, pos + 3, 'utf8');
    buf[pos] = 0xda;
    buf.writeUInt16BE(len, pos + 1);
    pos += 3 + len;
  } else {
    const len = buf.write(s, pos + 5, 'utf8');
    buf[pos] = 0xdb;
    buf.writeUInt32BE(len, pos + 1);
    pos += 5 + len;
  }
}

function int(v: number): void {
  if (typeof v !== 'number') throw UNUSUAL;
  room(9);
  if (!Number.isInteger(v)) {
    buf[pos++] = 0xcb;
    buf.writeDoubleBE(v, pos);
    pos += 8;
  } else if (v >= 0) {
    if (v < 0x80) buf[pos++] = v;
    else if (v < 0x100) {
      buf[pos++] = 0xcc;
      buf[pos++] = v;
    } else if (v < 0x10000) {
      buf[pos++] = 0xcd;
      buf.writeUInt16BE(v, pos);
      pos += 2;
    } else if (v < 0x100000000) {
      buf[pos++] = 0xce;
      buf.writeUInt32BE(v, pos);
      pos += 4;
    } else bigint(BigInt(v));
  } else if (v >= -32) buf[pos++] = v & 0xff;
  else if (v >= -0x80000000) {
    buf[pos++] = 0xd2;
    buf.writeInt32BE(v, pos);
    pos += 4;
  } else bigint(BigInt(v));
}

/** A 64-bit integer (a number's too, beyond 32 bits). */
function bigint(v: bigint): void {
  // Beyond 64 bits msgpack has no integer; the generic encoder decides (a float for a number).
  if (v > 0xffffffffffffffffn || v < -0x8000000000000000n) throw UNUSUAL;
  room(9);
  if (v >= 0n) {
    buf[pos++] = 0xcf;
    buf.writeBigUInt64BE(v, pos);
  } else {
    buf[pos++] = 0xd3;
    buf.writeBigInt64BE(v, pos);
  }
  pos += 8;
}

function nil(): void {
  room(1);
  buf[pos++] = 0xc0;
}

/** `[segment, offset]`. */
function block(b: readonly [string, number]): void {
  if (!Array.isArray(b)) throw UNUSUAL;
  arrayHeader(2);
  str(b[0]);
  int(b[1]);
}

function descriptor(d: TensorDescriptor): void {
  if (!Array.isArray(d)) throw UNUSUAL;
  arrayHeader(6);
  str(d[0]);
  str(d[1]);
  const shape = d[2];
  if (!Array.isArray(shape)) throw UNUSUAL;
  arrayHeader(shape.length);
  for (let i = 0; i < shape.length; i++) int(shape[i]!);
  str(d[3]);
  int(d[4]);
  int(d[5]);
}

function request(r: ExecRequestWire): void {
  if (typeof r !== 'object' || r === null || !Array.isArray(r.inputs)) throw UNUSUAL;
  let fields = 6;
  if (r.corr !== undefined) fields++;
  if (r.flags !== undefined) fields++;
  if (r.params !== undefined) fields++;
  if (r.tr !== undefined) fields++;
  mapHeader(fields);
  raw(K.rid);
  int(r.rid);
  raw(K.id);
  str(r.id);
  if (r.corr !== undefined) {
    raw(K.corr);
    const c = r.corr;
    if (typeof c === 'number') int(c);
    else if (typeof c === 'bigint') bigint(c);
    else str(c as string);
  }
  if (r.flags !== undefined) {
    raw(K.flags);
    int(r.flags);
  }
  raw(K.timeout);
  int(r.timeout);
  if (r.params !== undefined) {
    raw(K.params);
    str(r.params);
  }
  raw(K.outs);
  const outs = r.outs;
  if (outs === null) nil();
  else if (!Array.isArray(outs)) throw UNUSUAL;
  else {
    arrayHeader(outs.length);
    for (let i = 0; i < outs.length; i++) str(outs[i]!);
  }
  raw(K.inputs);
  const inputs = r.inputs;
  arrayHeader(inputs.length);
  for (let i = 0; i < inputs.length; i++) descriptor(inputs[i]!);
  raw(K.cflag);
  if (r.cflag === null) nil();
  else block(r.cflag);
  if (r.tr !== undefined) {
    raw(K.tr);
    int(r.tr);
  }
}

/** Encoded bytes; only valid until the next call (the buffer is reused), as codec.ts's encode. */
export function encodeExec(msg: ExecMsg): Uint8Array {
  try {
    return encodeDeclared(msg);
  } catch (e) {
    if (e !== UNUSUAL) throw e;
    return encode(msg);
  }
}

function encodeDeclared(msg: ExecMsg): Uint8Array {
  pos = 0;
  if (!Array.isArray(msg.reqs) || (msg.rel !== undefined && !Array.isArray(msg.rel))) throw UNUSUAL;
  mapHeader(msg.rel === undefined ? 3 : 4);
  raw(K.t);
  raw(K.exec);
  raw(K.id);
  int(msg.id);
  raw(K.reqs);
  const reqs = msg.reqs;
  arrayHeader(reqs.length);
  for (let i = 0; i < reqs.length; i++) request(reqs[i]!);
  if (msg.rel !== undefined) {
    raw(K.rel);
    const rel = msg.rel;
    arrayHeader(rel.length);
    for (let i = 0; i < rel.length; i++) block(rel[i]!);
  }
  return buf.subarray(0, pos);
}
