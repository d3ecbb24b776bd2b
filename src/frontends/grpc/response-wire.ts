/**
 * @module frontends/grpc/response-wire
 * A hand-written protobuf encoder for `ModelInferResponse`, the one message on the hot path:
 * reflection-based `toBinary` costs several microseconds per small response and copies the
 * output bytes twice; this computes the exact size first and writes everything, output bytes
 * included, into one buffer. Field numbers are those of grpc_service.proto:
 *
 *   ModelInferResponse { 1 model_name; 2 model_version; 3 id; 4 map<string,InferParameter>;
 *                        5 repeated InferOutputTensor; 6 repeated bytes raw_output_contents }
 *   InferOutputTensor  { 1 name; 2 datatype; 3 repeated int64 shape (packed) }
 *   InferParameter     { 1 bool; 2 int64; 3 string; 4 double; 5 uint64 }
 *   map entry          { 1 key; 2 value }
 */
import { Errors } from '../../core/errors.js';
import type { ParamValue, Parameters } from '../../core/inference.js';
import type { Tensor } from '../../core/tensor.js';
import type { ResponseForm } from '../response-form.js';

const LEN = 2;
const VARINT = 0;
const I64 = 1;
const tag = (field: number, wireType: number) => (field << 3) | wireType;

const INT64_MAX = 2n ** 63n - 1n;
const TWO_64 = 2n ** 64n;

