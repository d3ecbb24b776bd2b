/**
 * @module frontends/http/infer-header-reader
 * The JSON header of an `/infer` request with binary tensors, read straight from its bytes. It is
 * what perf_analyzer and tritonclient send with every request:
 *
 *   {"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"INT32","parameters":{"binary_data_size":64}},…],
 *    "outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}},…]}
 *
 * and the general path spent about an eighth of the server's CPU on it under load (UTF-8 check,
 * depth scan, string copy, `JSON.parse` building objects, then walking them). This reader knows
 * that one shape: keys in any order, no escapes, ASCII strings, unsigned integers of up to 15
 * digits, `binary_data_output` the only request parameter and `binary_data` the only output
 * parameter. A header of any other form — JSON `data`, shared memory, classification, other
 * parameters, a duplicate key, a number with a sign or fraction, an error of any kind — returns
 * undefined and goes through infer-request.ts as before, so every refusal and every unusual form
 * keeps one implementation. What an accepted header yields equals what the general path builds,
 * field for field (test/http/infer-header-reader.test.ts compares the two). A header a model
 * saw twice in a row is kept (RepeatedHeader, seenTwice): the next ones with the same bytes are
 * not read again.
 */
import type { Datatype } from '../../core/datatype.js';
import { isDatatype } from '../../core/datatype.js';
import type { InferRequest, RequestedOutput } from '../../core/inference.js';
import { LastBytes, type StringMemo, stringMemos, utf8 } from '../../core/string-memo.js';
import type { Tensor } from '../../core/tensor.js';
import type { OutputChoice, OutputPlan, ParsedInferRequest } from './infer-plan.js';

/** Thrown inside the reader where the header leaves the usual shape; never leaves this module. */
const UNUSUAL = new Error('infer header of an unusual shape');

const EMPTY = Buffer.alloc(0);

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_SQUARE = 0x5b;
const CLOSE_SQUARE = 0x5d;
const OPEN_CURLY = 0x7b;
const CLOSE_CURLY = 0x7d;
const ZERO = 0x30;
const NINE = 0x39;

/** Memos by place (core/string-memo): model inputs' names and datatypes, outputs' names. */
const MEMO_SLOTS = 16;
const INPUT_NAMES = stringMemos(MEMO_SLOTS);
const INPUT_DATATYPES = stringMemos(MEMO_SLOTS);
const OUTPUT_NAMES = stringMemos(MEMO_SLOTS);

/** The keys the reader knows, as codes. */
const K_INPUTS = 1;
const K_OUTPUTS = 2;
const K_ID = 3;
const K_PARAMETERS = 4;
const K_NAME = 5;
const K_DATATYPE = 6;
const K_SHAPE = 7;
const K_BINARY_DATA_SIZE = 8;
const K_BINARY_DATA = 9;
const K_BINARY_DATA_OUTPUT = 10;
/** The known keys by byte length (each length has one), with their codes. */
const KEY_BY_LENGTH: ({ code: number; bytes: Buffer } | undefined)[] = [];
for (const [code, text] of [
  [K_INPUTS, 'inputs'],
  [K_OUTPUTS, 'outputs'],
  [K_ID, 'id'],
  [K_PARAMETERS, 'parameters'],
  [K_NAME, 'name'],
  [K_DATATYPE, 'datatype'],
  [K_SHAPE, 'shape'],
  [K_BINARY_DATA_SIZE, 'binary_data_size'],
  [K_BINARY_DATA, 'binary_data'],
  [K_BINARY_DATA_OUTPUT, 'binary_data_output'],
] as const) {
  if (KEY_BY_LENGTH[text.length] !== undefined) throw new Error(`two known keys of ${text.length} bytes`);
  KEY_BY_LENGTH[text.length] = { code, bytes: Buffer.from(text) };
}

/**
 * The request in `body`, whose first `headerLength` bytes are its JSON header, when the header
 * has the usual shape and the binary part holds exactly the bytes it announces; else undefined.
 */
