/**
 * @module frontends/grpc/repeated-request
 * A model's last ModelInferRequest, kept so that its next one with the same bytes is decoded
 * without being read. perf_analyzer, and tritonclient in a loop, send one message per request
 * that differs from the last only in its tensors' bytes: everything before `raw_input_contents`
 * (model, version, parameters, the inputs' names, datatypes and shapes, the outputs) repeats
 * byte for byte, and so do the raw contents' lengths. A message whose bytes up to its first raw
 * content are the kept ones, followed by raw contents of the kept lengths and nothing else, is
 * built from the kept decoding: fresh objects (the core may keep or change a request's, never
 * the memo's), its tensors views of the new message. Reading it (request-wire.ts) and then
 * decoding it (infer-codec.ts) built the message twice over, once in protobuf-es' shape.
 *
 * As the HTTP infer header's memo (infer-header-reader.ts, RepeatedHeader): a message is kept
 * only without an id (ids usually change with every request), the second time in a row its model
 * sees it, and only once `decodeInferRequest` accepted it, so every refusal keeps its one path,
 * in the handler's order (the model is resolved before the message is decoded). What a kept
 * message builds equals what `decodeInferRequest` makes of the same bytes (test/grpc/
 * repeated-request.test.ts). The memos are per thread (a module's state is its thread's).
 */
import type { InferRequest, Parameters, RequestedOutput } from '../../core/inference.js';
import { LastBytes, StringMemo } from '../../core/string-memo.js';
import type { Tensor } from '../../core/tensor.js';
import type { ModelInferRequest } from '../../generated/grpc_service_pb.js';
import { DecodedInferRequest, decodeInferRequest, type InferMessage, type OutputPlan } from './infer-codec.js';
import { type MessageLayout, readSimpleInferRequest } from './request-wire.js';
import { varintSize, writeVarint } from './response-wire.js';

/** Messages whose part before the raw contents is longer than this are not kept. */
const REPEAT_MAX_BYTES = 2048;
/** Models whose last message is kept at once; past it the memo starts again. */
const REPEAT_MODELS = 64;
/** The tag of `raw_input_contents` (field 7, length-delimited). */
const RAW_TAG = (7 << 3) | 2;
/** The tag of `model_name` (field 1, length-delimited), which protobuf writers put first. */
const MODEL_NAME_TAG = (1 << 3) | 2;

class RepeatedRequest {
  /** The message's bytes before its first raw content. */
  private readonly prefix: Buffer;
  /** Each raw content's tag and length, as a protobuf writer puts them, and its length. */
  private readonly heads: readonly Buffer[];
  private readonly sizes: readonly number[];
  private readonly length: number;
  private readonly inputs: ReadonlyArray<Pick<Tensor, 'name' | 'datatype' | 'shape'>>;
  private readonly outputs: readonly string[] | undefined;
  private readonly request: Pick<InferRequest, 'modelName' | 'modelVersion' | 'parameters'>;
  private readonly enableEmptyFinal: boolean;
  /**
   * The output plan of every request built here: a message of the kept form asks for no
   * classification, so the handlers fill nothing in; the encoder keeps its last response's
   * head on it (response-wire.ts, RepeatedResponseHead).
   */
  private readonly plan: OutputPlan = { keepsResponse: true };

  constructor(buf: Buffer, rawStart: number, msg: ModelInferRequest, decoded: DecodedInferRequest) {
    this.prefix = Buffer.from(buf.subarray(0, rawStart));
    const sizes = msg.rawInputContents.map((r) => r.length);
    this.sizes = sizes;
    this.heads = sizes.map((n) => {
      const head = Buffer.allocUnsafe(1 + varintSize(n));
      head[0] = RAW_TAG;
      writeVarint(head, 1, n);
      return head;
    });
    this.length = this.heads.reduce((sum, h, i) => sum + h.length + sizes[i]!, rawStart);
    const { request } = decoded;
    this.inputs = request.inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape.slice() }));
    this.outputs = request.outputs?.map((o) => o.name);
    this.request = { modelName: request.modelName, modelVersion: request.modelVersion, parameters: { ...request.parameters } };
    this.enableEmptyFinal = decoded.enableEmptyFinal;
  }

  /**
   * Whether `buf` is the kept message but for its raw contents' bytes: the same bytes before
   * them, then raw contents of the kept lengths, each in its shortest form, and nothing after.
   */
  matches(buf: Buffer): boolean {
    if (buf.length !== this.length) return false;
    const prefix = this.prefix;
    let pos = prefix.length;
    if (buf.compare(prefix, 0, pos, 0, pos) !== 0) return false;
    const heads = this.heads;
    for (let i = 0; i < heads.length; i++) {
      const head = heads[i]!;
      for (let j = 0; j < head.length; j++) if (buf[pos + j] !== head[j]) return false;
      pos += head.length + this.sizes[i]!;
    }
    return pos === buf.length;
  }

  /** The decoding of `buf`, which matches(): decodeInferRequest's result, built without reading. */
  build(buf: Buffer): DecodedInferRequest {
    const tpl = this.inputs;
    const inputs: Tensor[] = new Array(tpl.length);
    let pos = this.prefix.length;
    for (let i = 0; i < tpl.length; i++) {
      const t = tpl[i]!;
      pos += this.heads[i]!.length;
      const end = pos + this.sizes[i]!;
      inputs[i] = { name: t.name, datatype: t.datatype, shape: t.shape.slice(), data: buf.subarray(pos, end) };
      pos = end;
    }
    const kept = this.request;
    const request: InferRequest = { modelName: kept.modelName, modelVersion: kept.modelVersion, id: '', parameters: { ...kept.parameters }, inputs };
    const names = this.outputs;
    if (names !== undefined) {
      const outputs: RequestedOutput[] = new Array(names.length);
      for (let i = 0; i < names.length; i++) outputs[i] = { name: names[i]!, parameters: {} as Parameters };
      request.outputs = outputs;
    }
    return new DecodedInferRequest(request, this.plan, this.enableEmptyFinal);
  }
}

