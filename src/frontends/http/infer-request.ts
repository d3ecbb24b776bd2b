/**
 * @module frontends/http/infer-request
 * Turns an `/infer` body into an `InferRequest`, in Triton's three layouts:
 *
 *   pure JSON      [ JSON .................................. ]   no header, or header = length
 *   JSON + binary  [ JSON (header bytes) | blob 1 | blob 2 .. ]   inputs with binary_data_size,
 *                                                                 blobs in `inputs` order
 *   raw binary     [ data of the model's only input ......... ]   header = 0
 *
 * Binary inputs are views of the body buffer (no copy); JSON `data` is encoded once.
 * Checks are the frontend's own (message shape, one data source per input, byte accounting);
 * model-level validation (names, datatypes, shapes) is the core's.
 */
import type { Datatype } from '../../core/datatype.js';
import type { ShmRef } from '../../core/extensions/shared-memory.js';
import { elementSize, isDatatype } from '../../core/datatype.js';
import { Errors } from '../../core/errors.js';
import type { InferRequest, ParamValue, Parameters, RequestedOutput } from '../../core/inference.js';
import { setParameter } from '../../core/request/parameters.js';
import type { ModelHandle } from '../../core/model-handle.js';
import type { OutputChoice, OutputPlan, ParsedInferRequest } from './infer-plan.js';
import type { Tensor } from '../../core/tensor.js';
import { elementCount } from '../../core/tensor.js';
import { FloatLiteral, type JsonScanInfo, parseJsonBuffer, parseJsonMarkingFloats } from './json-parse.js';
import { readUsualInferHeader } from './infer-header-reader.js';
import { encodeJsonData } from './tensor-json.js';

/**
 * Reads `Inference-Header-Content-Length`. Absent means the whole body is JSON.
 * @returns the JSON header's byte length, in [0, bodyLength].
 */
export function parseHeaderLength(header: string | string[] | undefined, bodyLength: number): number {
  if (header === undefined) return bodyLength;
  const text = Array.isArray(header) ? (header[0] ?? '') : header;
  if (!/^\s*[0-9]+\s*$/.test(text)) throw Errors.headerLength(text);
  const n = Number(text);
  if (n > bodyLength) throw Errors.headerLengthRange(bodyLength, text);
  return n;
}

/**
 * Builds the request for `modelName`/`modelVersion` (as routed) from a decompressed body.
 * `model` is the resolved model, needed by the raw-binary layout to name and shape its input.
 * @throws TritonError (INVALID_ARG unless noted) with Triton's texts.
 */
export function parseInferRequest(body: Buffer, headerLength: number, model: ModelHandle, modelName: string, modelVersion: string): ParsedInferRequest {
  // Triton treats a zero header length as raw binary, even with the header absent on an empty body.
  if (headerLength === 0) return parseRawRequest(body, model, modelName, modelVersion);
  // The shape clients send with every binary request, read without JSON.parse; any other shape
  // (and every refusal) is this function's.
  return readUsualInferHeader(body, headerLength, modelName, modelVersion) ?? parseJsonInferRequest(body, headerLength, modelName, modelVersion);
}

/**
 * The JSON header through `JSON.parse` (parseJsonBuffer), for every shape the usual-header
 * reader leaves; exported so its tests can compare the two.
 */
