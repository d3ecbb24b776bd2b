/**
 * @module frontends/threads/wire
 * What crosses between a frontend thread and the main thread, and how tensors cross it. A
 * tensor's bytes are usually a view of something larger (a request body in a connection's read
 * buffer, a stub's output arena); a structured clone of a view copies its whole ArrayBuffer, so
 * the tensors of one message are packed into one buffer of their own, which is transferred,
 * not cloned: one copy per direction.
 */
import type { Datatype } from '../../core/datatype.js';
import type { ErrorCode, FailureReason, TritonError } from '../../core/errors.js';
import type { Parameters, RequestedOutput } from '../../core/inference.js';
import type { ShmRef } from '../../core/extensions/shared-memory.js';
import type { Tensor } from '../../core/tensor.js';

export interface WireTensor {
  name: string;
  datatype: Datatype;
  shape: number[];
  /** Where its bytes are in the message's `bytes`. */
  offset: number;
  length: number;
  shm?: ShmRef;
}

export interface WireError {
  code: ErrorCode;
  message: string;
  reason: FailureReason;
  /** The catalogue entry that raised it (some callers branch on it). */
  entry: string;
}

/** Frontend thread → main: a request for the core. */
export interface InferMessage {
  t: 'infer';
  /** The thread's number for the request; responses and cancels name it. */
  no: number;
  modelName: string;
  modelVersion: string;
  id: string;
  parameters: Parameters;
  outputs?: RequestedOutput[];
  inputs: WireTensor[];
  bytes: ArrayBuffer;
  /** The main thread's trace this request belongs to (trace.sample answered it). */
  trace?: number;
  traceNo?: number;
}

/** Main → frontend thread: one response of request `no`. */
export interface ResponseMessage {
  t: 'resp';
  no: number;
  modelName: string;
  modelVersion: string;
  id: string;
  parameters?: Parameters;
  outputs: WireTensor[];
  bytes: ArrayBuffer | undefined;
  error?: WireError;
  final: boolean;
  flagsOnly?: boolean;
  beforeModel?: boolean;
  /**
   * A non-final response whose stub blocks the main thread holds until the thread says the copy
   * arrived ('release'): a decoupled model cannot fill the messages between the threads faster
   * than the thread takes them, and what the thread holds is bounded where it is queued (a gRPC
   * stream's QUEUE_LIMIT, generate_stream's UNREAD_LIMIT).
   */
  hold?: number;
  /**
   * The outputs' bytes are not in `bytes` but lent: `shared` are views of the stub's shared
   * memory (SharedArrayBuffer segments, which both threads see), and the main thread keeps the
   * blocks until the thread's frontend released the response ('release' with this number),
   * after its socket write. Large outputs cross this way, without a copy (SHARE_OUTPUT_BYTES).
   */
  lent?: number;
  shared?: Uint8Array[];
}

/** Outputs of at least this many bytes (together) are lent rather than copied (ResponseMessage.lent). */
export const SHARE_OUTPUT_BYTES = 64 * 1024;

/** Frontend thread → main, as objects on the link's port (requests and notices go as records, wire-records.ts). */
export type ThreadMessage =
  | InferMessage
  | { t: 'call'; id: number; method: string; args: unknown[] }
  | { t: 'acall'; id: number; method: string; args: unknown[] }
  | { t: 'trace'; trace: number; name: string; ns: bigint }
  | { t: 'trace-done'; trace: number };

/** Main → frontend thread, as objects on the link's port (small responses go as records). */
export type MainMessage = ResponseMessage | { t: 'adone'; id: number; value?: unknown; error?: WireError };

/**
 * The reply to a synchronous call, on the call port, with the call's id: a call that timed out
 * still gets its reply later, which the next call must skip, not take for its own.
 */
export interface CallReply {
  id: number;
  value?: unknown;
  error?: WireError;
}

/** Copies the tensors' bytes into one transferable buffer. */
export function packTensors(tensors: readonly Tensor[]): { wire: WireTensor[]; bytes: ArrayBuffer } {
  let total = 0;
  for (const t of tensors) total += t.data.length;
  const bytes = new ArrayBuffer(total);
  const view = new Uint8Array(bytes);
  // Filled with push, not sized first: a holey array is cloned element by element as a sparse
  // one, which the receiving thread reads more slowly than a dense one.
  const wire: WireTensor[] = [];
  let offset = 0;
  for (let i = 0; i < tensors.length; i++) {
    const t = tensors[i]!;
    view.set(t.data, offset);
    wire.push({ name: t.name, datatype: t.datatype, shape: t.shape, offset, length: t.data.length, ...(t.shm ? { shm: t.shm } : {}) });
    offset += t.data.length;
  }
  return { wire, bytes };
}

/** The tensors of a message, as views of its buffer (or of the shared views a lent response carries). */
export function unpackTensors(wire: readonly WireTensor[], bytes: ArrayBuffer | undefined, shared?: readonly Uint8Array[]): Tensor[] {
  const out: Tensor[] = new Array(wire.length);
  for (let i = 0; i < wire.length; i++) {
    const w = wire[i]!;
    const view = shared?.[i];
    const data =
      view !== undefined
        ? Buffer.from(view.buffer, view.byteOffset, view.byteLength)
        : bytes === undefined || w.length === 0
          ? Buffer.alloc(0)
          : Buffer.from(bytes, w.offset, w.length);
    out[i] = { name: w.name, datatype: w.datatype, shape: w.shape, data, ...(w.shm ? { shm: w.shm } : {}) };
  }
  return out;
}

/**
 * The outputs as views of the stub's shared memory, when they are large enough to be worth
 * lending and every one is such a view; undefined otherwise (they are copied).
 */
export function shareableOutputs(tensors: readonly Tensor[]): { wire: WireTensor[]; shared: Uint8Array[] } | undefined {
  let total = 0;
  for (const t of tensors) {
    if (!(t.data.buffer instanceof SharedArrayBuffer) && t.data.length > 0) return undefined;
    total += t.data.length;
  }
  if (total < SHARE_OUTPUT_BYTES) return undefined;
  return {
    wire: tensors.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, offset: 0, length: t.data.length, ...(t.shm ? { shm: t.shm } : {}) })),
    shared: tensors.map((t) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.length)),
  };
}

export function wireError(e: TritonError): WireError {
  return { code: e.code, message: e.message, reason: e.reason, entry: e.entry };
}