export function readUsualInferHeader(body: Buffer, headerLength: number, modelName: string, modelVersion: string): ParsedInferRequest | undefined {
  const last = REPEATED.get(modelName);
  if (last?.matches(body, headerLength, modelName, modelVersion)) return last.build(body, headerLength);
  const r = READER;
  r.b = body;
  r.pos = 0;
  r.end = headerLength;
  try {
    const parsed = r.readDocument(modelName, modelVersion);
    // Kept only without an id (ids usually differ from one request to the next), and only the
    // second time in a row the model sees it: a client whose headers change every request
    // (shapes that vary) then pays a copy of the bytes, not the memo's objects, per request.
    if (headerLength <= REPEAT_MAX_BYTES && parsed.request.id === '' && seenTwice(body, headerLength, modelName)) {
      if (REPEATED.size >= REPEAT_MODELS && !REPEATED.has(modelName)) REPEATED.clear();
      REPEATED.set(modelName, new RepeatedHeader(body, headerLength, modelName, modelVersion, parsed, r.sizes));
    }
    return parsed;
  } catch (err) {
    if (err === UNUSUAL) return undefined;
    throw err;
  } finally {
    r.b = EMPTY;
  }
}

/** Headers up to this long are kept for the next request (RepeatedHeader). */
const REPEAT_MAX_BYTES = 2048;
/** Models whose last header is kept at once; past it the memo starts again. */
const REPEAT_MODELS = 64;

/**
 * A model's last header read, to answer its next request whose header has the same bytes
 * without reading it again: a client sends the same header for every request of the same shapes
 * (perf_analyzer, tritonclient in a loop), and comparing ≈ 200 bytes costs a fraction of reading
 * them (bench/header-repeat.mjs). What it builds equals what readDocument builds from those
 * bytes, as fresh objects: the core may keep or change a request's, never the memo's. Kept per
 * model, so that clients of different models do not take turns replacing it; per thread, like
 * READER.
 */
class RepeatedHeader {
  private readonly header: Buffer;
  private readonly inputs: ReadonlyArray<{ name: string; datatype: Datatype; shape: readonly number[]; size: number }>;
  private readonly outputs: ReadonlyArray<{ name: string; binary: boolean | undefined }> | undefined;
  /**
   * The output plan, one object for every request built here: it belongs to the HTTP layer (the
   * core never sees it), which only reads it, and it carries the last response's JSON header
   * (infer-response.ts, RepeatedResponseHeader) for the next response of the same form.
   */
  private readonly plan: OutputPlan;
  /** The request parameter `binary_data_output`, if the header had it (else the parameters are `{}`). */
  private readonly binaryDataOutput: boolean | undefined;
  private readonly dataBytes: number;

  constructor(
    body: Buffer,
    headerLength: number,
    private readonly modelName: string,
    private readonly modelVersion: string,
    parsed: ParsedInferRequest,
    sizes: readonly number[],
  ) {
    this.header = Buffer.from(body.subarray(0, headerLength));
    const { request, plan } = parsed;
    let dataBytes = 0;
    this.inputs = request.inputs.map((t, i) => {
      dataBytes += sizes[i]!;
      return { name: t.name, datatype: t.datatype, shape: t.shape.slice(), size: sizes[i]! };
    });
    this.dataBytes = dataBytes;
    this.outputs = request.outputs?.map((o) => ({ name: o.name, binary: o.parameters.binary_data as boolean | undefined }));
    // The usual header asks for no classification, so the plan has nothing the handler fills in.
    this.plan = { defaultBinary: plan.defaultBinary, requested: plan.requested && new Map(plan.requested), repeated: true };
    this.binaryDataOutput = request.parameters.binary_data_output as boolean | undefined;
  }

  /** Whether `body`'s header is this one's, byte for byte, for the same model and version. */
  matches(body: Buffer, headerLength: number, modelName: string, modelVersion: string): boolean {
    const h = this.header;
    return (
      headerLength === h.length &&
      modelName === this.modelName &&
      modelVersion === this.modelVersion &&
      body.length === headerLength + this.dataBytes &&
      body.compare(h, 0, headerLength, 0, headerLength) === 0
    );
  }

