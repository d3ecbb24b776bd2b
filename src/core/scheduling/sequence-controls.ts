/**
 * @module core/scheduling/sequence-controls
 * What the sequence batcher adds to a request before a model sees it (docs/protocol-notes.md,
 * "Sequence batching"): the control tensors of `sequence_batching.control_input` (START, END,
 * READY as the model's [false, true] values, CORRID as the correlation id), and the null
 * filler request a `direct` batch puts in a slot that has nothing ready.
 */
import type { Datatype } from '../datatype.js';
import type { InferRequest, InferResponse } from '../inference.js';
import { elementCount, type Tensor } from '../tensor.js';
import type { Nanos, PendingRequest, SequenceTag } from './types.js';

/** Triton's request flags (TRITONSERVER_REQUEST_FLAG_SEQUENCE_START / _END). */
export const FLAG_START = 1;
export const FLAG_END = 2;

export type ControlSpec =
  | { kind: 'start' | 'end' | 'ready'; name: string; datatype: Datatype; falseTrue: [number, number] }
  | { kind: 'corrid'; name: string; datatype: Datatype };

export type SequenceStrategy =
  | { kind: 'direct'; maxQueueDelayUs: number; minimumSlotUtilization: number }
  | { kind: 'oldest'; candidates: number; preferredBatchSizes: number[]; maxQueueDelayUs: number; preserveOrdering: boolean };

/** One implicit state: the input that carries a sequence's value in, the output that carries it out. */
export interface StateSpec {
  input: string;
  output: string;
  datatype: Datatype;
  /** Without the batch dimension; fixed. */
  dims: number[];
  /** The value a sequence starts from (zeros or initial_state's data_file). */
  initial: Buffer;
}

/**
 * A sequence's state values between its requests, by state input name. The backend that runs
 * an execution writes each state output here (under its input's name); the next request of the
 * sequence reads it.
 */
export type SequenceStateValues = Map<string, Tensor>;

/** `sequence_batching` of the model configuration, plus the model's `max_batch_size`. */
export interface SequenceBatchingOptions {
  maxBatchSize: number;
  /** max_sequence_idle_microseconds after normalisation (never 0). */
  idleUs: number;
  iterative: boolean;
  controls: ControlSpec[];
  states: StateSpec[];
  strategy: SequenceStrategy;
}

/** A correlation id as the client sent it: uint64 and string ids are different sequences. */
export type CorrelationId = bigint | string;

/** True for the ids that mean "no sequence" (0 and ""). */
export function isNoSequence(id: CorrelationId): boolean {
  return id === 0n || id === '';
}

/** The protocol name of a CORRID value as Triton's type check words it. */
export function corridTypeName(id: CorrelationId): string {
  return typeof id === 'string' ? 'BYTES' : 'UINT64';
}

/** Builds each request's control tensors from the model's control inputs (one builder per model). */
export class ControlTensors {
  /** `[1]` without batching, `[1, 1]` with: one row per request. */
  private readonly shape: number[];
  /** Prebuilt false/true values per boolean control, shared by every request (never written). */
  private readonly values: Array<{ spec: ControlSpec; bytes: [Buffer, Buffer] }> = [];
  readonly corrid: Extract<ControlSpec, { kind: 'corrid' }> | undefined;

  constructor(specs: readonly ControlSpec[], maxBatchSize: number) {
    this.shape = maxBatchSize > 0 ? [1, 1] : [1];
    for (const spec of specs) {
      if (spec.kind === 'corrid') {
        this.corrid = spec;
        continue;
      }
      this.values.push({ spec, bytes: [scalar(spec.datatype, spec.falseTrue[0]), scalar(spec.datatype, spec.falseTrue[1])] });
    }
  }

  /** Whether the model takes any control tensor. */
  get any(): boolean {
    return this.values.length > 0 || this.corrid !== undefined;
  }

