/**
 * Test doubles for scheduler unit tests: a minimal PendingRequest and an ExecutionInstance that
 * records the batches it receives and either answers at once or holds them until released.
 */
import type { TritonError } from '../../src/core/errors.js';
import type { InferResponse } from '../../src/core/inference.js';
import type { ExecutionInstance, ExecutionTimes, PendingRequest } from '../../src/core/scheduling/types.js';

export interface FakeRequestInit {
  id?: string;
  batchSize?: number;
  shapeSignature?: string;
  priority?: number;
  timeoutUs?: number;
}

/** Where every fake request's final answer is logged, in release order. */
export class Journal {
  readonly finals: string[] = [];
}

export class FakeRequest implements PendingRequest {
  readonly request;
  readonly batchSize: number;
  readonly shapeSignature: string;
  readonly priority: number;
  readonly timeoutUs: number;
  readonly arrivalNs = process.hrtime.bigint();
  queueEndNs?: bigint;
  cancelled = false;
  done = false;
  readonly responses: InferResponse[] = [];
  error?: TritonError;
  readonly finished: Promise<void>;
  private resolveFinished!: () => void;

  constructor(
    readonly id: string,
    init: FakeRequestInit = {},
    private readonly journal?: Journal,
  ) {
    this.request = { modelName: 'm', modelVersion: '', id, parameters: {}, inputs: [] };
    this.batchSize = init.batchSize ?? 1;
    this.shapeSignature = init.shapeSignature ?? '';
    this.priority = init.priority ?? 0;
    this.timeoutUs = init.timeoutUs ?? 0;
    this.finished = new Promise((r) => (this.resolveFinished = r));
  }

  respond(response: InferResponse): void {
    if (this.done) return;
    this.responses.push(response);
    if (response.final) this.finish();
  }

  fail(error: TritonError): void {
    if (this.done) return;
    this.error = error;
    this.finish();
  }

  private finish(): void {
    this.done = true;
    this.journal?.finals.push(this.id);
    this.resolveFinished();
  }
}

export function okResponse(id: string, final = true): InferResponse {
  return { modelName: 'm', modelVersion: '1', id, outputs: [], final };
}

interface Held {
  batch: PendingRequest[];
  resolve: (t: ExecutionTimes) => void;
}

/**
 * Records batches as lists of request ids. `auto`: answers every request and resolves at once
 * (on a microtask). Otherwise the batch is held until `release()`.
 */
export class RecordingInstance implements ExecutionInstance {
  readonly batches: string[][] = [];
  readonly held: Held[] = [];
  ready = true;

  constructor(
    readonly name: string,
    private readonly auto = true,
    readonly pipelineDepth = 1,
  ) {}

  isReady(): boolean {
    return this.ready;
  }

  execute(batch: PendingRequest[]): Promise<ExecutionTimes> {
    this.batches.push(batch.map((r) => r.request.id));
    if (this.auto) {
      for (const r of batch) r.respond(okResponse(r.request.id));
      return Promise.resolve(times());
    }
    return new Promise((resolve) => this.held.push({ batch, resolve }));
  }

  get busy(): boolean {
    return this.held.length > 0;
  }

  /**
   * Answers and completes the oldest held batch (optionally without answering), reporting an
   * execution of `executionNs` (5 µs by default) from send to answer, and `ownNs` as the
   * instance's own time for it when given.
   */
  release(answer = true, executionNs = 5000n, ownNs?: number): PendingRequest[] {
    const h = this.held.shift();
    if (!h) throw new Error(`${this.name}: nothing to release`);
    if (answer) for (const r of h.batch) r.respond(okResponse(r.request.id));
    h.resolve(times(executionNs, ownNs));
    return h.batch;
  }
}

export function times(executionNs = 5000n, ownNs?: number): ExecutionTimes {
  const t = process.hrtime.bigint();
  const out: ExecutionTimes = { startNs: t, inputEndNs: t + 1000n, inferEndNs: t + executionNs, endNs: t + executionNs + 1000n };
  if (ownNs !== undefined) out.ownNs = ownNs;
  return out;
}

/** Lets pending setImmediate callbacks and microtasks run. */
export function tick(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

export async function ticks(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await tick();
}

export const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