  /** The request of `body`, whose header matches(): readDocument's result, built without reading. */
  build(body: Buffer, headerLength: number): ParsedInferRequest {
    const tpl = this.inputs;
    const inputs: Tensor[] = new Array(tpl.length);
    let offset = headerLength;
    for (let i = 0; i < tpl.length; i++) {
      const t = tpl[i]!;
      inputs[i] = { name: t.name, datatype: t.datatype, shape: t.shape.slice(), data: body.subarray(offset, offset + t.size) };
      offset += t.size;
    }
    const request: InferRequest = { modelName: this.modelName, modelVersion: this.modelVersion, id: '', parameters: this.parameters(), inputs };
    const outs = this.outputs;
    if (outs !== undefined) {
      const outputs: RequestedOutput[] = new Array(outs.length);
      for (let i = 0; i < outs.length; i++) {
        const { name, binary } = outs[i]!;
        outputs[i] = { name, parameters: binary === undefined ? {} : { binary_data: binary } };
      }
      request.outputs = outputs;
    }
    return { request, plan: this.plan };
  }

  private parameters(): InferRequest['parameters'] {
    const v = this.binaryDataOutput;
    return v === undefined ? {} : { binary_data_output: v };
  }
}

/** By model name (see RepeatedHeader). */
const REPEATED = new Map<string, RepeatedHeader>();

/** By model name: the bytes of the last header read and not kept (see seenTwice). */
const SEEN = new Map<string, LastBytes>();

/**
 * Whether `body`'s header (of `headerLength` ≤ REPEAT_MAX_BYTES bytes) has the bytes of the
 * model's last header read; if not, its bytes become the model's last, copied into a buffer
 * the model keeps (no allocation per request). Bounded like REPEATED.
 */
function seenTwice(body: Buffer, headerLength: number, modelName: string): boolean {
  let seen = SEEN.get(modelName);
  if (seen === undefined) {
    if (SEEN.size >= REPEAT_MODELS) SEEN.clear();
    seen = new LastBytes(REPEAT_MAX_BYTES);
    SEEN.set(modelName, seen);
  } else if (seen.equals(body, 0, headerLength)) {
    return true;
  }
  seen.keep(body, 0, headerLength);
  return false;
}

/** More inputs than this is not the usual shape (and `sizes` stays small). */
const MAX_INPUTS = 64;

const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');

/** The header being read; one per thread, reused (a module's state is its thread's). */
class HeaderReader {
  b: Buffer = EMPTY;
  pos = 0;
  end = 0;
  /** Where the last string read by span() ends (its closing quote). */
  spanEnd = 0;
  /** The `binary_data_size` of each input read, by position. */
  readonly sizes: number[] = [];

  /** The whole body `b`: its header `b[0, end)` and the binary part after it. */
  readDocument(modelName: string, modelVersion: string): ParsedInferRequest {
    const body = this.b;
    const headerLength = this.end;
    const plan: OutputPlan = { defaultBinary: false };
    let id = '';
    let sawId = false;
    let parameters: InferRequest['parameters'] | undefined;
    let inputs: Tensor[] | undefined;
    let outputs: RequestedOutput[] | undefined;
    this.expect(OPEN_CURLY);
    do {
      switch (this.key()) {
        case K_INPUTS:
          if (inputs !== undefined) throw UNUSUAL;
          inputs = this.readInputs();
          break;
        case K_OUTPUTS:
          if (outputs !== undefined) throw UNUSUAL;
          outputs = this.readOutputs(plan);
          break;
        case K_ID: {
          if (sawId) throw UNUSUAL;
          sawId = true;
          const s = this.span();
          id = utf8(this.b, s, this.spanEnd);
          break;
        }
        case K_PARAMETERS:
          if (parameters !== undefined) throw UNUSUAL;
          parameters = this.readRequestParameters(plan);
          break;
        default:
          throw UNUSUAL;
      }
    } while (this.more(CLOSE_CURLY));
    this.skipSpace();
    if (this.pos !== headerLength || inputs === undefined) throw UNUSUAL;

    // The binary part: each input's bytes in order, and nothing after the last.
    let offset = headerLength;
    for (let i = 0; i < inputs.length; i++) {
      const t = inputs[i]!;
      const size = this.sizes[i]!;
      if (size > body.length - offset) throw UNUSUAL;
      t.data = body.subarray(offset, offset + size);
      offset += size;
    }
    if (offset !== body.length) throw UNUSUAL;

    const request: InferRequest = { modelName, modelVersion, id, parameters: parameters ?? {}, inputs };
    if (outputs !== undefined) request.outputs = outputs;
    return { request, plan };
  }

