/**
 * @module frontends/threads/wire-records
 * The binary form of what crosses between a frontend thread and the main thread on every
 * request: the request (`infer`), its response (`resp`), and the small notices about them
 * (`cancel`, `release`). A structured clone of those objects costs the receiving loop a
 * property-by-property rebuild (V8's ValueDeserializer was 14 % of the main thread's samples
 * with 2 HTTP threads, its serializer 7 % more); here the records of one event-loop turn are
 * written one after the other, their tensor bytes inline, and cross as one chunk of a ring in
 * shared memory (record-ring.ts), read back with a few DataView loads per field.
 *
 * Only the common shape is written: tensors held in memory (no client shared-memory region), at
 * most SMALL_RECORD_BYTES of them, integral dimensions, no error. Anything else returns false
 * with nothing written, and the caller posts the object on the link's port, leaving an `object`
 * record in its place so the reader takes it in order (outbox.ts).
 *
 * Layout (little endian), one record after the other:
 *
 *   infer: u8 1 | u32 no | u8 flags (1 outputs, 2 trace, 4 traceNo) | str model | str version
 *          | str id | params | [u32 trace] | [u32 traceNo] | [u16 n, n × (str name, params)]
 *          | tensors
 *   resp:  u8 2 | u32 no | u8 flags (1 final, 2 flagsOnly, 4 beforeModel, 8 hold, 16 params)
 *          | str model | str version | str id | [u32 hold] | [params] | tensors
 *   object: u8 3 (the next message of the link's port)
 *   cancel: u8 4 | u32 no          release: u8 5 | u32 hold
 *   str:     u32 byte length, UTF-8 bytes
 *   params:  u16 n, n × (str key, u8 tag, value): 0 false, 1 true, 2 f64, 3 str, 4 i64, 5 u64
 *   tensors: u16 n, n × (str name, str datatype, u8 ndim, ndim × u32, u32 length, pad to 8,
 *            bytes); the padding keeps each tensor 8-aligned for typed-array views
 */
import type { Datatype } from '../../core/datatype.js';
import type { InferRequest, InferResponse, ParamValue, Parameters, RequestedOutput } from '../../core/inference.js';
import { setParameter } from '../../core/request/parameters.js';
import { stringMemos, utf8 } from '../../core/string-memo.js';
import type { Tensor } from '../../core/tensor.js';
import type { InferMessage, ResponseMessage, WireTensor } from './wire.js';

/** Requests and responses whose tensors together reach this many bytes go as objects (their own buffer, no growth of the turn's). */
export const SMALL_RECORD_BYTES = 64 * 1024;

const INFER = 1;
const RESP = 2;
/** The next message of the link's port (outbox.ts): something records do not carry, in its place. */
const OBJECT = 3;
const CANCEL = 4;
const RELEASE = 5;
/** A turn's buffer larger than this after a burst is not kept for the next turn. */
const KEPT_BYTES = 1 << 20;

/**
 * The records of one turn, in a buffer kept from turn to turn: outbox.ts copies them into the
 * ring (record-ring.ts) as one chunk and clears it.
 */
export class RecordWriter {
  private buf: Buffer | undefined;
  private view!: DataView;
  pos = 0;

  /** Bytes written since the last clear(). */
  get length(): number {
    return this.pos;
  }

  /** What was written since the last clear() (a view: copy it before the next write). */
  written(): Uint8Array {
    return this.buf === undefined ? new Uint8Array(0) : this.buf.subarray(0, this.pos);
  }

  /** Starts the next turn's records; a buffer grown far past the usual turn is let go. */
  clear(): void {
    this.pos = 0;
    if (this.buf !== undefined && this.buf.length > KEPT_BYTES) this.buf = undefined;
  }