export function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** Writes an unsigned varint (n < 2^53); returns the offset after it. */
export function writeVarint(buf: Buffer, off: number, n: number): number {
  while (n >= 0x80) {
    buf[off++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[off++] = n;
  return off;
}

function bigVarintSize(v: bigint): number {
  let size = 1;
  while (v >= 0x80n) {
    v >>= 7n;
    size++;
  }
  return size;
}

function writeBigVarint(buf: Buffer, off: number, v: bigint): number {
  while (v >= 0x80n) {
    buf[off++] = Number(v & 0x7fn) | 0x80;
    v >>= 7n;
  }
  buf[off++] = Number(v);
  return off;
}

/** How a parameter value is encoded: the oneof field and its unsigned varint / bytes. */
type ParamWire =
  | { field: 1; n: number }
  | { field: 2 | 5; big: bigint }
  | { field: 2; n: number }
  | { field: 3; s: string; len: number }
  | { field: 4; d: number };

function paramWire(v: ParamValue): ParamWire {
  switch (typeof v) {
    case 'boolean':
      return { field: 1, n: v ? 1 : 0 };
    case 'string':
      return { field: 3, s: v, len: Buffer.byteLength(v) };
    case 'number':
      if (!Number.isSafeInteger(v)) return { field: 4, d: v };
      return v >= 0 ? { field: 2, n: v } : { field: 2, big: TWO_64 + BigInt(v) };
    case 'bigint':
      // Past int64's range the value can only be a uint64; negatives are two's complement.
      if (v > INT64_MAX) return { field: 5, big: v < TWO_64 ? v : TWO_64 - 1n };
      return { field: 2, big: v >= 0n ? v : TWO_64 + (v < -INT64_MAX - 1n ? -INT64_MAX - 1n : v) };
  }
}

function paramBodySize(p: ParamWire): number {
  if ('n' in p) return 1 + varintSize(p.n);
  if ('big' in p) return 1 + bigVarintSize(p.big);
  if ('s' in p) return 1 + varintSize(p.len) + p.len;
  return 1 + 8;
}

function writeParamBody(buf: Buffer, off: number, p: ParamWire): number {
  if ('n' in p) {
    buf[off++] = tag(p.field, VARINT);
    return writeVarint(buf, off, p.n);
  }
  if ('big' in p) {
    buf[off++] = tag(p.field, VARINT);
    return writeBigVarint(buf, off, p.big);
  }
  if ('s' in p) {
    buf[off++] = tag(3, LEN);
    off = writeVarint(buf, off, p.len);
    return off + buf.write(p.s, off, 'utf8');
  }
  buf[off++] = tag(4, I64);
  buf.writeDoubleLE(p.d, off);
  return off + 8;
}

interface Entry {
  key: string;
  keyLen: number;
  value: ParamWire;
  valueSize: number;
  size: number;
}

interface OutputHead {
  name: string;
  nameLen: number;
  datatype: string;
  shapeLen: number;
  size: number;
}

/** The sizes of everything, computed once and reused by the writer. */
export interface PreparedResponse {
  modelName: string;
  modelNameLen: number;
  modelVersion: string;
  modelVersionLen: number;
  id: string;
  idLen: number;
  entries: readonly Entry[];
  heads: readonly OutputHead[];
  outputs: readonly Tensor[];
  /** Byte length of the whole ModelInferResponse. */
  size: number;
}

const fieldSize = (len: number) => 1 + varintSize(len) + len;

/**
 * The entries of a response without parameters (most): shared, and the outputs' heads made at
 * their number, not grown by push from empty (room for 16 or more each time).
 */
const NO_ENTRIES: readonly Entry[] = Object.freeze([]);

export function prepareResponse(
  r: { modelName: string; modelVersion: string; id: string },
  params: Parameters | undefined,
  outputs: readonly Tensor[],
): PreparedResponse {
  const heads = new Array<OutputHead>(outputs.length);
  const p: PreparedResponse = {
    modelName: r.modelName,
    modelNameLen: Buffer.byteLength(r.modelName),
    modelVersion: r.modelVersion,
    modelVersionLen: Buffer.byteLength(r.modelVersion),
    id: r.id,
    idLen: Buffer.byteLength(r.id),
    entries: NO_ENTRIES,
    heads,
    outputs,
    size: 0,
  };
  let size = 0;
  if (p.modelNameLen > 0) size += fieldSize(p.modelNameLen);
  if (p.modelVersionLen > 0) size += fieldSize(p.modelVersionLen);
  if (p.idLen > 0) size += fieldSize(p.idLen);
  if (params !== undefined) {
    const entries: Entry[] = [];
    p.entries = entries;
    for (const key of Object.keys(params)) {
      const value = paramWire(params[key]!);
      const keyLen = Buffer.byteLength(key);
      const valueSize = paramBodySize(value);
      const entrySize = fieldSize(keyLen) + fieldSize(valueSize);
      entries.push({ key, keyLen, value, valueSize, size: entrySize });
      size += fieldSize(entrySize);
    }
  }
  for (let i = 0; i < outputs.length; i++) {
    const o = outputs[i]!;
    const nameLen = Buffer.byteLength(o.name);
    let shapeLen = 0;
    for (const d of o.shape) {
      if (!Number.isSafeInteger(d) || d < 0) {
        throw Errors.outputShape(o.name, o.shape);
      }
      shapeLen += varintSize(d);
    }
    let s = 0;
    if (nameLen > 0) s += fieldSize(nameLen);
    s += fieldSize(o.datatype.length);
    if (o.shape.length > 0) s += fieldSize(shapeLen);
    heads[i] = { name: o.name, nameLen, datatype: o.datatype, shapeLen, size: s };
    size += fieldSize(s);
  }
  p.size = size + rawContentsSize(outputs);
  return p;
}

function writeString(buf: Buffer, off: number, field: number, s: string, len: number): number {
  buf[off++] = tag(field, LEN);
  off = writeVarint(buf, off, len);
  return off + buf.write(s, off, 'utf8');
}

/** Writes the prepared response at `off`; returns the offset after it. */
export function writeResponse(buf: Buffer, off: number, p: PreparedResponse): number {
  if (p.modelNameLen > 0) off = writeString(buf, off, 1, p.modelName, p.modelNameLen);
  if (p.modelVersionLen > 0) off = writeString(buf, off, 2, p.modelVersion, p.modelVersionLen);
  if (p.idLen > 0) off = writeString(buf, off, 3, p.id, p.idLen);
  for (const e of p.entries) {
    buf[off++] = tag(4, LEN);
    off = writeVarint(buf, off, e.size);
    off = writeString(buf, off, 1, e.key, e.keyLen);
    buf[off++] = tag(2, LEN);
    off = writeVarint(buf, off, e.valueSize);
    off = writeParamBody(buf, off, e.value);
  }
  for (let i = 0; i < p.heads.length; i++) {
    const h = p.heads[i]!;
    buf[off++] = tag(5, LEN);
    off = writeVarint(buf, off, h.size);
    if (h.nameLen > 0) off = writeString(buf, off, 1, h.name, h.nameLen);
    off = writeString(buf, off, 2, h.datatype, h.datatype.length);
    const shape = p.outputs[i]!.shape;
    if (shape.length > 0) {
      buf[off++] = tag(3, LEN);
      off = writeVarint(buf, off, h.shapeLen);
      for (const d of shape) off = writeVarint(buf, off, d);
    }
  }
  return writeRawContents(buf, off, p.outputs);
}

/** The outputs' bytes as `raw_output_contents` at `off`; returns the offset after them. */
function writeRawContents(buf: Buffer, off: number, outputs: readonly Tensor[]): number {
  for (const o of outputs) {
    buf[off++] = tag(6, LEN);
    off = writeVarint(buf, off, o.data.length);
    off += o.data.copy(buf, off);
  }
  return off;
}

/** The byte length of the outputs' `raw_output_contents`. */
function rawContentsSize(outputs: readonly Tensor[]): number {
  let size = 0;
  for (const o of outputs) size += fieldSize(o.data.length);
  return size;
}

/**
 * A response's bytes before its raw contents, kept for the next response of the same form: a
 * client in a loop gets the same model and version, no id or parameters, and outputs of the same
 * names, datatypes and shapes every time, and those fields, written one string at a time (a
 * native call each), are all of the message but the outputs' bytes. Kept only for a response
 * without id or parameters; the outputs' bytes may differ in length (BYTES), as they follow
 * the kept part.
 */
export class RepeatedResponseHead {
  private constructor(
    private readonly head: Buffer,
    /** The outputs' byte sizes are not part of it: they follow the kept bytes. */
    readonly form: ResponseForm,
  ) {}

  /** The kept head of the response `buf` holds, written from `p`, of form `form` (none for a form never kept). */
  static of(buf: Buffer, p: PreparedResponse, form: ResponseForm | undefined): RepeatedResponseHead | undefined {
    if (form === undefined) return undefined;
    return new RepeatedResponseHead(Buffer.from(buf.subarray(0, p.size - rawContentsSize(p.outputs))), form);
  }

  /** The byte length of a response of this form with `outputs` (the form matched). */
  size(outputs: readonly Tensor[]): number {
    return this.head.length + rawContentsSize(outputs);
  }

  /** Writes the response of this form with `outputs` at `off` of `buf` (size() bytes); returns the offset after it. */
  write(buf: Buffer, off: number, outputs: readonly Tensor[]): number {
    off += this.head.copy(buf, off);
    return writeRawContents(buf, off, outputs);
  }
}