export function parseJsonInferRequest(body: Buffer, headerLength: number, modelName: string, modelVersion: string): ParsedInferRequest {
  const scanned: JsonScanInfo = { floatLiterals: false };
  const doc = parseJsonBuffer(body, 0, headerLength, scanned);
  if (!isObject(doc)) throw Errors.unableToParseMissing('inputs');

  let id = '';
  if (doc.id !== undefined) {
    if (typeof doc.id !== 'string') throw Errors.unableToParse('id', 'string');
    id = doc.id;
  }

  const plan: OutputPlan = { defaultBinary: false };
  const parameters = doc.parameters === undefined ? {} : parseRequestParameters(doc.parameters, plan);

  const inputsJson = doc.inputs;
  if (!Array.isArray(inputsJson)) throw inputsJson === undefined ? Errors.unableToParseMissing('inputs') : Errors.unableToParse('inputs', 'array');
  const inputs: Tensor[] = new Array(inputsJson.length);
  let offset = headerLength;
  // Only when some number has a fraction or exponent: the inputs again, with those marked.
  let marked: unknown[] | undefined;
  const markedData = scanned.floatLiterals
    ? (i: number): unknown => {
        if (marked === undefined) {
          const again = parseJsonMarkingFloats(body, 0, headerLength);
          marked = isObject(again) && Array.isArray(again.inputs) ? again.inputs : [];
        }
        const m = marked[i];
        return isObject(m) ? m.data : undefined;
      }
    : undefined;
  for (let i = 0; i < inputsJson.length; i++) {
    const input = inputsJson[i];
    // Triton reads a non-object input as one with no field set.
    if (!isObject(input)) throw Errors.inputDataSource(false, false, false);
    const tensor = parseInput(input, body, offset, headerLength, modelName, markedData !== undefined ? () => markedData(i) : undefined);
    offset += tensor.fromBody;
    inputs[i] = tensor.tensor;
  }
  if (offset !== body.length) throw Errors.extraInputData(modelName);

  let outputs: RequestedOutput[] | undefined;
  if (doc.outputs !== undefined) outputs = parseOutputs(doc.outputs, plan);

  const request: InferRequest = { modelName, modelVersion, id, parameters, inputs };
  if (outputs !== undefined) request.outputs = outputs;
  return { request, plan };
}

interface ParsedInput {
  tensor: Tensor;
  /** Bytes this input took from the binary section. */
  fromBody: number;
}

function parseInput(
  input: Record<string, unknown>,
  body: Buffer,
  offset: number,
  headerLength: number,
  modelName: string,
  /** This input's `data` with float literals marked; given only when the document has some. */
  markedData?: () => unknown,
): ParsedInput {
  const params = input.parameters;
  if (params !== undefined && !isObject(params)) throw Errors.unableToParseKind('parameters', 'a JSON object', kindOf(params));
  const hasData = input.data !== undefined;
  const hasBinary = params !== undefined && params.binary_data_size !== undefined;
  const hasShm = params !== undefined && params.shared_memory_region !== undefined;
  if (+hasData + +hasBinary + +hasShm !== 1) {
    throw Errors.inputDataSource(hasData, hasBinary, hasShm);
  }

  const name = input.name;
  if (typeof name !== 'string') throw unparsed('name', name, 'string');
  const dt = input.datatype;
  if (typeof dt !== 'string') throw unparsed('datatype', dt, 'string');
  if (!isDatatype(dt)) throw Errors.invalidDatatype(dt, name);
  const shape = parseShape(input.shape);

  if (hasBinary) {
    const size = uint(params!.binary_data_size);
    if (size === undefined) throw Errors.unableToParse('binary_data_size', 'unsigned-integer');
    const available = body.length - offset;
    if (size > available) {
      throw Errors.binaryDataShort(name, size - available, modelName);
    }
    return { tensor: { name, datatype: dt, shape, data: body.subarray(offset, offset + size) }, fromBody: size };
  }
  if (hasShm) {
    // The core finds the bytes in the registered region (core/request/shm-binding.ts).
    return { tensor: { name, datatype: dt, shape, data: EMPTY, shm: shmRef(params!) }, fromBody: 0 };
  }
  if (markedData !== undefined && INTEGER_KIND[dt] !== undefined && elementCount(shape) > 0 && holdsFloatLiteral(markedData())) {
    throw Errors.jsonDataKind(INTEGER_KIND[dt]);
  }
  return { tensor: { name, datatype: dt, shape, data: jsonData(input.data, name, dt, shape, headerLength) }, fromBody: 0 };
}

/** What Triton calls the integer types in its JSON errors. */
const INTEGER_KIND: Partial<Record<string, 'signed-integer' | 'unsigned-integer'>> = {
  UINT8: 'unsigned-integer',
  UINT16: 'unsigned-integer',
  UINT32: 'unsigned-integer',
  UINT64: 'unsigned-integer',
  INT8: 'signed-integer',
  INT16: 'signed-integer',
  INT32: 'signed-integer',
  INT64: 'signed-integer',
};

