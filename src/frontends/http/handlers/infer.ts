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
import { decodeBody, readBody, requestEncoding } from '../body.js';
import { responseEncoding } from '../compression.js';
import type { HttpContext } from '../context.js';
import { parseHeaderLength, parseInferRequest } from '../infer-request.js';
import { writeInferResponse } from '../infer-response.js';
import { sendError } from '../reply.js';
import { checkVersion } from './version.js';

export function handleInfer(ctx: HttpContext, req: HttpRequest, res: HttpResponse, model: string, version: string): void {
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
  readBody(req, ctx.maxInputSize)
    .then((raw) => decodeBody(raw, encoding, ctx.maxInputSize))
    .then(
      (body) => run(ctx, req, res, handle, model, v, body),
      (err) => {
        // Refused before the end of the body (too large): close rather than read and discard
        // the rest of a possibly huge upload.
        if (!req.complete) res.shouldKeepAlive = false;
        sendError(res, err);
      },
    );
}

function run(ctx: HttpContext, req: HttpRequest, res: HttpResponse, handle: ModelHandle, model: string, version: string, body: Buffer): void {
  let parsed;
  try {
    const headerLength = parseHeaderLength(req.headers['inference-header-content-length'], body.length);
    parsed = parseInferRequest(body, headerLength, handle, model, version);
  } catch (err) {
    sendError(res, err);
    return;
  }
  const { request, plan } = parsed;
  const batching = handle.maxBatchSize > 0;
  const encoding = responseEncoding(req.headers['accept-encoding']);

  // A CancelToken rather than an AbortController: building an EventTarget per request cost
  // more than parsing the request.
  const cancel = new CancelToken();
  request.signal = cancel;
  let answered = false;
  const onClose = (): void => {
    if (!answered) cancel.abort();
  };
  res.onClose(onClose);
  if (res.destroyed) onClose(); // gone while the body was being read: 'close' already fired

  ctx.core.infer(request, (response: InferResponse) => {
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
    try {
      writeInferResponse(res, response, plan, batching, encoding);
    } catch (err) {
      ctx.logger?.error(`HTTP infer response for '${model}' failed: ${asTritonError(err).message}`);
      res.destroy();
    }
  });
}
