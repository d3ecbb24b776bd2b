/**
 * @module frontends/classification
 * The classification extension: an output requested with `classification: K` is replaced by
 * a BYTES tensor of the top K `"<value>:<index>"` strings per batch item, highest first, with
 * `":<label>"` added where the output's `label_filename` has a non-empty line for the index
 * (docs/protocol-notes.md, "Classification").
 */
import type { Datatype } from '../core/datatype.js';
import { elementSize } from '../core/datatype.js';
import { Errors } from '../core/errors.js';
import type { Tensor } from '../core/tensor.js';
import { joinBytesElements } from '../core/tensor.js';

type Read = (view: DataView, index: number) => number;

const READ: Partial<Record<Datatype, Read>> = {
  UINT8: (d, i) => d.getUint8(i),
  UINT16: (d, i) => d.getUint16(i * 2, true),
  UINT32: (d, i) => d.getUint32(i * 4, true),
  UINT64: (d, i) => Number(d.getBigUint64(i * 8, true)),
  INT8: (d, i) => d.getInt8(i),
  INT16: (d, i) => d.getInt16(i * 2, true),
  INT32: (d, i) => d.getInt32(i * 4, true),
  INT64: (d, i) => Number(d.getBigInt64(i * 8, true)),
  FP32: (d, i) => d.getFloat32(i * 4, true),
  FP64: (d, i) => d.getFloat64(i * 8, true),
};

/**
 * @param batching the model batches (max_batch_size > 0): the first dim is the batch.
 * @param labels the output's label lines, by index.
 * @throws TritonError INVALID_ARG for datatypes that cannot be classified.
 */
export function classify(output: Tensor, k: number, batching: boolean, labels?: readonly string[]): Tensor {
  const read = READ[output.datatype];
  if (read === undefined) {
    throw Errors.classificationType(output.datatype);
  }
  const batch = batching && output.shape.length > 0 ? output.shape[0]! : 0;
  let perItem = 1;
  for (let i = batch === 0 ? 0 : 1; i < output.shape.length; i++) perItem *= output.shape[i]!;
  const size = elementSize(output.datatype);
  const view = new DataView(output.data.buffer, output.data.byteOffset, output.data.byteLength);
  const take = Math.min(k, perItem);
  const items = Math.max(1, batch);
  const strings: string[] = [];
  for (let b = 0; b < items; b++) {
    const base = b * perItem;
    // A short buffer classifies as empty for that item, like Triton.
    const n = (base + perItem) * size <= output.data.length ? perItem : 0;
    const idx = Array.from({ length: n }, (_, i) => i);
    const vals = idx.map((i) => read(view, base + i));
    idx.sort((a, c) => vals[c]! - vals[a]! || a - c);
    for (let j = 0; j < Math.min(take, n); j++) {
      const label = labels?.[idx[j]!];
      strings.push(`${vals[idx[j]!]!.toFixed(6)}:${idx[j]}${label ? `:${label}` : ''}`);
    }
  }
  const shape = batch > 0 ? [batch, take] : [take];
  return { name: output.name, datatype: 'BYTES', shape, data: joinBytesElements(strings) };
}

/** The label lines of a model's output, for the outputs a request classifies. */
export function outputLabels(model: { outputs: readonly { name: string; labels?: readonly string[] }[] }, name: string): readonly string[] | undefined {
  return model.outputs.find((o) => o.name === name)?.labels;
}