  /**
   * The control tensors of one request. `ready` is false only for a filler; `flags` are the
   * START/END flags of this execution; `id` is the sequence's correlation id (0 for a filler).
   */
  build(flags: number, ready: boolean, id: CorrelationId): Tensor[] {
    const out: Tensor[] = [];
    for (const { spec, bytes } of this.values) {
      const on = spec.kind === 'start' ? (flags & FLAG_START) !== 0 : spec.kind === 'end' ? (flags & FLAG_END) !== 0 : ready;
      out.push({ name: spec.name, datatype: spec.datatype, shape: this.shape.slice(), data: bytes[on ? 1 : 0] });
    }
    const c = this.corrid;
    if (c !== undefined) out.push({ name: c.name, datatype: c.datatype, shape: this.shape.slice(), data: corridBytes(c.datatype, id) });
    return out;
  }
}

function scalar(datatype: Datatype, v: number): Buffer {
  if (datatype === 'INT32') {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    return b;
  }
  if (datatype === 'FP32') {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    return b;
  }
  return Buffer.from([v !== 0 ? 1 : 0]);
}

/** CORRID bytes: 64-bit types take the id, 32-bit ones its low 32 bits, BYTES the string. */
function corridBytes(datatype: Datatype, id: CorrelationId): Buffer {
  if (datatype === 'BYTES') {
    const s = Buffer.from(typeof id === 'string' ? id : '', 'utf8');
    const b = Buffer.alloc(4 + s.length);
    b.writeUInt32LE(s.length, 0);
    s.copy(b, 4);
    return b;
  }
  const n = typeof id === 'bigint' ? id : 0n;
  if (datatype === 'UINT64' || datatype === 'INT64') {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt.asUintN(64, n));
    return b;
  }
  const b = Buffer.alloc(4);
  b.writeUInt32LE(Number(BigInt.asUintN(32, n)));
  return b;
}

/**
 * A slot's place-holder in a `direct` batch: the representative request's input names, shapes
 * and types with zeroed contents, controls READY = false and CORRID = 0. Its responses are
 * dropped and it is in no statistics except the batch size (as in Triton).
 */
export class FillerRequest implements PendingRequest {
  readonly request: InferRequest;
  readonly batchSize = 1;
  readonly priority = 0;
  readonly timeoutUs = 0;
  readonly arrivalNs: Nanos = process.hrtime.bigint();
  queueEndNs?: Nanos = undefined;
  sequence: SequenceTag;
  #done = false;

  constructor(
    representative: PendingRequest,
    inputs: readonly Tensor[],
    readonly shapeSignature: string,
    controls: ControlTensors,
    states: readonly Tensor[],
  ) {
    const r = representative.request;
    const noId: CorrelationId = controls.corrid?.datatype === 'BYTES' ? '' : 0n;
    this.sequence = { id: noId, flags: 0 };
    this.request = {
      modelName: r.modelName,
      modelVersion: r.modelVersion,
      id: '',
      parameters: {},
      inputs: [...inputs.map(zeroed), ...controls.build(0, false, noId), ...states],
      outputs: r.outputs,
    };
  }

  get cancelled(): boolean {
    return false;
  }

  get done(): boolean {
    return this.#done;
  }

  respond(response: InferResponse): void {
    response.release?.();
    if (response.final) this.#done = true;
  }

  fail(): void {
    this.#done = true;
  }
}

/** A tensor of the same name, type and shape with zeroed contents (BYTES: empty strings). */
function zeroed(t: Tensor): Tensor {
  const bytes = t.datatype === 'BYTES' ? 4 * elementCount(t.shape) : t.data.length;
  return { name: t.name, datatype: t.datatype, shape: t.shape.slice(), data: Buffer.alloc(bytes) };
}

/**
 * The state input tensors of one request: the sequence's values, or the initial ones at START
 * (and for a filler, whose `values` are undefined).
 */
export function stateInputs(specs: readonly StateSpec[], values: SequenceStateValues | undefined, batching: boolean): Tensor[] {
  return specs.map((s) => {
    const v = values?.get(s.input);
    if (v !== undefined) return v;
    return { name: s.input, datatype: s.datatype, shape: batching ? [1, ...s.dims] : s.dims.slice(), data: s.initial };
  });
}
