/**
 * @module core/trace/request-trace
 * What one traced request records, as tritonserver 2.51 writes it (docs/protocol-notes.md,
 * "Trace"), rendered to its trace-file entries as it happens (tensor data must be read before
 * the buffers are released anyway):
 *
 * - TIMESTAMPS: the model line (`model_name`, `model_version`, `request_id` when the request has
 *   one, `parent_id` for a child trace) and the events, named as tritonserver names them: the
 *   frontend's (HTTP_RECV_*, GRPC_WAITREAD_*, *_SEND_*, INFER_RESPONSE_COMPLETE), the core's
 *   (REQUEST_START, QUEUE_START, COMPUTE_START, COMPUTE_INPUT_END, COMPUTE_OUTPUT_START,
 *   COMPUTE_END, REQUEST_END). Times are monotonic nanoseconds (process.hrtime.bigint(), as
 *   Triton uses its steady clock).
 * - TENSORS: TENSOR_QUEUE_INPUT (the inputs as the core queues the request) and
 *   TENSOR_BACKEND_OUTPUT (every output of every response the model sent), each
 *   `{name, data, shape, dtype}` (tensor-text.ts).
 *
 * A child trace (an ensemble step, a BLS call made with the request's `trace()`) has its own
 * id and its parent's as `parent_id`; it has no frontend part.
 */
import type { Tensor } from '../tensor.js';
import { dataText, shapeText } from './tensor-text.js';

/** What a trace records (the `trace_level` values in effect when it was sampled). */
export interface TraceLevel {
  timestamps: boolean;
  tensors: boolean;
}

/** Where traces get their ids and go when complete (the Tracer). */
export interface TraceOwner {
  nextId(): number;
  finish(trace: RequestTrace): void;
}

export class RequestTrace {
  /** Trace-file entries (JSON objects), in the order they happened. */
  readonly entries: string[] = [];
  /** Parts still writing: the frontend (not for a child), and the core once the request reached a model. */
  private open: number;

  constructor(
    readonly id: number,
    readonly level: TraceLevel,
    private readonly owner: TraceOwner,
    readonly parentId?: number,
  ) {
    this.open = parentId === undefined ? 1 : 0;
  }

  /** A TIMESTAMPS event. */
  add(name: string, ns: bigint = process.hrtime.bigint()): void {
    if (this.level.timestamps) this.entries.push(`{"id":${this.id},"timestamps":[{"name":"${name}","ns":${ns}}]}`);
  }

  /** A TENSORS entry (`TENSOR_QUEUE_INPUT`, `TENSOR_BACKEND_OUTPUT`) for `t`, whose data is read now. */
  tensor(activity: string, t: Tensor): void {
    if (!this.level.tensors) return;
    const tensor = `{"name":${JSON.stringify(t.name)},"data":${JSON.stringify(dataText(t))},"shape":"${shapeText(t.shape)}","dtype":"${t.datatype}"}`;
    this.entries.push(`{"id":${this.id},"activity":"${activity}","tensor":${tensor}}`);
  }

  /** The request reached the core, which knows the version that serves it. */
  setModel(model: string, version: number, requestId: string): void {
    this.open++;
    // Triton writes the model line with the TIMESTAMPS events only.
    if (!this.level.timestamps) return;
    const id = requestId === '' ? '' : `,"request_id":${JSON.stringify(requestId)}`;
    const parent = this.parentId === undefined ? '' : `,"parent_id":${this.parentId}`;
    this.entries.push(`{"id":${this.id},"model_name":${JSON.stringify(model)},"model_version":${version}${id}${parent}}`);
  }

  /** A trace for a request this one's model makes (ensemble step, BLS call): same levels, own id. */
  child(): RequestTrace {
    return new RequestTrace(this.owner.nextId(), this.level, this.owner, this.id);
  }

  /** The frontend sent the last response, or the core ended the request; complete after both. */
  done(): void {
    if (--this.open === 0) this.owner.finish(this);
  }
}
