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
import type { InferRequest, InferResponse, ResponseListener } from '../../../core/inference.js';
import type { RequestTrace } from '../../../core/trace/request-trace.js';
import type { ModelHandle } from '../../../core/model-handle.js';
import { decodeBody, inputSizeLimit, readBodyThen, requestEncoding, type Body, type BodyLimit, type BodyListener, type RequestEncoding } from '../body.js';
import { responseEncoding, type ResponseEncoding } from '../compression.js';
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
  readBodyThen(req, limit, new InferExchange(ctx, req, res, handle, model, v, encoding, recvStartNs));
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

/**
 * One infer request from its body to its answer: the body's listener, the response's close
 * listener and the core's response listener in one record, where each was a closure (three
 * per request, with their scopes: 0.65 KB; docs/benchmarks.md, "Allocation per request").
 */
class InferExchange implements BodyListener, ResponseListener {
  private body: Body | undefined = undefined;
  private plan: ParsedInferRequest['plan'] | undefined = undefined;
  private request: InferRequest | undefined = undefined;
  private trace: RequestTrace | undefined = undefined;
  private cancel: CancelToken | undefined = undefined;
  private batching = false;
  private answerEncoding: ResponseEncoding = 'identity';
  private answered = false;

  constructor(
    private readonly ctx: HttpContext,
    private readonly req: HttpRequest,
    private readonly res: HttpResponse,
    private readonly handle: ModelHandle,
    private readonly model: string,
    private readonly version: string,
    /** The request's Content-Encoding. */
    private readonly encoding: RequestEncoding,
    /** When the request's body started arriving (monotonic ns; trace events), or NOT_TIMED. */
    private readonly recvStartNs: bigint,
  ) {}

  /** The body is here, or could not be had (readBodyThen). */
  onBody(err: Error | undefined, raw: Body | undefined): void {
    if (err !== undefined) {
      refused(this.req, this.res, err);
      return;
    }
    if (this.encoding === 'identity') {
      this.runGuarded(raw!);
      return;
    }
    decodeBody(raw!, this.encoding, this.ctx.maxInputSize, this.ctx.bodyBudget).then(
      (body) => this.runGuarded(body),
      (e: unknown) => refused(this.req, this.res, e),
    );
  }

  /** run(), which may be called from the connection's read: a bug in it answers 500 rather than escape. */
  private runGuarded(body: Body): void {
    try {
      this.run(body);
    } catch (err) {
      this.ctx.logger?.error(`HTTP infer for '${this.model}' failed: ${asTritonError(err).message}`);
      sendError(this.res, err);
    }
  }

  private run(body: Body): void {
    const recvEndNs = this.recvStartNs === NOT_TIMED ? NOT_TIMED : process.hrtime.bigint();
    const headerField = this.req.headers['inference-header-content-length'];
    if (headerField === undefined && body.data.length >= LARGE_JSON_BYTES) {
      // A large JSON body is parsed off the event loop (json-parse-worker.ts).
      parseInferRequestOffLoop(body.data, this.model, this.version).then(
        (parsed) => this.infer(parsed, body, recvEndNs),
        (err) => {
          body.release();
          sendError(this.res, err);
        },
      );
      return;
    }
    let parsed;
    try {
      const headerLength = parseHeaderLength(headerField, body.data.length);
      parsed = parseInferRequest(body.data, headerLength, this.handle, this.model, this.version);
    } catch (err) {
      body.release();
      sendError(this.res, err);
      return;
    }
    this.infer(parsed, body, recvEndNs);
  }

  /** `recvEndNs`: when the body finished arriving (or NOT_TIMED). */
  private infer(parsed: ParsedInferRequest, body: Body, recvEndNs: bigint): void {
    const { ctx, req, res } = this;
    const { request, plan } = parsed;
    this.body = body;
    this.plan = plan;
    this.request = request;
    if (ctx.headerForward) request.parameters = withForwardedHeaders(ctx.headerForward, req.headers, request.parameters);
    if (traceTags.http) {
      traceLine(
        'http',
        `conn ${res.connectionId}: received ${traced(request)}: ${req.method} ${req.url}, model ${this.model} version '${request.modelVersion}', ${body.data.length} body bytes`,
      );
    }
    // Triton's HTTP trace events around the core's (docs/protocol-notes.md, "Trace").
    const trace = ctx.core.tracer.sample(this.model);
    if (trace !== undefined) {
      // Tracing was switched on while this body arrived: its receive times are now.
      const now = recvEndNs === NOT_TIMED ? process.hrtime.bigint() : recvEndNs;
      trace.add('HTTP_RECV_START', this.recvStartNs === NOT_TIMED ? now : this.recvStartNs);
      trace.add('HTTP_RECV_END', now);
      request.trace = trace;
      this.trace = trace;
    }
    this.batching = this.handle.maxBatchSize > 0;
    if (plan.classification === true) {
      for (const [name, choice] of plan.requested!) if (choice.classification > 0) choice.labels = outputLabels(this.handle, name);
    }
    this.answerEncoding = responseEncoding(req.headers['accept-encoding']);

    // A CancelToken rather than an AbortController: building an EventTarget per request cost
    // more than parsing the request.
    const cancel = new CancelToken();
    this.cancel = cancel;
    request.signal = cancel;
    res.onClose(this);
    if (res.destroyed) this.onResponseClosed(); // gone while the body was being read: 'close' already fired

    ctx.core.infer(request, this);
  }

  /** The response was written out, or the client went first: then the request is cancelled. */
  onResponseClosed(): void {
    if (this.answered) return;
    if (traceTags.http) traceLine('http', `conn ${this.res.connectionId}: ${traced(this.request!)}: client gone before the answer; cancelling the request`);
    this.cancel!.abort();
  }

  onResponse(response: InferResponse): void {
    // Input tensors are views of the body; the final response means nothing reads them now.
    if (response.final) this.body!.release();
    if (!response.final) {
      // Non-decoupled models send exactly one response; anything before it is dropped.
      response.release?.();
      return;
    }
    if (this.answered) {
      response.release?.();
      return;
    }
    this.answered = true;
    const { res, trace } = this;
    res.offClose(this);
    if (trace !== undefined) {
      trace.add('INFER_RESPONSE_COMPLETE');
      trace.add('HTTP_SEND_START');
    }
    try {
      writeInferResponse(res, response, this.plan!, this.batching, this.answerEncoding, this.ctx.maxJsonOutputSize);
    } catch (err) {
      this.ctx.logger?.error(`HTTP infer response for '${this.model}' failed: ${asTritonError(err).message}`);
      res.destroy();
    }
    if (traceTags.http) {
      traceLine(
        'http',
        `conn ${res.connectionId}: ${traced(this.request!)}: answered ${res.statusCode} (${tracedError(response.error)})${res.destroyed ? ', connection gone' : ''}`,
      );
    }
    if (trace !== undefined) {
      trace.add('HTTP_SEND_END');
      trace.done();
    }
  }
}
