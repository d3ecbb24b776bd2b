/**
 * @module frontends/response-form
 * The form of an inference response that a kept encoding depends on: its model and version, no
 * id and no parameters, and its outputs in order by name, datatype and shape (and byte size,
 * where the encoding writes sizes before the data). A client in a loop gets responses of one
 * form, so an encoder keeps what it wrote for the last one and reuses it for the next of the
 * same form: the HTTP JSON header (http/infer-response.ts, RepeatedResponseHeader) and the gRPC
 * message's bytes before its outputs (grpc/response-wire.ts, RepeatedResponseHead).
 */
import type { InferResponse } from '../core/inference.js';
import { hasNoParameters } from '../core/request/parameters.js';

interface OutputForm {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly bytes: number;
}

type FormOf = Pick<InferResponse, 'modelName' | 'modelVersion' | 'id' | 'parameters' | 'outputs'>;

/** Whether `response` carries parameters (a key of its own). */
export function hasResponseParameters(response: Pick<InferResponse, 'parameters'>): boolean {
  return response.parameters !== undefined && !hasNoParameters(response.parameters);
}

export class ResponseForm {
  private constructor(
    private readonly modelName: string,
    private readonly modelVersion: string,
    private readonly outputs: readonly OutputForm[],
    /** Whether the outputs' byte sizes are part of the form. */
    private readonly withBytes: boolean,
  ) {}

  /** The form of `response`, or undefined when it has an id or parameters (a form never kept). */
  static of(response: FormOf, withBytes: boolean): ResponseForm | undefined {
    if (response.id !== '' || hasResponseParameters(response)) return undefined;
    const outputs = response.outputs.map((o) => ({ name: o.name, datatype: o.datatype, shape: o.shape.slice(), bytes: o.data.length }));
    return new ResponseForm(response.modelName, response.modelVersion, outputs, withBytes);
  }

  /** Whether `response` has this form; an output written to shared memory never has. */
  matches(response: FormOf): boolean {
    if (response.id !== '' || response.modelName !== this.modelName || response.modelVersion !== this.modelVersion) return false;
    if (hasResponseParameters(response)) return false;
    const outs = response.outputs;
    const kept = this.outputs;
    if (outs.length !== kept.length) return false;
    for (let i = 0; i < outs.length; i++) {
      const out = outs[i]!;
      const k = kept[i]!;
      if (out.name !== k.name || out.datatype !== k.datatype || out.shm !== undefined) return false;
      if (this.withBytes && out.data.length !== k.bytes) return false;
      const shape = out.shape;
      if (shape.length !== k.shape.length) return false;
      for (let d = 0; d < shape.length; d++) if (shape[d] !== k.shape[d]) return false;
    }
    return true;
  }
}
