/**
 * @module core/request/shm-binding
 * Connects a request to the client shared-memory regions it names: inputs are read out of
 * their regions now, outputs requested in a region are checked now (an unknown region or bad
 * bounds fail the request before the model runs, as in Triton) and written there when the
 * model answers. Regions holding outputs stay open until the request's final response.
 */
import { asTritonError, Errors, type TritonError } from '../errors.js';
import type { ShmOutputTarget, ShmRef, SystemSharedMemory } from '../extensions/shared-memory.js';
import { deliverTo, type InferRequest, type InferResponse, type Parameters, type ResponseSink } from '../inference.js';
import type { Tensor } from '../tensor.js';

const EMPTY = Buffer.alloc(0);

/** Whether a request names any shared-memory region (inputs or requested outputs). */
export function usesSharedMemory(request: InferRequest): boolean {
  for (const t of request.inputs) if (t.shm !== undefined) return true;
  if (request.outputs !== undefined) for (const o of request.outputs) if (o.parameters.shared_memory_region !== undefined) return true;
  return false;
}

/** Where a requested output is to be written, from its parameters. */
export function outputShmRef(p: Parameters): ShmRef | undefined {
  const region = p.shared_memory_region;
  if (region === undefined) return undefined;
  return { region: String(region), offset: Number(p.shared_memory_offset ?? 0), byteSize: Number(p.shared_memory_byte_size ?? 0) };
}

/**
 * Binds inputs and outputs; returns the sink that writes outputs into their regions and lets
 * the regions go with the final response. Throws (leaving nothing held) on a region error.
 */
export function bindSharedMemory(shm: SystemSharedMemory, request: InferRequest, sink: ResponseSink): ResponseSink {
  const held: { release(): void }[] = [];
  const outputs = new Map<string, { ref: ShmRef; target: ShmOutputTarget }>();
  try {
    for (const t of request.inputs) {
      if (t.shm === undefined) continue;
      const copy = shm.readInput(t.shm);
      held.push(copy);
      t.data = copy.data;
    }
    for (const o of request.outputs ?? []) {
      const ref = outputShmRef(o.parameters);
      if (ref === undefined) continue;
      const target = shm.holdOutput(ref);
      held.push(target);
      outputs.set(o.name, { ref, target });
    }
  } catch (err) {
    for (const h of held) h.release();
    throw err;
  }
  return (response: InferResponse) => {
    let out = response;
    if (outputs.size > 0 && response.outputs.length > 0 && response.error === undefined) out = writeOutputs(response, outputs);
    deliverTo(sink, out);
    // After the sink: nothing reads the request's inputs once its final response is out.
    if (out.final) for (const h of held) h.release();
  };
}

function writeOutputs(response: InferResponse, targets: Map<string, { ref: ShmRef; target: ShmOutputTarget }>): InferResponse {
  const written: Tensor[] = new Array(response.outputs.length);
  for (let i = 0; i < response.outputs.length; i++) {
    const t = response.outputs[i]!;
    const held = targets.get(t.name);
    if (held === undefined) {
      written[i] = t;
      continue;
    }
    let error: TritonError | undefined;
    if (t.data.length > held.target.byteSize) error = Errors.shmOutputTooSmall(t.name, held.target.byteSize, t.data.length);
    else {
      try {
        held.target.write(t.data);
      } catch (err) {
        error = asTritonError(err);
      }
    }
    if (error !== undefined) {
      response.release?.();
      const { release: _gone, ...rest } = response;
      return { ...rest, outputs: [], error };
    }
    written[i] = { name: t.name, datatype: t.datatype, shape: t.shape, data: EMPTY, shm: held.ref };
  }
  return { ...response, outputs: written };
}
