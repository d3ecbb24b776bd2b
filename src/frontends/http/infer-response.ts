/**
 * @module frontends/http/infer-response
 * Writes an `InferResponse` as Triton's HTTP response:
 *
 *   [ JSON header ][ blob of binary output 1 ][ blob 2 ] ...     (outputs in response order)
 *
 * `Inference-Header-Content-Length` (the JSON's byte length, before any compression) and
 * `application/octet-stream` appear only when some blob is non-empty. Output buffers are not
 * copied: the JSON text and each buffer view go to the socket in one corked (writev) write,
 * and `response.release()` runs once the socket is done with them.
 */
import { inferAnswerFields, type HttpResponse } from './wire/exchange.js';
import { asTritonError, Errors } from '../../core/errors.js';
import { hasResponseParameters, ResponseForm } from '../response-form.js';
import type { InferResponse } from '../../core/inference.js';
import type { Tensor } from '../../core/tensor.js';
import { elementCount } from '../../core/tensor.js';
import { classify } from '../classification.js';
import type { ResponseEncoding } from './compression.js';
import { compress } from './compression.js';
import type { EncodedInferResponse, OutputPlan, RepeatedResponse } from './infer-plan.js';
import { stringifyJson } from './json.js';
import { sendError } from './reply.js';
import { sendLargeJsonResponse } from './infer-response-stream.js';
import { dataToJsonText, JsonArrayText } from './tensor-json.js';

/**
 * Outputs sent as JSON from this many bytes of tensor data on are rendered a slice at a time
 * (infer-response-stream.ts): their text is about ten times the data, and rendering it in one
 * go held the event loop for seconds and the heap for gigabytes. Smaller ones keep the one-string path.
 */
export const STREAM_JSON_OUTPUT_BYTES = 1 << 20;

/**
 * Up to this many body bytes an identity response is copied into one buffer with its head (one
 * write, outputs released at once); larger ones go out as views in one writev, without a copy.
 */
export const COPY_BODY_BYTES = 16 * 1024;

/** `--http-max-json-output-size` unless the server says otherwise. */
export const DEFAULT_MAX_JSON_OUTPUT_SIZE = 256 * 1024 * 1024;

/**
 * Builds the JSON header and the list of binary blobs.
 * @param batching the model batches (first output dim is the batch), for classification.
 * @throws TritonError when an output cannot be encoded as asked (e.g. FP16 as JSON).
 */
export function encodeInferResponse(
  response: InferResponse,
  plan: OutputPlan,
  batching: boolean,
  maxJsonOutputSize = DEFAULT_MAX_JSON_OUTPUT_SIZE,
): EncodedInferResponse {
  const last = plan.lastResponse;
  if (last?.matches(response)) return last.encoded(response);
  let pieces: Array<string | JsonArrayText> | undefined;
  let json = '{';
  if (response.id !== '') json += '"id":' + JSON.stringify(response.id) + ',';
  json += '"model_name":' + quoted(response.modelName) + ',"model_version":' + quoted(response.modelVersion);
  if (hasResponseParameters(response)) json += ',"parameters":' + stringifyJson(response.parameters);
  json += ',"outputs":[';
  const outputs = response.outputs;
  // Sized for every output and cut to the blobs found (no growth per push).
  const blobs: Buffer[] = new Array(outputs.length);
  let blobCount = 0;
  let blobBytes = 0;
  // Every output goes as a binary blob, unclassified: the header can be kept for the next
  // response of the same form (RepeatedResponseHeader).
  let allBlobs = true;
  for (let i = 0; i < outputs.length; i++) {
    let out: Tensor = outputs[i]!;
    const choice = plan.requested?.get(out.name);
    const binary = choice !== undefined ? choice.binary : plan.defaultBinary;
    if (choice !== undefined && choice.classification > 0) {
      out = classify(out, choice.classification, batching, choice.labels);
      allBlobs = false;
    }
    if (i > 0) json += ',';
    json += '{"name":' + quoted(out.name) + ',"datatype":"' + out.datatype + '","shape":[' + out.shape.join(',') + ']';
    if (out.shm !== undefined) {
      // Written into the client's shared-memory region: name, datatype and shape only.
      json += '}';
      allBlobs = false;
    } else if (binary) {
      json += ',"parameters":{"binary_data_size":' + out.data.length + '}}';
      if (out.data.length > 0) {
        blobs[blobCount++] = out.data;
        blobBytes += out.data.length;
      }
    } else if (out.data.length < STREAM_JSON_OUTPUT_BYTES) {
      json += ',"data":' + dataToJsonText(out.name, out.datatype, out.data, elementCount(out.shape)) + '}';
      allBlobs = false;
    } else {
      if (out.data.length > maxJsonOutputSize) throw Errors.jsonOutputTooLarge(out.name, out.data.length, maxJsonOutputSize);
      (pieces ??= []).push(json + ',"data":', new JsonArrayText(out.name, out.datatype, out.data, elementCount(out.shape)));
      json = '}';
    }
  }
  json += ']}';
  blobs.length = blobCount;
  if (pieces !== undefined) {
    pieces.push(json);
    return { json: '', jsonBytes: 0, blobs, blobBytes, pieces };
  }
  const jsonBytes = Buffer.byteLength(json);
  if (plan.repeated === true) {
    const form = allBlobs ? ResponseForm.of(response, true) : undefined;
    plan.lastResponse = form && new RepeatedResponseHeader(form, json, jsonBytes);
  }
  return { json, jsonBytes, blobs, blobBytes };
}

