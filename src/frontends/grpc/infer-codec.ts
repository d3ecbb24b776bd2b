/**
 * @module frontends/grpc/infer-codec
 * `ModelInferRequest` → `InferRequest`, and `InferResponse` → the bytes of a
 * `ModelInferResponse` (or of a `ModelStreamInferResponse` wrapping one).
 *
 * Requests: tensor data comes from a registered shared-memory region, or else either from
 * `raw_input_contents` (one entry per input not in shared memory, in the order of `inputs`, as
 * Triton counts them; views of the received message, never copied) or from each input's typed
 * `contents`, never both. Model-level validation (names, datatypes against the config, shapes,
 * BYTES element counts) is the core's; this layer checks the message itself. A message that
 * repeats its model's last reaches the handlers decoded already (repeated-request.ts), as the
 * same DecodedInferRequest this decoding makes.
 *
 * Responses: Triton answers with exactly one `raw_output_contents` entry per output, parallel
 * to `outputs`, and never fills typed `contents` (tritonclient's `as_numpy` indexes both lists
 * the same way). The message is written by hand (response-wire.ts) into the one buffer handed to
 * grpc-js, so each output is copied exactly once.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { isDatatype } from '../../core/datatype.js';
import { Errors } from '../../core/errors.js';
import type { InferRequest, InferResponse, Parameters, RequestedOutput } from '../../core/inference.js';
import type { ShmRef } from '../../core/extensions/shared-memory.js';
import type { Tensor } from '../../core/tensor.js';
import { elementCount, expectedByteSize } from '../../core/tensor.js';
import type { ModelInferRequest } from '../../generated/grpc_service_pb.js';
import { ModelStreamInferResponseSchema } from '../../generated/grpc_service_pb.js';
import { classify } from '../classification.js';
import { ResponseForm } from '../response-form.js';
import { readRequestParameters, readTensorParameters, toInferParameterMap } from './params.js';
import type { PreparedResponse } from './response-wire.js';
import { prepareResponse, RepeatedResponseHead, varintSize, writeResponse, writeVarint } from './response-wire.js';
import { encodeTypedContents } from './typed-contents.js';

/** What the response encoder needs to know about the request. */
export interface OutputPlan {
  /** Requested outputs with `classification: K` (K > 0), by name. */
  classification?: Map<string, number>;
  /** Label lines of those outputs (from the model, set by the handler). */
  labels?: Map<string, readonly string[]>;
  /**
   * The plan of a kept request form (repeated-request.ts), shared by the requests built from it:
   * the head of the last response encoded with it is kept here for the next one of its form.
   */
  keepsResponse?: boolean;
  lastResponse?: RepeatedResponseHead;
}

/**
 * A ModelInferRequest decoded into the core's request. It answers for the message's model,
 * version and id as well, so that a route can hand one to the infer handlers in the message's
 * place when the wire reader decoded it already (repeated-request.ts).
 */
export class DecodedInferRequest {
  constructor(
    readonly request: InferRequest,
    readonly plan: OutputPlan,
    /** `triton_enable_empty_final_response` was set (meaningful on ModelStreamInfer only). */
    readonly enableEmptyFinal: boolean,
  ) {}

  get modelName(): string {
    return this.request.modelName;
  }

  get modelVersion(): string {
    return this.request.modelVersion;
  }

  get id(): string {
    return this.request.id;
  }
}

/** What the ModelInfer and ModelStreamInfer routes hand their handlers: the message, or its decoded form. */
export type InferMessage = ModelInferRequest | DecodedInferRequest;

/**
 * The decoded form of `msg`, decoding it here unless the route did.
 * @throws TritonError (INVALID_ARG) for a malformed message.
 */
export function decodeInferMessage(msg: InferMessage): DecodedInferRequest {
  return msg instanceof DecodedInferRequest ? msg : decodeInferRequest(msg);
}

/** The largest protobuf message: sizes are signed 32-bit on the wire's C++ side. */
export const MAX_MESSAGE_BYTES = 2 ** 31 - 1;

/** @throws TritonError (INVALID_ARG) for a malformed message. */
export function decodeInferRequest(msg: ModelInferRequest): DecodedInferRequest {
  const model = msg.modelName;
  const { parameters, enableEmptyFinal } = readRequestParameters(msg.parameters);

  const raw = msg.rawInputContents;
  const useRaw = raw.length > 0;
  let nextRaw = 0;
  const inputs: Tensor[] = new Array(msg.inputs.length);
  for (let i = 0; i < msg.inputs.length; i++) {
    const input = msg.inputs[i]!;
    const name = input.name;
    const dt = input.datatype;
    if (!isDatatype(dt)) throw Errors.invalidDatatype(dt, name);
    const shape = toShape(input.shape, name, model);
    const shm = shmRefOf(input.parameters);
    let data: Buffer;
    if (shm !== undefined) {
      inputs[i] = { name, datatype: dt, shape, data: EMPTY, shm };
      continue;
    } else if (useRaw) {
      if (input.contents !== undefined) {
        throw Errors.rawAndTypedContents(name, model);
      }
      const r = raw[nextRaw++];
      if (r === undefined) throw Errors.rawContentsMissing(name, model);
      // The hand-written reader's contents are Buffers already (views of the message).
      data = Buffer.isBuffer(r) ? r : Buffer.from(r.buffer, r.byteOffset, r.byteLength);
      const expected = expectedByteSize(dt, shape);
      if (expected !== undefined && expected !== data.length) throw Errors.byteSizeMismatch(name, expected, data.length);
    } else if (input.contents !== undefined) {
      data = encodeTypedContents(name, dt, input.contents, elementCount(shape));
    } else {
      // No data at all: the core reports the byte-size mismatch (or accepts an empty tensor).
      data = EMPTY;
    }
    inputs[i] = { name, datatype: dt, shape, data };
  }

  const request: InferRequest = { modelName: model, modelVersion: msg.modelVersion, id: msg.id, parameters, inputs };
  const plan: OutputPlan = {};
  if (msg.outputs.length > 0) {
    const outputs: RequestedOutput[] = new Array(msg.outputs.length);
    for (let i = 0; i < msg.outputs.length; i++) {
      const o = msg.outputs[i]!;
      const params = readTensorParameters(o.parameters);
      shmRefOf(o.parameters); // checks the parameters' types; the core writes the output there
      const k = params['classification'];
      if (k !== undefined) {
        if (typeof k !== 'number' || !Number.isInteger(k) || k < 0) throw Errors.classificationParam();
        if (k > 0 && !plan.classification?.has(o.name)) (plan.classification ??= new Map()).set(o.name, k);
      }
      outputs[i] = { name: o.name, parameters: params };
    }
    request.outputs = outputs;
  }
  return new DecodedInferRequest(request, plan, enableEmptyFinal);
}

