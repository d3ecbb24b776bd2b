/**
 * @module core/trace/request-trace
 * The timestamps of one traced request, named as tritonserver names them (docs/protocol-notes.md,
 * "Trace"): the frontend's (HTTP_RECV_*, GRPC_WAITREAD_*, *_SEND_*), the core's (REQUEST_START,
 * QUEUE_START, COMPUTE_START, COMPUTE_INPUT_END, COMPUTE_OUTPUT_START, COMPUTE_END,
 * REQUEST_END, INFER_RESPONSE_COMPLETE). Times are monotonic nanoseconds
 * (process.hrtime.bigint(), as Triton uses its steady clock).
 */

export class RequestTrace {
  /** Timestamps, and the model line where the request reached the core, in order. */
  readonly events: Array<{ name: string; ns: bigint } | { model: string; version: number; requestId: string }> = [];
  /** Parts still writing: the frontend, and the core once the request reached a model. */
  private open = 1;

  constructor(
    readonly id: number,
    private readonly onDone: (t: RequestTrace) => void,
  ) {}

  add(name: string, ns: bigint = process.hrtime.bigint()): void {
    this.events.push({ name, ns });
  }

  /** The request reached the core, which knows the version that serves it. */
  setModel(model: string, version: number, requestId: string): void {
    this.events.push({ model, version, requestId });
    this.open++;
  }

  /** The frontend sent the last response, or the core ended the request; complete after both. */
  done(): void {
    if (--this.open === 0) this.onDone(this);
  }
}
