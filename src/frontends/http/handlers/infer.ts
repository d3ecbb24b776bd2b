/**
 * @module frontends/http/handlers/infer
 * `POST /v2/models/<m>[/versions/<v>]/infer`, in Triton's order: resolve the model and refuse
 * decoupled ones → check Content-Encoding → read and inflate the body → split it per
 * `Inference-Header-Content-Length` → hand the request to the core → write its one final
 * response. A client that disconnects before the response aborts the request's signal.
 */
import type { HttpRequest, HttpResponse } from '../wire/exchange.js';
import { Errors, asTritonError } from '../../../core/errors.js';
import { CancelToken } from '../../../core/cancellation.js';
import type { InferResponse } from '../../../core/inference.js';
import type { ModelHandle } from '../../../core/model-handle.js';
import { decodeBody, inputSizeLimit, readBodyThen, requestEncoding, type Body, type BodyLimit } from '../body.js';
import { responseEncoding } from '../compression.js';
import type { HttpContext } from '../context.js';
import type { ParsedInferRequest } from '../infer-plan.js';
import { parseHeaderLength, parseInferRequest } from '../infer-request.js';
import { LARGE_JSON_BYTES, parseInferRequestOffLoop } from '../json-parse-worker.js';
import { writeInferResponse } from '../infer-response.js';
import { sendError } from '../reply.js';
import { checkVersion } from './version.js';
import { outputLabels } from '../../classification.js';
import { withForwardedHeaders } from '../../header-forward.js';
import { traceLine, traceTags, traced, tracedError } from '../../../core/trace-tags.js';

export function handleInfer(ctx: HttpContext, req: HttpRequest, res: HttpResponse, model: string, version: string): void {
  // Read only by a trace: not taken (a BigInt each) while tracing is off.
  const recvStartNs = ctx.core.tracer.settings.enabled ? process.hrtime.bigint() : NOT_TIMED;
  let handle: ModelHandle;
  let v: string;
  try {
    v = checkVersion(version);
    handle = ctx.core.resolveModel(model, v);
  } catch (err) {
    sendError(res, err);
    return;
  }
  if (handle.decoupled) {
    sendError(res, Errors.decoupledHttp());
    return;
  }
  const encoding = requestEncoding(req.headers['content-encoding']);
  if (encoding === undefined) {
    res.setHeader('Accept-Encoding', 'gzip, deflate');
    sendError(res, Errors.unsupportedCompression());
    return;
  }
  let limit: BodyLimit;
  try {
    limit = bodyLimit(ctx, req, encoding);
  } catch (err) {
    res.shouldKeepAlive = false;
    sendError(res, err);
    return;
  }
  // Usually the whole body is already here and this runs the request at once, with no promise.
  readBodyThen(req, limit, (err, raw) => {
    if (err !== undefined) {
      refused(req, res, err);
      return;
    }
    if (encoding === 'identity') {
      runGuarded(ctx, req, res, handle, model, v, raw!, recvStartNs);
      return;
    }
    decodeBody(raw!, encoding, ctx.maxInputSize, ctx.bodyBudget).then(
      (body) => runGuarded(ctx, req, res, handle, model, v, body, recvStartNs),
      (e: unknown) => refused(req, res, e),
    );
  });
}

/** The receive times of a request that arrived while tracing was off. */
const NOT_TIMED = -1n;

/** The body could not be had (too large, broken, not inflatable). */
function refused(req: HttpRequest, res: HttpResponse, err: unknown): void {
  if (traceTags.http) traceLine('http', `conn ${res.connectionId}: ${req.method} ${req.url} refused: ${asTritonError(err).message}`);
  // Refused before the end of the body (too large): close rather than read and discard
  // the rest of a possibly huge upload.
  if (!req.complete) res.shouldKeepAlive = false;
  sendError(res, err);
}

/** run(), which may be called from the connection's read: a bug in it answers 500 rather than escape. */
function runGuarded(
  ctx: HttpContext,
  req: HttpRequest,
  res: HttpResponse,
  handle: ModelHandle,
  model: string,
  version: string,
  body: Body,
  recvStartNs: bigint,
): void {
  try {
    run(ctx, req, res, handle, model, version, body, recvStartNs);
  } catch (err) {
    ctx.logger?.error(`HTTP infer for '${model}' failed: ${asTritonError(err).message}`);
    sendError(res, err);
  }
}

/**
 * `--http-max-input-size` bounds the JSON header, a raw binary body and any compressed body
 * (inflated), as Triton does. Binary tensor data after a JSON header of
 * `Inference-Header-Content-Length` bytes is bounded only by the body budget, so a large
 * binary input is served; the header length is checked before the body is read.
 */
