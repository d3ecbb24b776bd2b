/**
 * @module core/request/shm-binding
 * Connects a request to the client shared-memory regions it names: inputs become views of
 * their regions (no copy), outputs requested in a region are checked now (an unknown region or
 * bad bounds fail the request before the model runs, as in Triton) and written there when the
 * model answers. Regions stay mapped until the request's final response.
 */
import { Errors } from '../errors.js';
import type { SystemSharedMemory, ShmLease, ShmRef } from '../extensions/shared-memory.js';
import type { InferRequest, InferResponse, Parameters, ResponseSink } from '../inference.js';
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
  const leases: ShmLease[] = [];
  const outputs = new Map<string, { ref: ShmRef; lease: ShmLease }>();
  try {
    for (const t of request.inputs) {
      if (t.shm === undefined) continue;
      const lease = shm.acquire(t.shm);
      leases.push(lease);
      t.data = lease.data;
    }
    for (const o of request.outputs ?? []) {
      const ref = outputShmRef(o.parameters);
      if (ref === undefined) continue;
      const lease = shm.acquire(ref);
      leases.push(lease);
      outputs.set(o.name, { ref, lease });
    }
  } catch (err) {
    for (const l of leases) l.release();
    throw err;
  }
  return (response: InferResponse) => {
    let out = response;
    if (outputs.size > 0 && response.outputs.length > 0 && response.error === undefined) out = writeOutputs(response, outputs);
    if (out.final) for (const l of leases) l.release();
    sink(out);
  };
}

function writeOutputs(response: InferResponse, targets: Map<string, { ref: ShmRef; lease: ShmLease }>): InferResponse {
  const written: Tensor[] = new Array(response.outputs.length);
  for (let i = 0; i < response.outputs.length; i++) {
    const t = response.outputs[i]!;
    const target = targets.get(t.name);
    if (target === undefined) {
      written[i] = t;
      continue;
    }
    if (t.data.length > target.lease.data.length) {
      response.release?.();
      const { release: _gone, ...rest } = response;
      return { ...rest, outputs: [], error: Errors.shmOutputTooSmall(t.name, target.lease.data.length, t.data.length) };
    }
    t.data.copy(target.lease.data);
    written[i] = { name: t.name, datatype: t.datatype, shape: t.shape, data: EMPTY, shm: target.ref };
  }
  return { ...response, outputs: written };
}