/** Whether a `data` value holds a number written as a float (`1.0`, `1e2`), which Triton refuses for integers. */
function holdsFloatLiteral(v: unknown): boolean {
  if (v instanceof FloatLiteral) return true;
  if (Array.isArray(v)) for (const e of v) if (holdsFloatLiteral(e)) return true;
  return false;
}

/** The `shared_memory_*` parameters of an input or output (byte size 0 when absent: refused by the core). */
function shmRef(p: Record<string, unknown>): ShmRef {
  const region = p.shared_memory_region;
  if (typeof region !== 'string') throw Errors.unableToParse('shared_memory_region', 'string');
  const byteSize = p.shared_memory_byte_size === undefined ? 0 : uint(p.shared_memory_byte_size);
  if (byteSize === undefined) throw Errors.unableToParse('shared_memory_byte_size', 'unsigned-integer');
  const offset = p.shared_memory_offset === undefined ? 0 : uint(p.shared_memory_offset);
  if (offset === undefined) throw Errors.unableToParse('shared_memory_offset', 'unsigned-integer');
  return { region, offset, byteSize };
}

function jsonData(data: unknown, name: string, dt: Datatype, shape: number[], headerLength: number): Buffer {
  const count = elementCount(shape);
  // Triton ignores 'data' of an empty tensor, and looks at its JSON kind before its datatype
  // (tritonserver 2.51: FP16 data "x" is refused as a non-array, with 500).
  if (count === 0) return EMPTY;
  if (!Array.isArray(data)) throw Errors.jsonDataNotArray();
  if (dt === 'FP16' || dt === 'BF16') return encodeJsonData(name, dt, [], count); // throws the JSON refusal
  // Every element takes at least one character of the header, so a larger count cannot match
  // (and must not reach the allocation below). BYTES allocates per string found instead.
  if (dt !== 'BYTES' && count > headerLength) throw Errors.jsonDataShape();
  return encodeJsonData(name, dt, data, count);
}

const EMPTY = Buffer.alloc(0);

function parseShape(v: unknown): number[] {
  if (!Array.isArray(v)) throw unparsed('shape', v, 'array');
  const shape: number[] = [];
  for (let i = 0; i < v.length; i++) {
    const d = uint(v[i]);
    if (d === undefined || d > Number.MAX_SAFE_INTEGER) throw Errors.unableToParse('shape', 'unsigned-integer');
    shape.push(d);
  }
  return shape;
}

/** An unsigned JSON integer as a number, or undefined. */
function uint(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isInteger(v) && v >= 0 ? v : undefined;
  if (typeof v === 'bigint') return v >= 0n ? Number(v) : undefined;
  return undefined;
}

function isUint(v: unknown): boolean {
  return (typeof v === 'number' && Number.isInteger(v) && v >= 0) || (typeof v === 'bigint' && v >= 0n);
}

/**
 * Request-level parameters. The ones the server interprets are type-checked here with
 * Triton's texts and forwarded; `triton_`-prefixed keys are refused; others pass through.
 */
function parseRequestParameters(v: unknown, plan: OutputPlan): Parameters {
  if (!isObject(v)) throw Errors.requestParams();
  const out: Parameters = {};
  for (const key of Object.keys(v)) {
    const value = v[key];
    switch (key) {
      case 'sequence_id':
        if (!isUint(value) && typeof value !== 'string') throw Errors.unableToParse('sequence_id', 'string');
        break;
      case 'sequence_start':
      case 'sequence_end':
      case 'binary_data_output':
        if (typeof value !== 'boolean') throw Errors.unableToParse(key, 'boolean');
        if (key === 'binary_data_output') plan.defaultBinary = value;
        break;
      case 'priority':
      case 'timeout':
        if (!isUint(value)) throw Errors.unableToParse(key, 'unsigned-integer');
        break;
      default:
        if (key.startsWith('triton_')) throw Errors.reservedParameter(key);
        if (!isParamValue(value)) {
          throw Errors.parameterType(key);
        }
    }
    setParameter(out, key, value as ParamValue);
  }
  return out;
}