function bodyLimit(ctx: HttpContext, req: HttpRequest, encoding: string): BodyLimit {
  const plain = inputSizeLimit(ctx.maxInputSize, ctx.bodyBudget);
  const header = req.headers['inference-header-content-length'];
  if (encoding !== 'identity' || header === undefined || !/^\s*[0-9]+\s*$/.test(header)) return plain;
  const headerLength = Number(header);
  if (headerLength === 0) return plain; // raw binary input: the whole body counts
  if (headerLength > ctx.maxInputSize) throw Errors.jsonHeaderTooLarge(headerLength, ctx.maxInputSize);
  const capacity = ctx.bodyBudget.capacity;
  return { max: capacity, tooLarge: (size) => Errors.bodyOverMemory(size, capacity), budget: ctx.bodyBudget };
}

function run(
  ctx: HttpContext,
  req: HttpRequest,
  res: HttpResponse,
  handle: ModelHandle,
  model: string,
  version: string,
  body: Body,
  recvStartNs: bigint,
): void {
  const recvEndNs = recvStartNs === NOT_TIMED ? NOT_TIMED : process.hrtime.bigint();
  const headerField = req.headers['inference-header-content-length'];
  if (headerField === undefined && body.data.length >= LARGE_JSON_BYTES) {
    // A large JSON body is parsed off the event loop (json-parse-worker.ts).
    parseInferRequestOffLoop(body.data, model, version).then(
      (parsed) => infer(ctx, req, res, handle, model, parsed, body, recvStartNs, recvEndNs),
      (err) => {
        body.release();
        sendError(res, err);
      },
    );
    return;
  }
  let parsed;
  try {
    const headerLength = parseHeaderLength(headerField, body.data.length);
    parsed = parseInferRequest(body.data, headerLength, handle, model, version);
  } catch (err) {
    body.release();
    sendError(res, err);
    return;
  }
  infer(ctx, req, res, handle, model, parsed, body, recvStartNs, recvEndNs);
}

function infer(
  ctx: HttpContext,
  req: HttpRequest,
  res: HttpResponse,
  handle: ModelHandle,
  model: string,
  parsed: ParsedInferRequest,
  body: Body,
  /** When the request's body started and finished arriving (monotonic ns; trace events). */
  recvStartNs: bigint,
  recvEndNs: bigint,
): void {
  const { request, plan } = parsed;
  if (ctx.headerForward) request.parameters = withForwardedHeaders(ctx.headerForward, req.headers, request.parameters);
  if (traceTags.http) {
    traceLine(
      'http',
      `conn ${res.connectionId}: received ${traced(request)}: ${req.method} ${req.url}, model ${model} version '${request.modelVersion}', ${body.data.length} body bytes`,
    );
  }
  // Triton's HTTP trace events around the core's (docs/protocol-notes.md, "Trace").
  const trace = ctx.core.tracer.sample(model);
  if (trace !== undefined) {
    // Tracing was switched on while this body arrived: its receive times are now.
    const now = recvEndNs === NOT_TIMED ? process.hrtime.bigint() : recvEndNs;
    trace.add('HTTP_RECV_START', recvStartNs === NOT_TIMED ? now : recvStartNs);
    trace.add('HTTP_RECV_END', now);
    request.trace = trace;
  }
  const batching = handle.maxBatchSize > 0;
  if (plan.classification === true) {
    for (const [name, choice] of plan.requested!) if (choice.classification > 0) choice.labels = outputLabels(handle, name);
  }
  const encoding = responseEncoding(req.headers['accept-encoding']);

  // A CancelToken rather than an AbortController: building an EventTarget per request cost
  // more than parsing the request.
  const cancel = new CancelToken();
  request.signal = cancel;
  let answered = false;
  const onClose = (): void => {
    if (answered) return;
    if (traceTags.http) traceLine('http', `conn ${res.connectionId}: ${traced(request)}: client gone before the answer; cancelling the request`);
    cancel.abort();
  };
  res.onClose(onClose);
  if (res.destroyed) onClose(); // gone while the body was being read: 'close' already fired

  ctx.core.infer(request, (response: InferResponse) => {
    // Input tensors are views of the body; the final response means nothing reads them now.
    if (response.final) body.release();
    if (!response.final) {
      // Non-decoupled models send exactly one response; anything before it is dropped.
      response.release?.();
      return;
    }
    if (answered) {
      response.release?.();
      return;
    }
    answered = true;
    res.offClose(onClose);
    if (trace !== undefined) {
      trace.add('INFER_RESPONSE_COMPLETE');
      trace.add('HTTP_SEND_START');
    }
    try {
      writeInferResponse(res, response, plan, batching, encoding, ctx.maxJsonOutputSize);
    } catch (err) {
      ctx.logger?.error(`HTTP infer response for '${model}' failed: ${asTritonError(err).message}`);
      res.destroy();
    }
    if (traceTags.http) {
      traceLine(
        'http',
        `conn ${res.connectionId}: ${traced(request)}: answered ${res.statusCode} (${tracedError(response.error)})${res.destroyed ? ', connection gone' : ''}`,
      );
    }
    if (trace !== undefined) {
      trace.add('HTTP_SEND_END');
      trace.done();
    }
  });
}