  /** Room for n more bytes. */
  ensure(n: number): void {
    const need = this.pos + n;
    const buf = this.buf;
    if (buf !== undefined && need <= buf.length) return;
    let size = buf === undefined ? 4096 : buf.length * 2;
    while (size < need) size *= 2;
    // allocUnsafeSlow: an ArrayBuffer of its own, not a slice of the pool, not zeroed.
    const next = Buffer.allocUnsafeSlow(size);
    if (buf !== undefined) buf.copy(next, 0, 0, this.pos);
    this.buf = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.length);
  }

  u8(v: number): void {
    this.ensure(1);
    this.buf![this.pos++] = v;
  }

  u16(v: number): void {
    this.ensure(2);
    this.view.setUint16(this.pos, v, true);
    this.pos += 2;
  }

  /** Overwrites the u32 at `at` (written before). */
  setU32(at: number, v: number): void {
    this.view.setUint32(at, v, true);
  }

  u32(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.pos, v, true);
    this.pos += 4;
  }

  f64(v: number): void {
    this.ensure(8);
    this.view.setFloat64(this.pos, v, true);
    this.pos += 8;
  }

  i64(v: bigint, unsigned: boolean): void {
    this.ensure(8);
    if (unsigned) this.view.setBigUint64(this.pos, v, true);
    else this.view.setBigInt64(this.pos, v, true);
    this.pos += 8;
  }

  str(s: string): void {
    const n = s.length;
    this.ensure(4 + n);
    const buf = this.buf!;
    let p = this.pos + 4;
    // Names, datatypes and ids are nearly always ASCII: written by hand, without Buffer.write's call.
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        this.ensure(4 + n * 3);
        const written = this.buf!.write(s, this.pos + 4, 'utf8');
        this.view.setUint32(this.pos, written, true);
        this.pos += 4 + written;
        return;
      }
      buf[p++] = c;
    }
    this.view.setUint32(this.pos, n, true);
    this.pos = p;
  }

  bytes(data: Buffer): void {
    this.ensure(data.length + 7);
    this.pos = (this.pos + 7) & ~7;
    data.copy(this.buf!, this.pos);
    this.pos += data.length;
  }
}

/**
 * Places of `RecordReader.name`'s strings: model name and version, 8 parameter keys, 8 tensors'
 * names and datatypes, 8 requested outputs, and 8 keys of their parameters (shared by the outputs).
 */
const PLACE_MODEL = 0;
const PLACE_VERSION = 1;
const PLACE_KEY = 2;
const PLACE_TENSOR = 10;
const PLACE_OUTPUT = 26;
const PLACE_OUTPUT_KEY = 34;
const MEMO_PLACES = 42;
/** The string last read at each place, in this thread (a module's state is its thread's). */
const memos = stringMemos(MEMO_PLACES);

/** Reads the records of one chunk. */
class RecordReader {
  private readonly view: DataView;
  private readonly buf: Buffer;
  pos: number;

  constructor(
    readonly array: ArrayBuffer,
    start: number,
    readonly end: number,
  ) {
    this.buf = Buffer.from(array);
    this.view = new DataView(array);
    this.pos = start;
  }

  u8(): number {
    return this.buf[this.pos++]!;
  }

  u16(): number {
    const v = this.view.getUint16(this.pos, true);
    this.pos += 2;
    return v;
  }

  u32(): number {
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }

  /** Steps over a string's length and bytes; returns where its bytes start (they end at `pos`). */
  private strSpan(): number {
    const n = this.u32();
    const start = this.pos;
    this.pos = start + n;
    return start;
  }

  str(): string {
    const start = this.strSpan();
    return utf8(this.buf, start, this.pos);
  }

  /**
   * A string that is usually the one read at the same place of the last record (a model's name,
   * a tensor's name or datatype, a parameter's key): see core/string-memo.
   */
  name(place: number): string {
    const start = this.strSpan();
    return memos[place]!.read(this.buf, start, this.pos);
  }

  params(place: number): Parameters {
    const n = this.u16();
    const out: Parameters = {};
    for (let i = 0; i < n; i++) {
      const key = i < 8 ? this.name(place + i) : this.str();
      const tag = this.u8();
      let v: ParamValue;
      switch (tag) {
        case 0:
          v = false;
          break;
        case 1:
          v = true;
          break;
        case 2:
          v = this.view.getFloat64(this.pos, true);
          this.pos += 8;
          break;
        case 3:
          v = this.str();
          break;
        default:
          v = tag === 4 ? this.view.getBigInt64(this.pos, true) : this.view.getBigUint64(this.pos, true);
          this.pos += 8;
      }
      setParameter(out, key, v);
    }
    return out;
  }

