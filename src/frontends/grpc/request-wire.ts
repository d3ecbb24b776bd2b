/**
 * @module frontends/grpc/request-wire
 * Reads the common shape of a `ModelInferRequest` straight off the wire: model name, version,
 * id, request parameters, inputs with name, datatype and shape, requested outputs by name, and
 * `raw_input_contents` (views of the received message, never copied). That is what
 * tritonclient and perf_analyzer send for every inference (perf_analyzer sets the request
 * parameter `triton_enable_empty_final_response` on every gRPC request).
 *
 * Anything else (input or output `parameters`, typed `contents`, an unknown field, a string
 * that is not UTF-8, a malformed varint, a parameter entry of unusual form) makes it return
 * undefined, and the caller decodes the message with protobuf-es' `fromBinary` instead, so
 * the two paths can never disagree: the fast one only ever produces what `fromBinary` would.
 * The reflective decoder cost about 5 % of the server's CPU per small request
 * (docs/benchmarks.md).
 *
 * Field numbers are those of `proto/grpc_service.proto`:
 *   ModelInferRequest:  1 model_name, 2 model_version, 3 id, 4 parameters, 5 inputs, 6 outputs,
 *                       7 raw_input_contents
 *   InferInputTensor:   1 name, 2 datatype, 3 shape (int64, packed or not), 4 parameters, 5 contents
 *   InferRequestedOutputTensor: 1 name, 2 parameters
 *   map<string, InferParameter> entry: 1 key, 2 value
 *   InferParameter (one of): 1 bool_param, 2 int64_param, 3 string_param, 4 double_param, 5 uint64_param
 */
import { isUtf8 } from 'node:buffer';
import { StringMemo, stringMemos } from '../../core/string-memo.js';
import type {
  InferParameter,
  ModelInferRequest,
  ModelInferRequest_InferInputTensor,
  ModelInferRequest_InferRequestedOutputTensor,
} from '../../generated/grpc_service_pb.js';

const VARINT = 0;
const I64 = 1;
const LEN = 2;

/** Bails out of the fast path: the message is left to `fromBinary`. */
class NotSimple extends Error {}
const NOT_SIMPLE = new NotSimple();

class Reader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  /** An unsigned varint below 2^32 (tags and lengths). */
  uint32(): number {
    const buf = this.buf;
    let result = 0;
    let shift = 0;
    for (;;) {
      if (this.pos >= this.end || shift > 28) throw NOT_SIMPLE;
      const b = buf[this.pos++]!;
      result += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return result;
      shift += 7;
    }
  }

  /** An int64 varint (two's complement over 10 bytes for negatives). */
  int64(): bigint {
    return BigInt.asIntN(64, this.varint());
  }

  /** A uint64 varint. */
  uint64(): bigint {
    return BigInt.asUintN(64, this.varint());
  }

  /** A varint of at most 10 bytes, unmasked (up to 70 bits): the callers keep their 64. */
  private varint(): bigint {
    const buf = this.buf;
    // Shapes and parameters fit in 7 bytes (49 bits, exact in a double): one BigInt at the end
    // instead of BigInt arithmetic per byte. Longer ones take the exact path below.
    const start = this.pos;
    let small = 0;
    let scale = 1;
    for (let i = 0; i < 7 && this.pos < this.end; i++) {
      const b = buf[this.pos++]!;
      small += (b & 0x7f) * scale;
      if (b < 0x80) return BigInt(small);
      scale *= 128;
    }
    this.pos = start;
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw NOT_SIMPLE;
      const b = buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return result;
      shift += 7n;
    }
    throw NOT_SIMPLE;
  }

  /** A little-endian double (wire type I64). */
  double(): number {
    if (this.end - this.pos < 8) throw NOT_SIMPLE;
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  /** Where the last span() ends. */
  spanEnd = 0;

  /** The start of a length-delimited field's bytes; its end is left in `spanEnd` (no pair allocated). */
  span(): number {
    const n = this.uint32();
    const start = this.pos;
    if (n > this.end - start) throw NOT_SIMPLE;
    this.pos = this.spanEnd = start + n;
    return start;
  }

  /**
   * A string field. With `memo`, the last string read at that place of the message: clients
   * send the same names with every request, so a repeat costs a byte comparison and allocates
   * neither a view nor a string.
   */
  string(memo?: StringMemo): string {
    const s = this.span();
    const e = this.spanEnd;
    if (e === s) return '';
    const buf = this.buf;
    const same = memo?.match(buf, s, e);
    if (same !== undefined) return same;
    const view = buf.subarray(s, e);
    if (!isUtf8(view)) throw NOT_SIMPLE;
    const text = view.toString('utf8');
    memo?.remember(buf, s, e, text);
    return text;
  }
}