/** By the model name the message starts with (see RepeatedRequest). */
const REPEATED = new Map<string, RepeatedRequest>();
/** By model name: the last message read and not kept (see seenTwice). */
const SEEN = new Map<string, Seen>();
/** The model name at the start of the last message (a repeat builds no string). */
const MODEL_NAME = new StringMemo();
const LAYOUT: MessageLayout = { rawStart: -1 };

/** A model's last message read and not kept: its bytes before the raw contents, and their lengths. */
class Seen {
  readonly prefix = new LastBytes(REPEAT_MAX_BYTES);
  private sizes: number[] = [];

  /** Whether `buf` is the last one's form; if not, it becomes the last. */
  twice(buf: Buffer, rawStart: number, raw: readonly Uint8Array[]): boolean {
    const sizes = this.sizes;
    if (this.prefix.equals(buf, 0, rawStart) && sizes.length === raw.length && raw.every((r, i) => r.length === sizes[i])) return true;
    this.prefix.keep(buf, 0, rawStart);
    this.sizes = raw.map((r) => r.length);
    return false;
  }
}

/**
 * The model name `buf` starts with, when it starts with one (as protobuf writers put it), else
 * undefined: the key of its memo.
 */
function leadingModelName(buf: Buffer): string | undefined {
  if (buf.length < 2 || buf[0] !== MODEL_NAME_TAG) return undefined;
  const n = buf[1]!;
  // Names under 128 bytes, whose length is one byte: a longer one is simply never kept.
  if (n >= 0x80 || n === 0 || 2 + n > buf.length) return undefined;
  return MODEL_NAME.read(buf, 2, 2 + n);
}

/**
 * A ModelInferRequest off the wire: decoded already when it repeats its model's kept message,
 * else read by request-wire (and kept when it repeats the model's last); undefined when it is
 * not of the common shape (the caller decodes it reflectively).
 */
export function readInferMessage(buf: Buffer): InferMessage | undefined {
  const model = leadingModelName(buf);
  if (model !== undefined) {
    const kept = REPEATED.get(model);
    if (kept?.matches(buf)) return kept.build(buf);
  }
  const layout = LAYOUT;
  const msg = readSimpleInferRequest(buf, layout);
  if (msg === undefined || model === undefined) return msg;
  const rawStart = layout.rawStart;
  const raw = msg.rawInputContents;
  if (msg.id !== '' || rawStart < 0 || rawStart > REPEAT_MAX_BYTES || raw.length !== msg.inputs.length) return msg;
  if (!seenTwice(model, buf, rawStart, raw)) return msg;
  let decoded: DecodedInferRequest;
  try {
    decoded = decodeInferRequest(msg);
  } catch {
    // Refused: the handler decodes it again after resolving the model, and says why there.
    return msg;
  }
  if (decoded.plan.classification === undefined) {
    if (REPEATED.size >= REPEAT_MODELS && !REPEATED.has(model)) REPEATED.clear();
    REPEATED.set(model, new RepeatedRequest(buf, rawStart, msg, decoded));
  }
  return decoded;
}

/** Whether `model`'s last message read had `buf`'s form; bounded like REPEATED. */
function seenTwice(model: string, buf: Buffer, rawStart: number, raw: readonly Uint8Array[]): boolean {
  let seen = SEEN.get(model);
  if (seen === undefined) {
    if (SEEN.size >= REPEAT_MODELS) SEEN.clear();
    seen = new Seen();
    SEEN.set(model, seen);
  }
  return seen.twice(buf, rawStart, raw);
}