function parseOutputs(v: unknown, plan: OutputPlan): RequestedOutput[] {
  if (!Array.isArray(v)) throw Errors.unableToParse('outputs', 'array');
  const outputs: RequestedOutput[] = new Array(v.length);
  const requested = new Map<string, OutputChoice>();
  for (let i = 0; i < v.length; i++) {
    const o = v[i];
    // Triton looks for the name of a non-object output and finds none.
    if (!isObject(o)) throw Errors.unableToParseMissing('name');
    const params = o.parameters;
    if (params !== undefined && !isObject(params)) throw Errors.unableToParseKind('parameters', 'a JSON object', kindOf(params));
    const p = params ?? {};
    const hasShm = p.shared_memory_region !== undefined;
    if (hasShm && p.classification !== undefined) {
      throw Errors.outputShmAndClassification();
    }
    if (p.binary_data !== undefined && typeof p.binary_data !== 'boolean') throw Errors.outputBinaryData();
    if (hasShm && p.binary_data === true) throw Errors.outputShmAndBinary();
    const name = o.name;
    if (typeof name !== 'string') throw unparsed('name', name, 'string');
    let classification = 0;
    if (p.classification !== undefined) {
      const k = uint(p.classification);
      if (k === undefined) throw Errors.classificationParam();
      classification = k;
    }
    if (hasShm) shmRef(p); // checks the parameters' types; the core writes the output there
    const parameters: Parameters = {};
    for (const key of Object.keys(p)) if (isParamValue(p[key])) setParameter(parameters, key, p[key] as ParamValue);
    outputs[i] = { name, parameters };
    // A name listed twice is one output (core/request/validate.ts): the first entry's choices stand, as in Triton.
    if (!requested.has(name)) {
      requested.set(name, { binary: p.binary_data === true, classification });
      if (classification > 0) plan.classification = true;
    }
  }
  plan.requested = requested;
  return outputs;
}

/**
 * Raw binary layout: the whole body is the data of the model's only input. Its shape comes
 * from the config: BYTES needs dims [1]; otherwise at most one variable dim, sized from the
 * byte count. A batching model gets batch 1. All outputs come back binary.
 */
function parseRawRequest(body: Buffer, model: ModelHandle, modelName: string, modelVersion: string): ParsedInferRequest {
  if (model.inputs.length !== 1) {
    throw Errors.rawRequestInputs(modelName, model.inputs.length);
  }
  const spec = model.inputs[0]!;
  const dims = spec.dims.slice();
  if (spec.datatype === 'BYTES') {
    if (dims.length !== 1 || (dims[0] !== 1 && dims[0] !== -1)) {
      throw Errors.rawRequestBytesDims(spec.name, modelName);
    }
    dims[0] = 1;
  } else {
    let variable = -1;
    let fixed = 1;
    for (let i = 0; i < dims.length; i++) {
      if (dims[i]! < 0) {
        if (variable >= 0) {
          throw Errors.rawRequestVariableDims(spec.name, modelName);
        }
        variable = i;
      } else fixed *= dims[i]!;
    }
    if (variable >= 0) {
      const unit = fixed * elementSize(spec.datatype);
      if (unit === 0 ? body.length !== 0 : body.length % unit !== 0) {
        throw Errors.byteSizeMismatch(spec.name, unit === 0 ? 0 : Math.ceil(body.length / unit) * unit, body.length);
      }
      dims[variable] = unit === 0 ? 0 : body.length / unit;
    }
  }
  const shape = model.maxBatchSize > 0 ? [1, ...dims] : dims;
  const request: InferRequest = {
    modelName,
    modelVersion,
    id: '',
    parameters: {},
    inputs: [{ name: spec.name, datatype: spec.datatype, shape, data: body }],
  };
  return { request, plan: { defaultBinary: true } };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isParamValue(v: unknown): boolean {
  const t = typeof v;
  return t === 'string' || t === 'boolean' || t === 'bigint' || (t === 'number' && Number.isFinite(v));
}

/** Triton's error for a member that is absent, or present with the wrong JSON type (TritonJson's texts, 500). */
function unparsed(field: string, v: unknown, kind: 'string' | 'unsigned-integer' | 'boolean' | 'array') {
  return v === undefined ? Errors.unableToParseMissing(field) : Errors.unableToParse(field, kind);
}

function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'bigint' ? 'number' : typeof v;
}