/** Memos for the places clients repeat: names, datatypes and parameter keys, by position. */
const MEMO_SLOTS = 16;
const MODEL_NAME = new StringMemo();
const MODEL_VERSION = new StringMemo();
const INPUT_NAMES = stringMemos(MEMO_SLOTS);
const INPUT_DATATYPES = stringMemos(MEMO_SLOTS);
const OUTPUT_NAMES = stringMemos(MEMO_SLOTS);
const PARAMETER_KEYS = stringMemos(MEMO_SLOTS);

/** Items a Gathered list keeps room for between messages (more than any usual request has). */
const GATHERED_KEPT = 64;

/**
 * A list read from a message, gathered here and copied out at its final length: an array grown
 * by push from empty gets room for 16 or more items at its first push, which for the three
 * lists and the shapes of every request was a tenth of what a gRPC request allocated. Copying
 * out clears the gathered references, so nothing here keeps a request's buffer alive.
 */
class Gathered<T> {
  private items: Array<T | undefined> = [];
  private n = 0;

  get length(): number {
    return this.n;
  }

  add(v: T): void {
    this.items[this.n++] = v;
  }

  /** The items added since the last take() or clear(), in a new array of their number. */
  take(): T[] {
    const n = this.n;
    const out = new Array<T>(n);
    for (let i = 0; i < n; i++) {
      out[i] = this.items[i]!;
    }
    this.clear();
    return out;
  }

  /** Forgets what was added (a message that turned out not to be simple). */
  clear(): void {
    // A message with many items leaves no large array behind for the life of the server.
    if (this.items.length > GATHERED_KEPT) this.items = [];
    else for (let i = 0; i < this.n; i++) this.items[i] = undefined;
    this.n = 0;
  }
}

const INPUTS = new Gathered<ModelInferRequest_InferInputTensor>();
const OUTPUTS = new Gathered<ModelInferRequest_InferRequestedOutputTensor>();
const RAW_CONTENTS = new Gathered<Uint8Array>();
const SHAPE = new Gathered<bigint>();

function readInput(buf: Buffer, start: number, end: number, at: number): ModelInferRequest_InferInputTensor {
  let name = '';
  let datatype = '';
  const shape = SHAPE;
  shape.clear();
  const r = new Reader(buf, start, end);
  while (r.pos < end) {
    const tag = r.uint32();
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 1 && wire === LEN) name = r.string(INPUT_NAMES[at]);
    else if (field === 2 && wire === LEN) datatype = r.string(INPUT_DATATYPES[at]);
    else if (field === 3 && wire === LEN) {
      const s = r.span();
      const e = r.spanEnd;
      const packed = new Reader(buf, s, e);
      while (packed.pos < e) shape.add(packed.int64());
    } else if (field === 3 && wire === VARINT) shape.add(r.int64());
    else throw NOT_SIMPLE;
  }
  return {
    $typeName: 'inference.ModelInferRequest.InferInputTensor',
    name,
    datatype,
    shape: shape.take(),
    parameters: {},
  } as ModelInferRequest_InferInputTensor;
}

/**
 * One `map<string, InferParameter>` entry into `into`: the common form only, a key then a value
 * holding exactly one choice (what every client writes); anything else goes to fromBinary.
 */