  readInputs(): Tensor[] {
    const inputs: Tensor[] = [];
    this.expect(OPEN_SQUARE);
    if (this.empty(CLOSE_SQUARE)) return inputs;
    do inputs.push(this.readInput(inputs.length));
    while (this.more(CLOSE_SQUARE));
    return inputs;
  }

  readInput(at: number): Tensor {
    if (at >= MAX_INPUTS) throw UNUSUAL;
    let name: string | undefined;
    let datatype: Datatype | undefined;
    let shape: number[] | undefined;
    let size = -1;
    this.expect(OPEN_CURLY);
    do {
      switch (this.key()) {
        case K_NAME:
          if (name !== undefined) throw UNUSUAL;
          name = this.memoString(at < MEMO_SLOTS ? INPUT_NAMES[at] : undefined);
          break;
        case K_DATATYPE:
          if (datatype !== undefined) throw UNUSUAL;
          datatype = this.readDatatype(at < MEMO_SLOTS ? INPUT_DATATYPES[at] : undefined);
          break;
        case K_SHAPE:
          if (shape !== undefined) throw UNUSUAL;
          shape = this.readShape();
          break;
        case K_PARAMETERS:
          if (size >= 0) throw UNUSUAL;
          size = this.readInputParameters();
          break;
        default:
          throw UNUSUAL;
      }
    } while (this.more(CLOSE_CURLY));
    if (name === undefined || datatype === undefined || shape === undefined || size < 0) throw UNUSUAL;
    this.sizes[at] = size;
    // readDocument cuts `data` from the body once the header has been read whole.
    return { name, datatype, shape, data: EMPTY };
  }

  readOutputs(plan: OutputPlan): RequestedOutput[] {
    const outputs: RequestedOutput[] = [];
    const requested = new Map<string, OutputChoice>();
    this.expect(OPEN_SQUARE);
    if (!this.empty(CLOSE_SQUARE)) {
      do {
        const at = outputs.length;
        let name: string | undefined;
        let binary: boolean | undefined;
        this.expect(OPEN_CURLY);
        do {
          switch (this.key()) {
            case K_NAME:
              if (name !== undefined) throw UNUSUAL;
              name = this.memoString(at < MEMO_SLOTS ? OUTPUT_NAMES[at] : undefined);
              break;
            case K_PARAMETERS:
              if (binary !== undefined) throw UNUSUAL;
              binary = this.readOutputParameters();
              break;
            default:
              throw UNUSUAL;
          }
        } while (this.more(CLOSE_CURLY));
        if (name === undefined) throw UNUSUAL;
        // As the general path: the output's parameters are what it listed; the first entry of a name counts.
        outputs.push({ name, parameters: binary === undefined ? {} : { binary_data: binary } });
        if (!requested.has(name)) requested.set(name, { binary: binary === true, classification: 0 });
      } while (this.more(CLOSE_SQUARE));
    }
    plan.requested = requested;
    return outputs;
  }

  /** `{"binary_data": <bool>}`, or `{}` (undefined). */
  readOutputParameters(): boolean | undefined {
    this.expect(OPEN_CURLY);
    if (this.empty(CLOSE_CURLY)) return undefined;
    if (this.key() !== K_BINARY_DATA) throw UNUSUAL;
    const v = this.bool();
    this.expect(CLOSE_CURLY);
    return v;
  }

  /** `{"binary_data_size": <uint>}`: the input's byte count in the binary part. */
  readInputParameters(): number {
    this.expect(OPEN_CURLY);
    if (this.key() !== K_BINARY_DATA_SIZE) throw UNUSUAL;
    const v = this.uint();
    this.expect(CLOSE_CURLY);
    return v;
  }

  /** `{}` or `{"binary_data_output": <bool>}`. */
  readRequestParameters(plan: OutputPlan): InferRequest['parameters'] {
    this.expect(OPEN_CURLY);
    if (this.empty(CLOSE_CURLY)) return {};
    if (this.key() !== K_BINARY_DATA_OUTPUT) throw UNUSUAL;
    const v = this.bool();
    this.expect(CLOSE_CURLY);
    plan.defaultBinary = v;
    return { binary_data_output: v };
  }

  readShape(): number[] {
    const shape: number[] = [];
    this.expect(OPEN_SQUARE);
    if (this.empty(CLOSE_SQUARE)) return shape;
    do shape.push(this.uint());
    while (this.more(CLOSE_SQUARE));
    return shape;
  }