  tensors(): WireTensor[] {
    const n = this.u16();
    const out: WireTensor[] = [];
    for (let i = 0; i < n; i++) {
      const name = i < 8 ? this.name(PLACE_TENSOR + 2 * i) : this.str();
      const datatype = (i < 8 ? this.name(PLACE_TENSOR + 2 * i + 1) : this.str()) as Datatype;
      const ndim = this.u8();
      const shape: number[] = [];
      for (let d = 0; d < ndim; d++) shape.push(this.u32());
      const length = this.u32();
      const offset = (this.pos + 7) & ~7;
      this.pos = offset + length;
      out.push({ name, datatype, shape, offset, length });
    }
    return out;
  }
}

/** Whether the tensors can go in a record: in memory, small together, integral dimensions. */
function recordable(tensors: readonly Tensor[]): boolean {
  let total = 0;
  for (let i = 0; i < tensors.length; i++) {
    const t = tensors[i]!;
    if (t.shm !== undefined || t.shape.length > 255) return false;
    for (let d = 0; d < t.shape.length; d++) {
      const v = t.shape[d]!;
      if (!(v >= 0 && v <= 0xffffffff && Number.isInteger(v))) return false;
    }
    total += t.data.length;
  }
  return total < SMALL_RECORD_BYTES && tensors.length <= 0xffff;
}

function writeTensors(w: RecordWriter, tensors: readonly Tensor[]): void {
  w.u16(tensors.length);
  for (let i = 0; i < tensors.length; i++) {
    const t = tensors[i]!;
    w.str(t.name);
    w.str(t.datatype);
    w.u8(t.shape.length);
    for (let d = 0; d < t.shape.length; d++) w.u32(t.shape[d]!);
    w.u32(t.data.length);
    w.bytes(t.data);
  }
}

const INT64_MIN = -(2n ** 63n);
const UINT64_MIN = 2n ** 63n;
const UINT64_MAX = 2n ** 64n - 1n;

/** False (having written part of them: the caller rewinds) when a value has no tag. */
function writeParams(w: RecordWriter, p: Parameters): boolean {
  const keys = Object.keys(p);
  if (keys.length > 0xffff) return false;
  w.u16(keys.length);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const v = p[key];
    w.str(key);
    switch (typeof v) {
      case 'boolean':
        w.u8(v ? 1 : 0);
        break;
      case 'number':
        w.u8(2);
        w.f64(v);
        break;
      case 'string':
        w.u8(3);
        w.str(v);
        break;
      case 'bigint':
        if (v < INT64_MIN || v > UINT64_MAX) return false;
        // Past int64's range only as uint64 (5), which protobuf's uint64 parameters can reach.
        w.u8(v < UINT64_MIN ? 4 : 5);
        w.i64(v, v >= UINT64_MIN);
        break;
      default:
        return false;
    }
  }
  return true;
}

function writeOutputs(w: RecordWriter, outputs: readonly RequestedOutput[]): boolean {
  if (outputs.length > 0xffff) return false;
  w.u16(outputs.length);
  for (let i = 0; i < outputs.length; i++) {
    const o = outputs[i]!;
    w.str(o.name);
    if (!writeParams(w, o.parameters)) return false;
  }
  return true;
}

/** A frontend thread's request as a record; false, with nothing written, when it must go as an object. */
export function writeInferRecord(w: RecordWriter, no: number, r: InferRequest, trace: number | undefined): boolean {
  if (!recordable(r.inputs)) return false;
  const start = w.pos;
  w.u8(INFER);
  w.u32(no);
  w.u8((r.outputs !== undefined ? 1 : 0) | (trace !== undefined ? 2 : 0) | (r.traceNo !== undefined ? 4 : 0));
  w.str(r.modelName);
  w.str(r.modelVersion);
  w.str(r.id);
  let ok = writeParams(w, r.parameters);
  if (ok && trace !== undefined) w.u32(trace);
  if (ok && r.traceNo !== undefined) w.u32(r.traceNo);
  if (ok && r.outputs !== undefined) ok = writeOutputs(w, r.outputs);
  if (!ok) {
    w.pos = start;
    return false;
  }
  writeTensors(w, r.inputs);
  return true;
}

/** What the main thread adds to a response it sends back (core-host.ts). */
export interface ResponseExtras {
  beforeModel: boolean;
  hold: number | undefined;
}

