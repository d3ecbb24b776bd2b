/**
 * @module core/request/pending
 * A validated request on its way through a scheduler to an instance. It owns the response
 * sink: exactly one final response reaches the client, whatever the backend does (late
 * responses after the final one are released and dropped), and the final one is accounted.
 */
import type { TritonError } from '../errors.js';
import { deliverTo, type InferRequest, type InferResponse, type ResponseSink } from '../inference.js';
import type { Nanos, PendingRequest, SequenceTag } from '../scheduling/types.js';
import type { SchedulingParameters } from './parameters.js';

/** Called when the request's final response went out (`error` set when it failed). */
export type CompletionListener = (request: PendingRequestImpl, endNs: Nanos, error: TritonError | undefined) => void;

/** Called when the request's first response (not a bare final flag) went out; given only where someone measures it. */
export type FirstResponseListener = (request: PendingRequestImpl, atNs: Nanos) => void;

export class PendingRequestImpl implements PendingRequest {
  readonly arrivalNs: Nanos = process.hrtime.bigint();
  queueEndNs?: Nanos = undefined;
  statsEndNs?: Nanos = undefined;
  statsPhases?: object = undefined;
  sequence?: SequenceTag = undefined;
  reschedule?: () => void = undefined;
  parameters?: Readonly<SchedulingParameters> = undefined;
  /** Index of the next response (decoupled models send several). */
  responseCount = 0;
  #done = false;

  constructor(
    readonly request: InferRequest,
    readonly batchSize: number,
    readonly shapeSignature: string,
    readonly priority: number,
    readonly timeoutUs: number,
    /** Version actually serving the request. */
    readonly version: string,
    private readonly sink: ResponseSink,
    private readonly onComplete: CompletionListener,
    private onFirstResponse?: FirstResponseListener,
  ) {}

  get cancelled(): boolean {
    return this.request.signal?.aborted === true;
  }

  get done(): boolean {
    return this.#done;
  }

  respond(response: InferResponse): void {
    if (this.#done) {
      response.release?.();
      return;
    }
    this.responseCount++;
    if (response.final) this.#done = true;
    if (this.onFirstResponse !== undefined && response.flagsOnly !== true) {
      const first = this.onFirstResponse;
      this.onFirstResponse = undefined;
      first(this, process.hrtime.bigint());
    }
    // Backends do not know which version the core resolved; the request does.
    response.modelVersion = this.version;
    const trace = this.request.trace;
    if (trace?.level.tensors && response.error === undefined) {
      for (const t of response.outputs) trace.tensor('TENSOR_BACKEND_OUTPUT', t);
    }
    deliverTo(this.sink, response);
    if (response.final) this.onComplete(this, process.hrtime.bigint(), response.error);
  }

  fail(error: TritonError): void {
    this.respond({
      modelName: this.request.modelName,
      modelVersion: this.version,
      id: this.request.id,
      outputs: [],
      error,
      final: true,
    });
  }
}