const EMPTY = Buffer.alloc(0);

const MAX_DIM = BigInt(Number.MAX_SAFE_INTEGER);

function toShape(dims: bigint[], name: string, model: string): number[] {
  const shape = new Array<number>(dims.length);
  for (let i = 0; i < dims.length; i++) {
    const d = dims[i]!;
    if (d < 0n || d > MAX_DIM) {
      throw Errors.invalidShape(model, name);
    }
    shape[i] = Number(d);
  }
  return shape;
}

/**
 * The `shared_memory_*` parameters of an input or output, or undefined without a region. The
 * core finds (inputs) or writes (outputs) the bytes in the registered region; a byte size of 0
 * (absent) is refused there.
 */
function shmRefOf(params: ModelInferRequest['parameters']): ShmRef | undefined {
  const region = params['shared_memory_region'];
  if (region === undefined) return undefined;
  const c = region.parameterChoice;
  if (c.case !== 'stringParam') throw Errors.shmRegionParameterType();
  return { region: c.value, offset: int64Param(params, 'shared_memory_offset'), byteSize: int64Param(params, 'shared_memory_byte_size') };
}

function int64Param(params: ModelInferRequest['parameters'], key: string): number {
  const c = params[key]?.parameterChoice;
  if (c === undefined) return 0;
  if ((c.case === 'int64Param' || c.case === 'uint64Param') && c.value >= 0n && c.value <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(c.value);
  throw Errors.shmParameterType(key);
}

// ---------------------------------------------------------------------------------------------
// Responses

const STREAM_INFER_RESPONSE_TAG = (2 << 3) | 2;

function prepare(response: InferResponse, plan: OutputPlan, batching: boolean, extra?: Parameters): PreparedResponse {
  let outputs = response.outputs;
  if (plan.classification !== undefined) {
    const k = plan.classification;
    outputs = outputs.map((o) => (k.has(o.name) ? classify(o, k.get(o.name)!, batching, plan.labels?.get(o.name)) : o));
  }
  const params = extra === undefined ? response.parameters : { ...response.parameters, ...extra };
  const p = prepareResponse(response, params, outputs);
  if (p.size > MAX_MESSAGE_BYTES) {
    throw Errors.responseTooLarge(p.size, MAX_MESSAGE_BYTES);
  }
  return p;
}

/**
 * Serialises a successful response as a `ModelInferResponse`. The caller may release the
 * response's buffers as soon as this returns.
 * @param batching the model batches (first output dim is the batch), for classification.
 * @throws TritonError when an output cannot be encoded (classification of a non-numeric
 *   output, a response over 2 GiB).
 */
export function encodeInferResponse(response: InferResponse, plan: OutputPlan, batching: boolean): Buffer {
  const last = plan.lastResponse;
  if (last?.form.matches(response)) {
    const size = last.size(response.outputs);
    if (size > MAX_MESSAGE_BYTES) throw Errors.responseTooLarge(size, MAX_MESSAGE_BYTES);
    const buf = Buffer.allocUnsafe(size);
    last.write(buf, 0, response.outputs);
    return buf;
  }
  const p = prepare(response, plan, batching);
  const buf = Buffer.allocUnsafe(p.size);
  writeResponse(buf, 0, p);
  if (plan.keepsResponse === true) plan.lastResponse = RepeatedResponseHead.of(buf, p, ResponseForm.of(response, false));
  return buf;
}

/**
 * Serialises a successful response as a `ModelStreamInferResponse`, with the stream's
 * `triton_final_response` parameter. @throws as `encodeInferResponse`.
 */
export function encodeStreamResponse(response: InferResponse, plan: OutputPlan, batching: boolean, final: boolean): Buffer {
  const p = prepare(response, plan, batching, { triton_final_response: final });
  const prefix = 1 + varintSize(p.size);
  const buf = Buffer.allocUnsafe(prefix + p.size);
  buf[0] = STREAM_INFER_RESPONSE_TAG;
  writeVarint(buf, 1, p.size);
  writeResponse(buf, prefix, p);
  return buf;
}

/** An in-band stream error: the message, and the request it belongs to. */
export function encodeStreamError(message: string, req: { id: string; modelName: string; modelVersion: string }, final: boolean): Buffer {
  const msg = create(ModelStreamInferResponseSchema, {
    errorMessage: message,
    inferResponse: {
      id: req.id,
      modelName: req.modelName,
      modelVersion: req.modelVersion,
      parameters: toInferParameterMap({ triton_final_response: final }),
    },
  });
  return asBuffer(toBinary(ModelStreamInferResponseSchema, msg));
}

export function asBuffer(a: Uint8Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}
