/**
 * @module frontends/http/handlers/generate
 * `POST /v2/models/<m>[/versions/<v>]/generate` and `.../generate_stream`, in Triton's order:
 * version → model lookup → Content-Encoding (only identity) → JSON body → inference.
 * Decoupled models are accepted on both.
 *
 * `generate` answers one JSON object and needs exactly one response from the model; with any
 * other count the body is Triton's "generate expects model to produce exactly 1 response" error
 * (its status is still the one the first response decided, as in Triton).
 *
 * `generate_stream` answers `text/event-stream; charset=utf-8`: one `data: <json>\n\n` event per
 * model response, `data: {"error": ...}` for an error response; the status is fixed by the first
 * response, the stream ends with the final one. A decoupled model's flags-only FINAL produces no
 * event.
 *
 * Errors found before the request reaches a model (lookup, body, validation) are plain JSON
 * error replies with their status, as for `/infer`. A client that disconnects before the final
 * response cancels the request: the model sees `request.is_cancelled()` turn true (beyond
 * Triton, whose HTTP frontend does not cancel).
 */
import type { HttpRequest, HttpResponse } from '../wire/exchange.js';
import { type TritonError, asTritonError, httpStatusOf, Errors } from '../../../core/errors.js';
import { CancelToken } from '../../../core/cancellation.js';
import { traceLine, traceTags, traced } from '../../../core/trace-tags.js';
import type { InferRequest, InferResponse } from '../../../core/inference.js';
import type { ModelHandle } from '../../../core/model-handle.js';
import { inputSizeLimit, readBody } from '../body.js';
import type { HttpContext } from '../context.js';
import { parseGenerateRequest, renderGenerateResponse } from '../generate-codec.js';
import { errorJson } from '../json.js';
import { sendError, sendJson } from '../reply.js';
import { checkVersion } from './version.js';

const EVENT_STREAM = 'text/event-stream; charset=utf-8';

export const NOT_ONE_RESPONSE =
  'generate expects model to produce exactly 1 response, use generate stream for model that generates various number of responses';

export function handleGenerate(ctx: HttpContext, req: HttpRequest, res: HttpResponse, model: string, version: string, streaming: boolean): void {
  let handle: ModelHandle;
  let v: string;
  try {
    v = checkVersion(version);
    handle = ctx.core.resolveModel(model, v);
  } catch (err) {
    sendError(res, err);
    return;
  }
  const encoding = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (encoding !== '' && encoding !== 'identity') {
    sendError(res, Errors.generateEncoding());
    return;
  }
  const recvStartNs = process.hrtime.bigint();
  readBody(req, inputSizeLimit(ctx.maxInputSize, ctx.bodyBudget)).then(
    (body) => {
      const recvEndNs = process.hrtime.bigint();
      let request: InferRequest;
      try {
        request = parseGenerateRequest(body.data, handle, model, v);
      } catch (err) {
        sendError(res, err);
        return;
      } finally {
        // The request's tensors are built from parsed JSON values, not views of the body.
        body.release();
      }
      // Triton's HTTP trace events around the core's (docs/protocol-notes.md, "Trace").
      const trace = ctx.core.tracer.sample(model);
      if (trace !== undefined) {
        trace.add('HTTP_RECV_START', recvStartNs);
        trace.add('HTTP_RECV_END', recvEndNs);
        request.trace = trace;
      }
      run(ctx, res, request, streaming);
    },
    (err) => {
      if (!req.complete) res.shouldKeepAlive = false;
      sendError(res, err);
    },
  );
}

/**
 * Unread bytes at which a generate_stream client that does not read is dropped: a decoupled model
 * may send faster than any client reads, and the server must not buffer without end. The request
 * is cancelled (the model sees `is_cancelled()`) and the connection closed. Lower than a gRPC
 * stream's bound (frontends/grpc/handlers/stream-infer.ts, QUEUE_LIMIT): what waits here is
 * JSON text, several times the tensor bytes it carries and held as JS strings.
 */
const UNREAD_LIMIT = 32 * 1024 * 1024;

function run(ctx: HttpContext, res: HttpResponse, request: InferRequest, streaming: boolean): void {
  if (traceTags.http) {
    traceLine(
      'http',
      `conn ${res.connectionId}: received ${traced(request)}: ${streaming ? 'generate_stream' : 'generate'} of model ${request.modelName} version '${request.modelVersion}'`,
    );
  }
  const abort = new CancelToken();
  request.signal = abort;
  let finished = false;
  const onClose = (): void => {
    if (finished) return;
    if (traceTags.http) traceLine('http', `conn ${res.connectionId}: ${traced(request)}: client gone before the last response; cancelling the request`);
    abort.abort();
  };
  res.onClose(onClose);
  if (res.destroyed) onClose();

  let inCall = true;
  let count = 0;
  let status = 200;
  const bodies: string[] = [];

  const trace = request.trace;
  ctx.core.infer(request, (response: InferResponse) => {
    if (finished) {
      response.release?.();
      if (response.final) trace?.done();
      return;
    }
    // Triton's generate marks each response complete, and times the write of each one it sends.
    trace?.add('INFER_RESPONSE_COMPLETE');
    // An error delivered while `infer` is still on the stack never reached a model (lookup,
    // validation): Triton answers those as a plain JSON error, like /infer does.
    if ((inCall || response.beforeModel === true) && count === 0 && response.final && response.error !== undefined) {
      finished = true;
      res.offClose(onClose);
      sendError(res, response.error);
      trace?.done();
      return;
    }
    const { text, error } = render(response, ctx.maxJsonOutputSize);
    if (count++ === 0) status = error === undefined ? 200 : httpStatusOf(error.code);
    if (response.final) {
      finished = true;
      res.offClose(onClose);
    }
    if (streaming) {
      if (res.destroyed) {
        if (response.final) trace?.done();
        return;
      }
      if (!res.headersSent) res.writeHead(status, { 'Content-Type': EVENT_STREAM });
      if (text !== undefined) {
        trace?.add('HTTP_SEND_START');
        res.corkForTurn();
        res.write('data: ' + text + '\n\n');
        trace?.add('HTTP_SEND_END');
      }
      if (response.final) {
        res.end();
        trace?.done();
      } else if (res.queuedBytes > UNREAD_LIMIT) {
        finished = true;
        res.offClose(onClose);
        abort.abort();
        ctx.logger?.warn(
          `generate_stream of '${request.modelName}': the client does not read its responses (${res.queuedBytes} bytes unread); request cancelled, connection closed`,
        );
        res.destroy();
      }
    } else {
      if (text !== undefined) bodies.push(text);
      if (response.final) {
        trace?.add('HTTP_SEND_START');
        sendJson(res, status, bodies.length === 1 ? bodies[0]! : errorJson(NOT_ONE_RESPONSE));
        if (trace !== undefined) {
          trace.add('HTTP_SEND_END');
          trace.done();
        }
      }
    }
  });
  inCall = false;
}

/**
 * The JSON text of one response (undefined for a decoupled model's flags-only FINAL, which
 * carries nothing to show), and the error it stands for, if any.
 */
function render(response: InferResponse, maxJsonOutputSize: number): { text?: string; error?: TritonError } {
  try {
    if (response.error !== undefined) return { text: errorJson(response.error.message), error: response.error };
    if (response.flagsOnly === true) return {};
    return { text: renderGenerateResponse(response, maxJsonOutputSize) };
  } catch (err) {
    const e = asTritonError(err);
    return { text: errorJson(e.message), error: e };
  } finally {
    response.release?.();
  }
}
