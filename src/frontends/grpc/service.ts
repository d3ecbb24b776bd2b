/**
 * @module frontends/grpc/service
 * Routes for the transport built from the protoc-gen-es descriptors: one per RPC at
 * `/<package>.<Service>/<Rpc>`, requests decoded with protobuf-es `fromBinary` (inference
 * requests of the common shape by hand, request-wire.ts), answers encoded with `toBinary`.
 *
 * A handler may answer with a message or with bytes it already serialised (the infer paths do,
 * so that an output buffer can be released as soon as it has been copied into the message).
 */
import type { DescMethod, DescService, Message } from '@bufbuild/protobuf';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { ModelInferRequestSchema } from '../../generated/grpc_service_pb.js';
import { readInferMessage } from './repeated-request.js';
import type { GrpcContext } from './context.js';
import { toStatusError } from './status.js';
import { traceLine, traceTags } from '../../core/trace-tags.js';
import type { DuplexCall, UnaryCall } from './transport/call.js';
import type { Route } from './transport/http2-server.js';

/**
 * A unary RPC: the response message (or its bytes), or a thrown / rejected error; or
 * REPLIES_LATER when the handler answers through `reply` itself (no promise per call).
 */
export type UnaryHandler<I = never> = (
  ctx: GrpcContext,
  request: I,
  call: UnaryCall<I>,
  reply: UnaryReply,
) => Message | Uint8Array | Promise<Message | Uint8Array> | typeof REPLIES_LATER;

/** How a handler that returned REPLIES_LATER answers; one per route, not per call. */
export interface UnaryReply {
  answer(call: UnaryCall, value: Message | Uint8Array): void;
  fail(call: UnaryCall, err: unknown): void;
}

/**
 * Returned by a handler that answers through its UnaryReply: ModelInfer, whose answer comes
 * from a callback of the core, so that a call costs no promise, its reactions and a turn of
 * the microtask queue on top of that callback.
 */
export const REPLIES_LATER: unique symbol = Symbol('replies later');

/** A bidirectional streaming RPC; writes serialised response messages. */
export type BidiHandler<I = never> = (ctx: GrpcContext, call: DuplexCall<I>) => void;

export type Handlers = Record<string, UnaryHandler<any> | BidiHandler<any>>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Adds a route to `routes` for every method of `service` that has a handler in `handlers`
 * (keyed by local name: `serverLive`, `modelStreamInfer`...); the transport answers the others
 * UNIMPLEMENTED.
 */
export function addServiceRoutes(routes: Map<string, Route>, service: DescService, handlers: Handlers, ctx: GrpcContext): void {
  for (const m of service.methods) {
    const handler = handlers[m.localName];
    if (handler === undefined) continue;
    const path = `/${service.typeName}/${m.name}`;
    // Unknown fields would only be kept to be re-serialised, which a server never does.
    const reflective = (b: Buffer): unknown => fromBinary(m.input, b, { readUnknownFields: false });
    // Inference requests in their common shape are read by hand (request-wire.ts), and one that
    // repeats its model's last is decoded from it (repeated-request.ts).
    const decode = m.input.typeName === ModelInferRequestSchema.typeName ? (b: Buffer): unknown => readInferMessage(b) ?? reflective(b) : reflective;
    if (m.methodKind === 'unary') {
      routes.set(path, { kind: 'unary', decode, run: unaryRunner(handler as UnaryHandler<unknown>, m, ctx) });
    } else if (m.methodKind === 'bidi_streaming') {
      const bidi = handler as BidiHandler<unknown>;
      routes.set(path, {
        kind: 'bidi',
        decode,
        run: (call) => {
          try {
            bidi(ctx, call);
          } catch (err) {
            call.end(toStatusError(err, ctx.logger));
          }
        },
      });
    } else {
      throw new Error(`no support for ${m.methodKind} RPC ${m.name}`);
    }
  }
}

function unaryRunner(handler: UnaryHandler<unknown>, m: DescMethod, ctx: GrpcContext): (call: UnaryCall) => void {
  const answer = (call: UnaryCall, value: Message | Uint8Array): void => {
    if (traceTags.grpc) traceLine('grpc', `${call.traceName}: answered OK${call.ended ? ' (call already ended)' : ''}`);
    call.sendLast(value instanceof Uint8Array ? value : toBinary(m.output, value));
  };
  const fail = (call: UnaryCall, err: unknown): void => {
    const status = toStatusError(err, ctx.logger);
    if (traceTags.grpc) traceLine('grpc', `${call.traceName}: answered status ${status.code}: ${status.details}${call.ended ? ' (call already ended)' : ''}`);
    call.sendStatus(status);
  };
  const reply: UnaryReply = { answer, fail };
  return (call) => {
    let result: ReturnType<UnaryHandler<unknown>>;
    try {
      result = handler(ctx, call.request, call, reply);
    } catch (err) {
      fail(call, err);
      return;
    }
    if (result === REPLIES_LATER) return;
    if (result instanceof Promise) {
      result.then(
        (v) => answer(call, v),
        (err: unknown) => fail(call, err),
      );
    } else {
      answer(call, result);
    }
  };
}
