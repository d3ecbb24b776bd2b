/**
 * @module frontends/http/tensor-json
 * Tensor data in its JSON form: request `data` arrays (nested or flat) into the raw
 * little-endian layout, and raw output bytes into a flat JSON array text. This is the only
 * place tensor bytes are copied on the HTTP path, because JSON leaves no other way.
 */
import type { Datatype } from '../../core/datatype.js';
import { elementSize } from '../../core/datatype.js';
import { Errors } from '../../core/errors.js';

type Put = (view: DataView, index: number, v: unknown) => void;

const TWO_63 = 2 ** 63;
const TWO_64 = 2 ** 64;

/**
 * A JSON integer as Triton reads one: rapidjson holds an integer literal as int64 or uint64, and
 * anything else (a fraction, or a literal beyond 64 bits, which it keeps as a double) is not an
 * integer: refused with Triton's text, e.g. 1e20 for INT32 (checked against tritonserver 2.51).
 */
function int(v: unknown, unsigned: boolean): number | bigint {
  if (typeof v === 'number') {
    if (Number.isInteger(v) && (unsigned ? v >= 0 && v < TWO_64 : v >= -TWO_63 && v < TWO_63)) return v;
  } else if (typeof v === 'bigint') {
    if (unsigned ? v >= 0n && v < 1n << 64n : v >= -(1n << 63n) && v < 1n << 63n) return v;
  }
  throw Errors.jsonDataKind(unsigned ? 'unsigned-integer' : 'signed-integer');
}

// A 64-bit integer beyond a narrower type wraps like Triton's C casts (DataView setters reduce
// modulo 2^bits): tritonserver 2.51 answers 2^40 for INT32 with 0 and 256 for UINT8 with 0.
const small = (v: number | bigint): number => (typeof v === 'bigint' ? Number(BigInt.asIntN(53, v)) : v);
const big = (v: number | bigint): bigint => (typeof v === 'bigint' ? v : BigInt(v));

function float(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  throw Errors.jsonDataKind('number');
}

const PUT: Partial<Record<Datatype, Put>> = {
  BOOL: (d, i, v) => {
    if (typeof v !== 'boolean') throw Errors.jsonDataKind('boolean');
    d.setUint8(i, v ? 1 : 0);
  },
  UINT8: (d, i, v) => d.setUint8(i, small(int(v, true))),
  UINT16: (d, i, v) => d.setUint16(i * 2, small(int(v, true)), true),
  UINT32: (d, i, v) => d.setUint32(i * 4, small(int(v, true)), true),
  UINT64: (d, i, v) => d.setBigUint64(i * 8, BigInt.asUintN(64, big(int(v, true))), true),
  INT8: (d, i, v) => d.setInt8(i, small(int(v, false))),
  INT16: (d, i, v) => d.setInt16(i * 2, small(int(v, false)), true),
  INT32: (d, i, v) => d.setInt32(i * 4, small(int(v, false)), true),
  INT64: (d, i, v) => d.setBigInt64(i * 8, BigInt.asIntN(64, big(int(v, false))), true),
  FP32: (d, i, v) => d.setFloat32(i * 4, float(v), true),
  FP64: (d, i, v) => d.setFloat64(i * 8, float(v), true),
};

/**
 * Encodes a request input's JSON `data` (nested row-major arrays or flat) into raw bytes.
 * `count` is the element count the shape declares; a different number of leaves is an error.
 * BYTES elements must be strings and come out length-prefixed (u32 LE); their number is left to
 * request validation, which Triton's wording comes from (tritonserver 2.51: `expected 2 string
 * elements ...`, 400, where other types get `Shape does not match ...`, 500).
 */
export function encodeJsonData(inputName: string, datatype: Datatype, data: unknown[], count: number): Buffer {
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw Errors.jsonInputHalf(datatype, inputName);
  }
  if (datatype === 'BYTES') return encodeBytes(data);
  const put = PUT[datatype]!;
  const out = Buffer.allocUnsafe(count * elementSize(datatype));
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  let n = 0;
  const walk = (arr: unknown[]): void => {
    for (let i = 0; i < arr.length; i++) {
      const v = arr[i];
      if (Array.isArray(v)) walk(v);
      else {
        if (n >= count) throw Errors.jsonDataShape();
        put(view, n++, v);
      }
    }
  };
  walk(data);
  if (n !== count) throw Errors.jsonDataShape();
  return out;
}

function encodeBytes(data: unknown[]): Buffer {
  const strings: string[] = [];
  const walk = (arr: unknown[]): void => {
    for (let i = 0; i < arr.length; i++) {
      const v = arr[i];
      if (Array.isArray(v)) walk(v);
      else {
        if (typeof v !== 'string') throw Errors.jsonBytesKind();
        strings.push(v);
      }
    }
  };
  walk(data);
  let total = 0;
  for (const s of strings) total += 4 + Buffer.byteLength(s);
  const out = Buffer.allocUnsafe(total);
  let off = 0;
  for (const s of strings) {
    const len = out.write(s, off + 4);
    out.writeUInt32LE(len, off);
    off += 4 + len;
  }
  return out;
}