function readParameterEntry(buf: Buffer, start: number, end: number, into: Record<string, InferParameter>, at: number): void {
  const r = new Reader(buf, start, end);
  if (r.uint32() !== ((1 << 3) | LEN)) throw NOT_SIMPLE;
  const key = r.string(PARAMETER_KEYS[at]);
  // fromBinary makes `__proto__` an own property; a plain store would set the prototype.
  if (key === '__proto__') throw NOT_SIMPLE;
  if (r.uint32() !== ((2 << 3) | LEN)) throw NOT_SIMPLE;
  const s = r.span();
  const e = r.spanEnd;
  if (r.pos !== end) throw NOT_SIMPLE;
  const v = new Reader(buf, s, e);
  const tag = v.uint32();
  let choice: InferParameter['parameterChoice'];
  switch (tag) {
    case (1 << 3) | VARINT: {
      // protobuf-es reads any nonzero varint as true; only the two one-byte forms are taken here.
      const b = v.uint32();
      if (b > 1 || v.pos !== s + 2) throw NOT_SIMPLE;
      choice = { case: 'boolParam', value: b === 1 };
      break;
    }
    case (2 << 3) | VARINT:
      choice = { case: 'int64Param', value: v.int64() };
      break;
    case (3 << 3) | LEN:
      choice = { case: 'stringParam', value: v.string() };
      break;
    case (4 << 3) | I64:
      choice = { case: 'doubleParam', value: v.double() };
      break;
    case (5 << 3) | VARINT:
      choice = { case: 'uint64Param', value: v.uint64() };
      break;
    default:
      throw NOT_SIMPLE;
  }
  if (v.pos !== e) throw NOT_SIMPLE;
  into[key] = { $typeName: 'inference.InferParameter', parameterChoice: choice } as InferParameter;
}

function readOutput(buf: Buffer, start: number, end: number, at: number): ModelInferRequest_InferRequestedOutputTensor {
  let name = '';
  const r = new Reader(buf, start, end);
  while (r.pos < end) {
    if (r.uint32() !== ((1 << 3) | LEN)) throw NOT_SIMPLE;
    name = r.string(OUTPUT_NAMES[at]);
  }
  return { $typeName: 'inference.ModelInferRequest.InferRequestedOutputTensor', name, parameters: {} } as ModelInferRequest_InferRequestedOutputTensor;
}

/** Where a message's parts lie, for a reader that keeps a message (repeated-request.ts). */
export interface MessageLayout {
  /**
   * Where its `raw_input_contents` begin when they come last, after every other field (as
   * protobuf writers put them, in field order), else -1; the message's length without any.
   */
  rawStart: number;
}

/**
 * The request, or undefined when it uses anything beyond the common shape (see above); with
 * `layout`, where its raw contents begin.
 */
export function readSimpleInferRequest(buf: Buffer, layout?: MessageLayout): ModelInferRequest | undefined {
  try {
    const r = new Reader(buf, 0, buf.length);
    let rawStart = -1;
    let rawLast = true;
    let modelName = '';
    let modelVersion = '';
    let id = '';
    const parameters: Record<string, InferParameter> = {};
    let parameterCount = 0;
    const inputs = INPUTS;
    const outputs = OUTPUTS;
    const rawInputContents = RAW_CONTENTS;
    inputs.clear();
    outputs.clear();
    rawInputContents.clear();
    while (r.pos < r.end) {
      const at = r.pos;
      const tag = r.uint32();
      if ((tag & 7) !== LEN) throw NOT_SIMPLE;
      const field = tag >>> 3;
      if (field === 7) {
        if (rawStart < 0) rawStart = at;
      } else if (rawStart >= 0) rawLast = false;
      switch (field) {
        case 1:
          modelName = r.string(MODEL_NAME);
          break;
        case 2:
          modelVersion = r.string(MODEL_VERSION);
          break;
        case 3:
          id = r.string();
          break;
        case 4: {
          const s = r.span();
          readParameterEntry(buf, s, r.spanEnd, parameters, parameterCount++);
          break;
        }
        case 5: {
          const s = r.span();
          inputs.add(readInput(buf, s, r.spanEnd, inputs.length));
          break;
        }
        case 6: {
          const s = r.span();
          outputs.add(readOutput(buf, s, r.spanEnd, outputs.length));
          break;
        }
        case 7: {
          const s = r.span();
          rawInputContents.add(buf.subarray(s, r.spanEnd));
          break;
        }
        default:
          throw NOT_SIMPLE;
      }
    }
    if (layout !== undefined) layout.rawStart = !rawLast ? -1 : rawStart < 0 ? buf.length : rawStart;
    return {
      $typeName: 'inference.ModelInferRequest',
      modelName,
      modelVersion,
      id,
      parameters,
      inputs: inputs.take(),
      outputs: outputs.take(),
      rawInputContents: rawInputContents.take(),
    } as ModelInferRequest;
  } catch (err) {
    INPUTS.clear();
    OUTPUTS.clear();
    RAW_CONTENTS.clear();
    SHAPE.clear();
    if (err === NOT_SIMPLE) return undefined;
    throw err;
  }
}