/**
 * The JSON header of a response, kept on a plan that repeated requests share (`plan.repeated`,
 * set by infer-header-reader.ts) for the next response of the same form: the same model and
 * version, no id, no parameters, and the same outputs in the same order by name, datatype,
 * shape and byte size, every one sent as a binary blob. Its text depends on nothing else, so
 * the next such response reuses it instead of building it again (a client that repeats its
 * request header, as perf_analyzer and tritonclient do in a loop, gets responses of one form).
 */
export class RepeatedResponseHeader implements RepeatedResponse {
  /** A response's header, just encoded as `json`, of a form every output of which went as a blob. */
  constructor(
    private readonly form: ResponseForm,
    private readonly json: string,
    private readonly jsonBytes: number,
  ) {}

  /** Whether `response`'s header would be this one's text. */
  matches(response: InferResponse): boolean {
    return this.form.matches(response);
  }

  /** What encodeInferResponse returns for `response`, which matches(). */
  encoded(response: InferResponse): EncodedInferResponse {
    const outs = response.outputs;
    // Sized for every output and cut to the blobs found, as encodeInferResponse does.
    const blobs: Buffer[] = new Array(outs.length);
    let blobCount = 0;
    let blobBytes = 0;
    for (let i = 0; i < outs.length; i++) {
      const data = outs[i]!.data;
      if (data.length === 0) continue;
      blobs[blobCount++] = data;
      blobBytes += data.length;
    }
    blobs.length = blobCount;
    return { json: this.json, jsonBytes: this.jsonBytes, blobs, blobBytes };
  }
}

/** Model, version and output names as JSON strings, kept: they are the same on every response. */
const QUOTED = new Map<string, string>();
const QUOTED_MAX = 4096;

function quoted(s: string): string {
  let q = QUOTED.get(s);
  if (q === undefined) {
    q = JSON.stringify(s);
    if (QUOTED.size >= QUOTED_MAX) QUOTED.clear();
    QUOTED.set(s, q);
  }
  return q;
}

/**
 * Sends the final response of a request (an error response included) and releases its
 * buffers once written. Never throws.
 */
export function writeInferResponse(
  res: HttpResponse,
  response: InferResponse,
  plan: OutputPlan,
  batching: boolean,
  encoding: ResponseEncoding,
  maxJsonOutputSize = DEFAULT_MAX_JSON_OUTPUT_SIZE,
): void {
  if (res.destroyed || res.headersSent) {
    releaseNow(response); // the client went away: nothing to write
    return;
  }
  if (response.error !== undefined) {
    sendError(res, response.error);
    releaseNow(response);
    return;
  }

  let enc: EncodedInferResponse;
  try {
    enc = encodeInferResponse(response, plan, batching, maxJsonOutputSize);
  } catch (err) {
    sendError(res, asTritonError(err));
    releaseNow(response);
    return;
  }

  if (encoding === 'identity' && enc.pieces === undefined && enc.jsonBytes + enc.blobBytes <= COPY_BODY_BYTES) {
    // Small: head, JSON and outputs copied into one buffer and written at once; the output
    // blocks go back to the stub now instead of when the socket is done.
    res.endInferAnswer(enc.json, enc.jsonBytes, enc.blobs, enc.blobBytes);
    releaseNow(response);
    return;
  }
  // Content-Length comes last, once the body's form is known.
  const headers = inferAnswerFields(enc.jsonBytes, enc.blobBytes, false);
  if (enc.pieces !== undefined) {
    sendLargeJsonResponse(res, { pieces: enc.pieces, blobs: enc.blobs, blobBytes: enc.blobBytes }, headers, encoding, releaseOnce(response));
    return;
  }

  if (encoding !== 'identity') {
    const parts = [Buffer.from(enc.json), ...enc.blobs];
    void compress(parts, encoding).then((packed) => {
      releaseNow(response); // zlib has consumed the inputs
      if (res.destroyed) return;
      if (packed === undefined) {
        // Like Triton: a compression failure falls back to an identity body.
        headers['Content-Length'] = parts.reduce((n, p) => n + p.length, 0);
        res.writeHead(200, headers);
        res.end(Buffer.concat(parts));
        return;
      }
      headers['Content-Encoding'] = encoding;
      headers['Content-Length'] = packed.length;
      res.writeHead(200, headers);
      res.end(packed);
    });
    return;
  }

  headers['Content-Length'] = enc.jsonBytes + enc.blobBytes;
  // 'close' follows 'finish' (data handed to the kernel) or an aborted socket: either way the
  // output buffers are no longer referenced by pending writes.
  res.onClose(releaseOnce(response));
  res.writeHead(200, headers);
  res.cork();
  res.write(enc.json);
  for (let i = 0; i < enc.blobs.length; i++) res.write(enc.blobs[i]);
  res.end(); // uncorks: header, JSON and blobs leave in one writev
}

/**
 * Gives the response's output buffers back, now. Each path of writeInferResponse calls it or
 * hands on releaseOnce's function exactly once; the common ones release at once, with no
 * closure made per response.
 */
function releaseNow(response: InferResponse): void {
  try {
    response.release?.();
  } catch {
    // A failing release must not take the connection down with it.
  }
}

/** releaseNow for a path that releases later (a write or compression still holds the buffers), at most once. */
function releaseOnce(response: InferResponse): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    releaseNow(response);
  };
}