type Get = (view: DataView, index: number) => string;

const num = (x: number): string => String(x); // shortest round-trip text; NaN/Infinity as rapidjson writes them

const GET: Partial<Record<Datatype, Get>> = {
  BOOL: (d, i) => (d.getUint8(i) === 0 ? 'false' : 'true'),
  UINT8: (d, i) => num(d.getUint8(i)),
  UINT16: (d, i) => num(d.getUint16(i * 2, true)),
  UINT32: (d, i) => num(d.getUint32(i * 4, true)),
  UINT64: (d, i) => d.getBigUint64(i * 8, true).toString(),
  INT8: (d, i) => num(d.getInt8(i)),
  INT16: (d, i) => num(d.getInt16(i * 2, true)),
  INT32: (d, i) => num(d.getInt32(i * 4, true)),
  INT64: (d, i) => d.getBigInt64(i * 8, true).toString(),
  FP32: (d, i) => num(d.getFloat32(i * 4, true)),
  FP64: (d, i) => num(d.getFloat64(i * 8, true)),
};

/**
 * Renders output bytes as the text of a flat JSON array. 64-bit integers go through BigInt,
 * never a double, so they print exactly.
 * @throws TritonError INVALID_ARG for FP16/BF16 (no JSON form), INTERNAL when the byte size
 * does not match `count` elements.
 */
export function dataToJsonText(outputName: string, datatype: Datatype, data: Buffer, count: number): string {
  if (datatype === 'FP16' || datatype === 'BF16') {
    throw Errors.jsonOutputHalf(datatype);
  }
  if (datatype === 'BYTES') return bytesToJsonText(outputName, data, count);
  if (data.length !== count * elementSize(datatype)) throw Errors.outputSizeMismatch(outputName);
  if (count === 0) return '[]';
  const get = GET[datatype]!;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const parts = new Array<string>(count);
  for (let i = 0; i < count; i++) parts[i] = get(view, i);
  return '[' + parts.join(',') + ']';
}

/**
 * The text of one output's JSON array, produced a slice at a time (`next(n)` renders up to `n`
 * elements). A large output is streamed with it (infer-response-stream.ts), so neither the
 * element strings nor the whole text of a tensor ever sit in the JS heap at once.
 */
export class JsonArrayText {
  private index = 0;
  private byteOff = 0;
  private readonly get: Get | undefined;
  private readonly view: DataView;

  /** @throws as dataToJsonText, before any text is produced. */
  constructor(
    private readonly outputName: string,
    datatype: Datatype,
    private readonly data: Buffer,
    private readonly count: number,
  ) {
    if (datatype === 'FP16' || datatype === 'BF16') throw Errors.jsonOutputHalf(datatype);
    if (datatype !== 'BYTES' && data.length !== count * elementSize(datatype)) throw Errors.outputSizeMismatch(outputName);
    this.get = GET[datatype];
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }

  get done(): boolean {
    return this.index >= this.count;
  }

  /** The next slice of the array's text: `[` before the first element, `]` after the last. */
  next(maxElements: number): string {
    const start = this.index;
    const end = Math.min(this.count, start + maxElements);
    const parts = new Array<string>(end - start);
    const get = this.get;
    if (get !== undefined) {
      for (let i = start; i < end; i++) parts[i - start] = get(this.view, i);
    } else {
      const data = this.data;
      let off = this.byteOff;
      for (let i = start; i < end; i++) {
        if (off + 4 > data.length) throw Errors.outputSizeMismatch(this.outputName);
        const len = data.readUInt32LE(off);
        off += 4;
        if (off + len > data.length) throw Errors.outputSizeMismatch(this.outputName);
        parts[i - start] = JSON.stringify(data.toString('utf8', off, off + len));
        off += len;
      }
      this.byteOff = off;
    }
    this.index = end;
    let text = parts.join(',');
    if (start === 0) text = '[' + text;
    else if (end > start) text = ',' + text;
    if (end >= this.count) text += ']';
    return this.count === 0 ? '[]' : text;
  }
}

function bytesToJsonText(outputName: string, data: Buffer, count: number): string {
  const parts = new Array<string>(count);
  let off = 0;
  for (let i = 0; i < count; i++) {
    if (off + 4 > data.length) throw Errors.outputSizeMismatch(outputName);
    const len = data.readUInt32LE(off);
    off += 4;
    if (off + len > data.length) throw Errors.outputSizeMismatch(outputName);
    parts[i] = JSON.stringify(data.toString('utf8', off, off + len));
    off += len;
  }
  return '[' + parts.join(',') + ']';
}