/** A response to a frontend thread as a record; false, with nothing written, when it must go as an object. */
export function writeResponseRecord(w: RecordWriter, no: number, r: InferResponse, x: ResponseExtras): boolean {
  if (r.error !== undefined || !recordable(r.outputs)) return false;
  const start = w.pos;
  w.u8(RESP);
  w.u32(no);
  w.u8((r.final ? 1 : 0) | (r.flagsOnly ? 2 : 0) | (x.beforeModel ? 4 : 0) | (x.hold !== undefined ? 8 : 0) | (r.parameters !== undefined ? 16 : 0));
  w.str(r.modelName);
  w.str(r.modelVersion);
  w.str(r.id);
  if (x.hold !== undefined) w.u32(x.hold);
  if (r.parameters !== undefined && !writeParams(w, r.parameters)) {
    w.pos = start;
    return false;
  }
  writeTensors(w, r.outputs);
  return true;
}

/** Small notices that travel as records too, in order with the requests and responses. */
export function writeObjectRecord(w: RecordWriter): void {
  w.u8(OBJECT);
}

/** Thread → main: the client of request `no` went away. */
export function writeCancelRecord(w: RecordWriter, no: number): void {
  w.u8(CANCEL);
  w.u32(no);
}

/** Thread → main: the stub blocks behind a held or lent response may go back (wire.ts, `hold`). */
export function writeReleaseRecord(w: RecordWriter, hold: number): void {
  w.u8(RELEASE);
  w.u32(hold);
}

/** What a reader does with each kind of record; a kind its side never receives is left out. */
export interface RecordHandler {
  infer?(m: InferMessage): void;
  resp?(m: ResponseMessage): void;
  cancel?(no: number): void;
  release?(hold: number): void;
  /** An OBJECT record: the next message of the link's port stands here. */
  object(): void;
}

/** The records in `array`'s bytes [start, end), each handed to `h` as the message it stands for. */
export function readRecords(array: ArrayBuffer, start: number, end: number, h: RecordHandler): void {
  const r = new RecordReader(array, start, end);
  while (r.pos < end) {
    const kind = r.u8();
    if (kind === INFER && h.infer !== undefined) h.infer(readInfer(r, array));
    else if (kind === RESP && h.resp !== undefined) h.resp(readResponse(r, array));
    else if (kind === OBJECT) h.object();
    else if (kind === CANCEL && h.cancel !== undefined) h.cancel(r.u32());
    else if (kind === RELEASE && h.release !== undefined) h.release(r.u32());
    else throw new Error(`frontend thread record: unexpected kind ${kind}`);
  }
}

function readInfer(r: RecordReader, array: ArrayBuffer): InferMessage {
  const no = r.u32();
  const flags = r.u8();
  const modelName = r.name(PLACE_MODEL);
  const modelVersion = r.name(PLACE_VERSION);
  const id = r.str();
  const parameters = r.params(PLACE_KEY);
  const trace = flags & 2 ? r.u32() : undefined;
  const traceNo = flags & 4 ? r.u32() : undefined;
  let outputs: RequestedOutput[] | undefined;
  if (flags & 1) {
    outputs = [];
    const n = r.u16();
    for (let i = 0; i < n; i++) outputs.push({ name: i < 8 ? r.name(PLACE_OUTPUT + i) : r.str(), parameters: r.params(PLACE_OUTPUT_KEY) });
  }
  const m: InferMessage = { t: 'infer', no, modelName, modelVersion, id, parameters, inputs: r.tensors(), bytes: array };
  if (outputs !== undefined) m.outputs = outputs;
  if (trace !== undefined) m.trace = trace;
  if (traceNo !== undefined) m.traceNo = traceNo;
  return m;
}

function readResponse(r: RecordReader, array: ArrayBuffer): ResponseMessage {
  const no = r.u32();
  const flags = r.u8();
  const modelName = r.name(PLACE_MODEL);
  const modelVersion = r.name(PLACE_VERSION);
  const id = r.str();
  const hold = flags & 8 ? r.u32() : undefined;
  const parameters = flags & 16 ? r.params(PLACE_KEY) : undefined;
  const m: ResponseMessage = { t: 'resp', no, modelName, modelVersion, id, outputs: r.tensors(), bytes: array, final: (flags & 1) !== 0 };
  if (parameters !== undefined) m.parameters = parameters;
  if (flags & 2) m.flagsOnly = true;
  if (flags & 4) m.beforeModel = true;
  if (hold !== undefined) m.hold = hold;
  return m;
}
