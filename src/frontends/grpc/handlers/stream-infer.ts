/**
 * @module frontends/grpc/handlers/stream-infer
 * ModelStreamInfer: a bidirectional stream on which every request message is an inference of
 * any model, decoupled or not. Each request yields 0..n responses, written in completion order
 * (clients match them by `id`), each carrying the parameter `triton_final_response`.
 *
 *   request ─► decode ─► core.infer ─► response 1 (final=false) ─► write
 *                                   ─► response 2 (final=false) ─► write
 *                                   ─► final, no outputs ─► written only if the request set
 *                                                           triton_enable_empty_final_response
 *
 * Errors go in-band (`error_message`, the stream stays open), unless the client sent the
 * metadata `triton_grpc_error: true`: then the first error ends the stream with its status and
 * aborts the other requests in flight. The stream ends OK once the client has half-closed and
 * every request has had its final response. A cancelled call aborts every request in flight.
 *
 * Backpressure (docs/design.md, "gRPC transport"): the stream stops reading request messages
 * while MAX_IN_FLIGHT of its requests are unanswered or QUEUE_HIGH bytes of responses wait for
 * the client to read them, so HTTP/2 flow control holds a client that sends and never reads.
 * Responses of requests already running still arrive (a decoupled model may send many): past
 * QUEUE_LIMIT unread bytes the stream ends with `streamNotRead` and its requests are cancelled,
 * which the model sees in `is_cancelled()`, instead of the server buffering without end.
 */
import { withForwardedHeaders } from '../../header-forward.js';
import { CancelToken } from '../../../core/cancellation.js';
import type { TritonError } from '../../../core/errors.js';
import { asTritonError, Errors, grpcStatusOf } from '../../../core/errors.js';
import type { InferResponse } from '../../../core/inference.js';
import type { GrpcContext } from '../context.js';
import type { InferMessage, OutputPlan } from '../infer-codec.js';
import { decodeInferMessage, encodeStreamError, encodeStreamResponse } from '../infer-codec.js';
import type { StatusError } from '../status.js';
import { statusError, toStatusError } from '../status.js';
import type { DuplexCall } from '../transport/call.js';
import { outputLabels } from '../../classification.js';
import { traceLine, traceTags, traced, tracedError } from '../../../core/trace-tags.js';

/** Requests of one stream running at once before it stops reading more. */
export const MAX_IN_FLIGHT = 64;
/** Unread response bytes at which the stream stops reading requests. */
export const QUEUE_HIGH = 4 * 1024 * 1024;
/** Unread response bytes at which the stream is ended (see the module comment). */
export const QUEUE_LIMIT = 128 * 1024 * 1024;

interface RequestIdentity {
  id: string;
  modelName: string;
  modelVersion: string;
}