  /** A datatype: the memo's when the bytes repeat (only valid ones are kept), else checked. */
  readDatatype(memo: StringMemo | undefined): Datatype {
    const s = this.span();
    const e = this.spanEnd;
    const same = memo?.match(this.b, s, e);
    if (same !== undefined) return same as Datatype;
    const text = utf8(this.b, s, e);
    if (!isDatatype(text)) throw UNUSUAL; // the general path words the refusal
    memo?.remember(this.b, s, e, text);
    return text;
  }

  memoString(memo: StringMemo | undefined): string {
    const s = this.span();
    return memo === undefined ? utf8(this.b, s, this.spanEnd) : memo.read(this.b, s, this.spanEnd);
  }

  // The loops below work on locals: V8 then checks the buffer once, not at every byte.
  skipSpace(): void {
    const b = this.b;
    const end = this.end;
    let pos = this.pos;
    while (pos < end) {
      const c = b[pos]!;
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
      pos++;
    }
    this.pos = pos;
  }

  /** The next byte after white space is `c` (a bracket, quote or colon): consumed. */
  expect(c: number): void {
    this.skipSpace();
    if (this.pos >= this.end || this.b[this.pos] !== c) throw UNUSUAL;
    this.pos++;
  }

  /** The container closes right away (`c` is consumed), as in `[]` and `{}`. */
  empty(c: number): boolean {
    this.skipSpace();
    if (this.pos < this.end && this.b[this.pos] === c) {
      this.pos++;
      return true;
    }
    return false;
  }

  /** After a member: true at a comma (another follows), false at the closing `c`. */
  more(c: number): boolean {
    this.skipSpace();
    if (this.pos >= this.end) throw UNUSUAL;
    const x = this.b[this.pos++]!;
    if (x === COMMA) return true;
    if (x === c) return false;
    throw UNUSUAL;
  }

  /** A string of printable ASCII without escapes: its first byte's index; its end in `spanEnd`. */
  span(): number {
    this.expect(QUOTE);
    const b = this.b;
    const end = this.end;
    const s = this.pos;
    for (let pos = s; pos < end; pos++) {
      const c = b[pos]!;
      if (c === QUOTE) {
        this.spanEnd = pos;
        this.pos = pos + 1;
        return s;
      }
      // An escape, a control character or a byte of a multi-byte sequence: the general path's.
      if (c === 0x5c || c < 0x20 || c >= 0x80) throw UNUSUAL;
    }
    throw UNUSUAL;
  }

  /** A member's key and its colon: the key's code (0 for a key the reader does not know). */
  key(): number {
    const s = this.span();
    const n = this.spanEnd - s;
    this.expect(COLON);
    const known = n < KEY_BY_LENGTH.length ? KEY_BY_LENGTH[n] : undefined;
    if (known === undefined) return 0;
    const k = known.bytes;
    const b = this.b;
    for (let i = 0; i < n; i++) if (b[s + i] !== k[i]) return 0;
    return known.code;
  }

  /** An unsigned integer literal of at most 15 digits (exact in a double), no sign, fraction or exponent. */
  uint(): number {
    this.skipSpace();
    const b = this.b;
    const end = this.end;
    const s = this.pos;
    let pos = s;
    let v = 0;
    for (; pos < end; pos++) {
      const c = b[pos]!;
      if (c < ZERO || c > NINE) break;
      v = v * 10 + (c - ZERO);
    }
    const n = pos - s;
    if (n === 0 || n > 15 || (n > 1 && b[s] === ZERO)) throw UNUSUAL;
    if (pos < end) {
      const c = b[pos]!;
      if (c === 0x2e || c === 0x65 || c === 0x45) throw UNUSUAL; // . e E
    }
    this.pos = pos;
    return v;
  }

  bool(): boolean {
    this.skipSpace();
    if (this.startsWith(TRUE)) return true;
    if (this.startsWith(FALSE)) return false;
    throw UNUSUAL;
  }

  startsWith(word: Buffer): boolean {
    if (this.end - this.pos < word.length) return false;
    for (let i = 0; i < word.length; i++) if (this.b[this.pos + i] !== word[i]) return false;
    this.pos += word.length;
    return true;
  }
}

const READER = new HeaderReader();
