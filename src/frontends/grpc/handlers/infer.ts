/**
 * @module frontends/grpc/handlers/infer
 * ModelInfer, in Triton's order: resolve the model and refuse decoupled ones (UNIMPLEMENTED) →
 * decode the message → hand the request to the core → answer with its one final response,
 * serialised here so its output buffers can be released right after the copy. A client cancel
 * or an expired deadline aborts the request's signal.
 */
import { Errors } from '../../../core/errors.js';
import type { InferRequest, InferResponse, ResponseListener } from '../../../core/inference.js';
import type { RequestTrace } from '../../../core/trace/request-trace.js';
import type { GrpcContext } from '../context.js';
import type { UnaryCall } from '../transport/call.js';
import { REPLIES_LATER, type UnaryReply } from '../service.js';
import { CancelToken } from '../../../core/cancellation.js';
import { decodeInferMessage, encodeInferResponse, type InferMessage, type OutputPlan } from '../infer-codec.js';
import { outputLabels } from '../../classification.js';
import { withForwardedHeaders } from '../../header-forward.js';
import { traceLine, traceTags, traced, tracedError } from '../../../core/trace-tags.js';

export function modelInfer(ctx: GrpcContext, msg: InferMessage, call: UnaryCall<InferMessage>, reply: UnaryReply): typeof REPLIES_LATER {
  const handle = ctx.core.resolveModel(msg.modelName, msg.modelVersion);
  if (handle.decoupled) throw Errors.decoupledGrpc();
  const { request, plan } = decodeInferMessage(msg);
  if (ctx.headerForward) request.parameters = withForwardedHeaders(ctx.headerForward, call.metadata.all(), request.parameters);
  if (traceTags.grpc) traceLine('grpc', `${call.traceName}: received ${traced(request)}: ModelInfer, model ${msg.modelName} version '${msg.modelVersion}'`);
  // Triton's gRPC trace events around the core's (docs/protocol-notes.md, "Trace"): the wait
  // for the request message is the call's life until it was decoded.
  const trace = ctx.core.tracer.sample(msg.modelName);
  if (trace !== undefined) {
    trace.add('GRPC_WAITREAD_START', call.startNs);
    trace.add('GRPC_WAITREAD_END');
    request.trace = trace;
  }
  const batching = handle.maxBatchSize > 0;
  if (plan.classification !== undefined) {
    for (const name of plan.classification.keys()) {
      const labels = outputLabels(handle, name);
      if (labels) (plan.labels ??= new Map()).set(name, labels);
    }
  }

  // A CancelToken rather than an AbortController: an EventTarget per request costs more than
  // decoding the request. The call holds the token itself, not a closure around it
  // (UnaryCall.canceller says why).
  const cancel = new CancelToken();
  request.signal = cancel;
  call.canceller = cancel;
  if (traceTags.grpc) {
    cancel.addEventListener('abort', () => traceLine('grpc', `${call.traceName}: ${traced(request)}: call ended before the answer; cancelling the request`));
  }
  ctx.core.infer(request, new InferAnswer(call, reply, request, plan, batching, trace));
  return REPLIES_LATER;
}

/** The core's response listener of one ModelInfer call (an object per call, not a closure and its scope). */
class InferAnswer implements ResponseListener {
  private answered = false;

  constructor(
    private readonly call: UnaryCall<InferMessage>,
    private readonly reply: UnaryReply,
    private readonly request: InferRequest,
    private readonly plan: OutputPlan,
    private readonly batching: boolean,
    private readonly trace: RequestTrace | undefined,
  ) {}

  onResponse(response: InferResponse): void {
    // A non-decoupled model sends exactly one (final) response; anything else is dropped.
    if (!response.final || this.answered) {
      response.release?.();
      return;
    }
    this.answered = true;
    const { call, reply, trace } = this;
    call.canceller = undefined;
    if (traceTags.grpc) traceLine('grpc', `${call.traceName}: ${traced(this.request)}: final response (${tracedError(response.error)})`);
    trace?.add('INFER_RESPONSE_COMPLETE');
    if (response.error !== undefined) {
      response.release?.();
      reply.fail(call, response.error);
      trace?.done(); // a failed request's trace is written too
      return;
    }
    trace?.add('GRPC_SEND_START');
    let bytes: Buffer | undefined;
    try {
      bytes = encodeInferResponse(response, this.plan, this.batching);
    } catch (err) {
      reply.fail(call, err);
    } finally {
      response.release?.();
    }
    if (bytes !== undefined) reply.answer(call, bytes);
    if (trace !== undefined) {
      trace.add('GRPC_SEND_END');
      trace.done();
    }
  }
}
