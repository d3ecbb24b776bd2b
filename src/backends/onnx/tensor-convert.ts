/**
 * @module backends/onnx/tensor-convert
 * tritium tensors (raw little-endian bytes, BYTES as length-prefixed elements) ↔ the plain
 * `{ type, dims, data }` records onnxruntime-node tensors are made of. The records are
 * structured-clonable, so the same code feeds a session on the main thread or in a worker.
 *
 * Batching the way Triton's ORT backend does: the same-named inputs of the requests of one
 * execution are concatenated along dimension 0 into one tensor, and each output is cut back
 * into per-request slices along dimension 0 (views of the output, no copy).
 */
import type { Datatype } from '../../core/datatype.js';
import { Errors } from '../../core/errors.js';
import { elementCount, joinBytesElements, splitBytesElements, type Tensor } from '../../core/tensor.js';
import { typedArrayCtor, type OrtData, type OrtType, type OrtTypedArray } from './ort-types.js';

/** An ORT tensor as data: what `new ort.Tensor(type, data, dims)` takes and `run` gives back. */
export interface WireTensor {
  type: OrtType;
  dims: number[];
  data: OrtData;
}

/**
 * One input tensor for a run from the parts the requests sent, in request order.
 * `dims` is the full shape of the result (batch dimension already summed).
 * `mayView`: a single part may be used in place (main-thread runs); otherwise the result owns
 * a fresh ArrayBuffer that can be transferred to a worker without detaching a request body.
 */
export function concatInputs(name: string, parts: readonly Tensor[], type: OrtType, dims: number[], mayView: boolean): WireTensor {
  const n = elementCount(dims);
  if (type === 'string') {
    const data: string[] = [];
    // ORT string tensors hold JS strings; elements are read as UTF-8 text.
    for (const p of parts) for (const e of splitBytesElements(p.data)) data.push(e.toString('utf8'));
    if (data.length !== n) throw Errors.onnxStringCount(name, data.length, n);
    return { type, dims, data };
  }
  const Ctor = typedArrayCtor(type);
  const size = Ctor.BYTES_PER_ELEMENT;
  let total = 0;
  for (const p of parts) total += p.data.length;
  if (total !== n * size) throw Errors.onnxByteCount(name, total, n * size);
  const only = parts.length === 1 ? parts[0]! : undefined;
  if (mayView && only && only.data.byteOffset % size === 0) {
    return { type, dims, data: new Ctor(only.data.buffer, only.data.byteOffset, n) };
  }
  const buf = new ArrayBuffer(total);
  const bytes = new Uint8Array(buf);
  let off = 0;
  for (const p of parts) {
    bytes.set(p.data, off);
    off += p.data.length;
  }
  return { type, dims, data: new Ctor(buf, 0, n) };
}

/** The ArrayBuffers a set of tensors can hand over to a worker (strings are cloned). */
export function transferables(tensors: Iterable<WireTensor>): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const t of tensors) {
    if (!Array.isArray(t.data) && t.data.buffer instanceof ArrayBuffer) out.add(t.data.buffer);
  }
  return [...out];
}

/** Raw little-endian bytes of elements [from, from + count) of a typed array (a view). */
function byteView(arr: OrtTypedArray, from: number, count: number): Buffer {
  const size = arr.BYTES_PER_ELEMENT;
  return Buffer.from(arr.buffer, arr.byteOffset + from * size, count * size);
}

/** A whole output as a tritium tensor (non-batching models: one request per run). */
export function outputTensor(name: string, datatype: Datatype, out: WireTensor, shape: number[] = out.dims): Tensor {
  const n = elementCount(out.dims);
  const data = Array.isArray(out.data) ? joinBytesElements(out.data) : byteView(out.data, 0, n);
  return { name, datatype, shape, data };
}

/**
 * Cuts an output along dimension 0 into one tensor per request, `rows[i]` rows each.
 * Fails when the model's output does not carry the batch dimension the inputs had.
 */
export function splitOutput(name: string, datatype: Datatype, out: WireTensor, rows: readonly number[]): Tensor[] {
  const total = rows.reduce((a, b) => a + b, 0);
  if (out.dims.length === 0 || out.dims[0] !== total) {
    throw Errors.onnxOutputBatch(name, out.dims, total);
  }
  const inner = out.dims.slice(1);
  const perRow = elementCount(inner);
  const tensors: Tensor[] = [];
  let row = 0;
  for (const r of rows) {
    const from = row * perRow;
    const count = r * perRow;
    const data = Array.isArray(out.data) ? joinBytesElements(out.data.slice(from, from + count)) : byteView(out.data, from, count);
    tensors.push({ name, datatype, shape: [r, ...inner], data });
    row += r;
  }
  return tensors;
}