export function modelStreamInfer(ctx: GrpcContext, call: DuplexCall<InferMessage>): void {
  const errorsEndStream = call.metadata.get('triton_grpc_error').some((v) => String(v).toLowerCase() === 'true');
  const inflight = new Set<CancelToken>();
  let halfClosed = false;
  let done = false;
  let paused = false;
  let drainWait = false;

  /** Pauses or resumes reading as the stream's load says; called whenever it changes. */
  const throttle = (): void => {
    if (done) return;
    const backlog = call.queuedBytes >= QUEUE_HIGH;
    const full = backlog || inflight.size >= MAX_IN_FLIGHT;
    if (full !== paused) {
      paused = full;
      if (full) call.pauseReading();
      else call.resumeReading();
    }
    if (backlog && !drainWait) {
      drainWait = true;
      call.onDrain(() => {
        drainWait = false;
        throttle();
      });
    }
  };

  const finish = (status?: StatusError): void => {
    if (done) return;
    if (traceTags.grpc)
      traceLine(
        'grpc',
        `${call.traceName}: stream ends (${status === undefined ? 'OK' : `status ${status.code}: ${status.details}`}), ${inflight.size} request(s) in flight cancelled`,
      );
    done = true;
    for (const a of inflight) a.abort();
    inflight.clear();
    call.end(status);
  };
  const endIfIdle = (): void => {
    if (halfClosed && inflight.size === 0) finish();
  };
  const fail = (err: TritonError, req: RequestIdentity, final: boolean): void => {
    if (errorsEndStream) finish(statusError(grpcStatusOf(err.code), err.message));
    else call.write(encodeStreamError(err.message, req, final));
  };

  // Triton's GRPC_WAITREAD_START of a request on a stream: since the previous message was read
  // (the call's start for the first), the time the stream waited for this one.
  let readNs = call.startNs;
  call.on('data', (msg: InferMessage) => {
    const waitNs = readNs;
    readNs = process.hrtime.bigint();
    if (done) return;
    let decoded;
    let batching: boolean;
    try {
      const handle = ctx.core.resolveModel(msg.modelName, msg.modelVersion);
      batching = handle.maxBatchSize > 0;
      decoded = decodeInferMessage(msg);
      if (ctx.headerForward) decoded.request.parameters = withForwardedHeaders(ctx.headerForward, call.metadata.all(), decoded.request.parameters);
      for (const name of decoded.plan.classification?.keys() ?? []) {
        const labels = outputLabels(handle, name);
        if (labels) (decoded.plan.labels ??= new Map()).set(name, labels);
      }
    } catch (err) {
      fail(asTritonError(err), { id: msg.id, modelName: msg.modelName, modelVersion: msg.modelVersion }, true);
      return;
    }
    const { request, plan, enableEmptyFinal } = decoded;
    if (traceTags.grpc)
      traceLine('grpc', `${call.traceName}: received ${traced(request)}: ModelStreamInfer, model ${msg.modelName} version '${msg.modelVersion}'`);
    // One trace per request on the stream (docs/protocol-notes.md, "Trace").
    const trace = ctx.core.tracer.sample(msg.modelName);
    if (trace !== undefined) {
      trace.add('GRPC_WAITREAD_START', waitNs);
      trace.add('GRPC_WAITREAD_END', readNs);
      request.trace = trace;
    }
    const abort = new CancelToken();
    request.signal = abort;
    inflight.add(abort);
    if (inflight.size >= MAX_IN_FLIGHT) throttle();
    ctx.core.infer(request, (response: InferResponse) => {
      if (traceTags.grpc) {
        const what = response.flagsOnly === true ? 'final flag alone' : response.final ? 'final response' : 'response';
        traceLine('grpc', `${call.traceName}: ${traced(request)}: ${what} (${tracedError(response.error)})${done ? ', stream already ended: dropped' : ''}`);
      }
      if (response.final) inflight.delete(abort);
      // Triton marks the request's responses complete once, at the final one.
      if (response.final) trace?.add('INFER_RESPONSE_COMPLETE');
      if (done) {
        response.release?.();
        if (response.final) trace?.done();
        return;
      }
      // A decoupled model may end a request with the FINAL flag alone; the client sees it only
      // if it asked to.
      const emptyFinal = response.flagsOnly === true;
      if (emptyFinal && !enableEmptyFinal) response.release?.();
      else if (trace === undefined) deliver(response, plan, batching);
      else {
        trace.add('GRPC_SEND_START');
        deliver(response, plan, batching);
        trace.add('GRPC_SEND_END');
      }
      if (response.final) {
        trace?.done();
        endIfIdle();
      }
      throttle();
    });
  });

  const deliver = (response: InferResponse, plan: OutputPlan, batching: boolean): void => {
    if (response.error !== undefined) {
      response.release?.();
      fail(response.error, response, response.final);
      return;
    }
    let bytes: Buffer;
    try {
      bytes = encodeStreamResponse(response, plan, batching, response.final);
    } catch (err) {
      fail(asTritonError(err), response, response.final);
      return;
    } finally {
      response.release?.();
    }
    call.write(bytes);
    const queued = call.queuedBytes;
    if (queued > QUEUE_LIMIT) finish(toStatusError(Errors.streamNotRead(queued, QUEUE_LIMIT)));
  };

  call.on('end', () => {
    if (traceTags.grpc) traceLine('grpc', `${call.traceName}: client half-closed the stream, ${inflight.size} request(s) in flight`);
    halfClosed = true;
    endIfIdle();
  });
  // Client cancel, deadline, or connection loss.
  call.on('cancelled', () => {
    if (traceTags.grpc) traceLine('grpc', `${call.traceName}: stream cancelled; cancelling ${inflight.size} request(s) in flight`);
    done = true;
    for (const a of inflight) a.abort();
    inflight.clear();
  });
}
