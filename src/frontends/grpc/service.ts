/**
 * @module frontends/grpc/service
 * grpc-js service definitions built from the protoc-gen-es descriptors: one method per RPC at
 * `/<package>.<Service>/<Rpc>`, (de)serialised with protobuf-es `fromBinary` / `toBinary`.
 *
 * A handler may answer with a message or with bytes it already serialised (the infer paths do,
 * so that an output buffer can be released as soon as it has been copied into the message).
 */
import type { DescMethod, DescService, Message } from '@bufbuild/protobuf';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import type {
  MethodDefinition,
  ServerDuplexStream,
  ServerUnaryCall,
  ServiceDefinition,
  UntypedHandleCall,
  UntypedServiceImplementation,
  handleBidiStreamingCall,
  handleUnaryCall,
} from '@grpc/grpc-js';
import type { GrpcContext } from './context.js';
import { SHUTTING_DOWN, UNAVAILABLE, statusError, toStatusError } from './status.js';

function toBuffer(schema: DescMethod['input'], value: unknown): Buffer {
  const bytes = value instanceof Uint8Array ? value : toBinary(schema, value as Message);
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function methodDefinition(service: DescService, m: DescMethod): MethodDefinition<unknown, unknown> {
  const bidi = m.methodKind === 'bidi_streaming';
  return {
    path: `/${service.typeName}/${m.name}`,
    requestStream: bidi || m.methodKind === 'client_streaming',
    responseStream: bidi || m.methodKind === 'server_streaming',
    requestSerialize: (v) => toBuffer(m.input, v),
    // Unknown fields would only be kept to be re-serialised, which a server never does.
    requestDeserialize: (b: Buffer) => fromBinary(m.input, b, { readUnknownFields: false }),
    responseSerialize: (v) => toBuffer(m.output, v),
    responseDeserialize: (b: Buffer) => fromBinary(m.output, b),
    originalName: m.localName,
  };
}

/** A unary RPC: the response message (or its bytes), or a thrown / rejected error. */
export type UnaryHandler<I = never> = (
  ctx: GrpcContext,
  request: I,
  call: ServerUnaryCall<I, unknown>,
) => Message | Uint8Array | Promise<Message | Uint8Array>;

/** A bidirectional streaming RPC; writes serialised response messages. */
export type BidiHandler<I = never> = (ctx: GrpcContext, call: ServerDuplexStream<I, Uint8Array>) => void;

export interface ServiceState {
  /** Set by close(): every new RPC is refused with UNAVAILABLE. */
  closing: boolean;
  /** Calls started and not yet finished (a stream counts until it ends). */
  active: number;
  /** Called whenever `active` drops to 0. */
  onIdle?: () => void;
}

function callDone(state: ServiceState): void {
  if (--state.active === 0) state.onIdle?.();
}

export type Handlers = Record<string, UnaryHandler<any> | BidiHandler<any>>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Builds the definition and implementation of `service`. `handlers` is keyed by the methods'
 * local names (`serverLive`, `modelStreamInfer`...); methods without a handler are left out,
 * so grpc-js answers them UNIMPLEMENTED.
 */
export function buildService(
  service: DescService,
  handlers: Handlers,
  ctx: GrpcContext,
  state: ServiceState,
): { definition: ServiceDefinition; implementation: UntypedServiceImplementation } {
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  const implementation: UntypedServiceImplementation = {};
  for (const m of service.methods) {
    const handler = handlers[m.localName];
    if (handler === undefined) continue;
    definition[m.name] = methodDefinition(service, m);
    if (m.methodKind === 'unary') implementation[m.name] = wrapUnary(handler as UnaryHandler<unknown>, ctx, state);
    else if (m.methodKind === 'bidi_streaming') implementation[m.name] = wrapBidi(handler as BidiHandler<unknown>, ctx, state);
    else throw new Error(`no support for ${m.methodKind} RPC ${m.name}`);
  }
  return { definition: definition as ServiceDefinition, implementation };
}

function wrapUnary(handler: UnaryHandler<unknown>, ctx: GrpcContext, state: ServiceState): UntypedHandleCall {
  const h: handleUnaryCall<unknown, unknown> = (call, callback) => {
    if (state.closing) {
      callback(statusError(UNAVAILABLE, SHUTTING_DOWN));
      return;
    }
    state.active++;
    let result: ReturnType<UnaryHandler<unknown>>;
    try {
      result = handler(ctx, call.request, call);
    } catch (err) {
      callDone(state);
      callback(toStatusError(err, ctx.logger));
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (v) => {
          callDone(state);
          callback(null, v);
        },
        (err: unknown) => {
          callDone(state);
          callback(toStatusError(err, ctx.logger));
        },
      );
    } else {
      callDone(state);
      callback(null, result);
    }
  };
  return h;
}

function wrapBidi(handler: BidiHandler<unknown>, ctx: GrpcContext, state: ServiceState): UntypedHandleCall {
  const h: handleBidiStreamingCall<unknown, unknown> = (call) => {
    if (state.closing) {
      call.emit('error', statusError(UNAVAILABLE, SHUTTING_DOWN));
      return;
    }
    state.active++;
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      callDone(state);
    };
    // grpc-js reports 'cancelled' for every ending (after the status is sent, too); 'finish'
    // is our own end of the response stream.
    call.once('cancelled', end);
    call.once('finish', end);
    try {
      handler(ctx, call as ServerDuplexStream<unknown, Uint8Array>);
    } catch (err) {
      call.emit('error', toStatusError(err, ctx.logger));
    }
  };
  return h;
}
