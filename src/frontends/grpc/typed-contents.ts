/**
 * @module frontends/grpc/typed-contents
 * `InferTensorContents` (the typed alternative to `raw_input_contents`) → the raw little-endian
 * bytes the core works with. Each datatype reads exactly one repeated field:
 *
 *   BOOL → bool_contents      INT8/16/32 → int_contents     INT64  → int64_contents
 *   UINT8/16/32 → uint_contents   UINT64 → uint64_contents  FP32/FP64 → fp32/fp64_contents
 *   BYTES → bytes_contents (serialised as u32 length + bytes per element)
 *
 * FP16 and BF16 have no typed field and must travel raw. Narrow integer types are stored with
 * C-cast semantics (typed arrays wrap), as a C++ server narrowing an int32 would. Typed arrays
 * use the host's byte order, which is little-endian on every platform tritium runs on.
 */
import type { Datatype } from '../../core/datatype.js';
import { Errors } from '../../core/errors.js';
import { joinBytesElements } from '../../core/tensor.js';
import type { InferTensorContents } from '../../generated/grpc_service_pb.js';

type Field = Exclude<keyof InferTensorContents, '$typeName' | '$unknown'>;

const FIELD: Record<Datatype, Field | undefined> = {
  BOOL: 'boolContents',
  INT8: 'intContents',
  INT16: 'intContents',
  INT32: 'intContents',
  INT64: 'int64Contents',
  UINT8: 'uintContents',
  UINT16: 'uintContents',
  UINT32: 'uintContents',
  UINT64: 'uint64Contents',
  FP32: 'fp32Contents',
  FP64: 'fp64Contents',
  BYTES: 'bytesContents',
  FP16: undefined,
  BF16: undefined,
};

const ALL_FIELDS: readonly Field[] = [
  'boolContents',
  'intContents',
  'int64Contents',
  'uintContents',
  'uint64Contents',
  'fp32Contents',
  'fp64Contents',
  'bytesContents',
];

const PROTO_NAME: Record<Field, string> = {
  boolContents: 'bool_contents',
  intContents: 'int_contents',
  int64Contents: 'int64_contents',
  uintContents: 'uint_contents',
  uint64Contents: 'uint64_contents',
  fp32Contents: 'fp32_contents',
  fp64Contents: 'fp64_contents',
  bytesContents: 'bytes_contents',
};

/** The typed field a datatype uses, by its proto name (for messages and tests). */
export function contentsFieldOf(dt: Datatype): string | undefined {
  const f = FIELD[dt];
  return f === undefined ? undefined : PROTO_NAME[f];
}

function asBuffer(a: ArrayBufferView): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

/**
 * Encodes the typed contents of input `name`, checking that only the datatype's field is used
 * and that it holds `expected` elements.
 * @throws TritonError INVALID_ARG
 */
export function encodeTypedContents(name: string, dt: Datatype, contents: InferTensorContents, expected: number): Buffer {
  const field = FIELD[dt];
  if (field === undefined) {
    throw Errors.noTypedField(dt, name);
  }
  for (const f of ALL_FIELDS) {
    if (f !== field && contents[f].length > 0) {
      throw Errors.wrongTypedField(PROTO_NAME[f], name, dt, PROTO_NAME[field]);
    }
  }
  const values = contents[field];
  if (values.length !== expected) {
    throw Errors.typedElementCount(name, PROTO_NAME[field], expected, values.length);
  }
  switch (dt) {
    case 'BOOL':
      return Buffer.from(Uint8Array.from(contents.boolContents, (b) => (b ? 1 : 0)).buffer);
    case 'INT8':
      return asBuffer(Int8Array.from(contents.intContents));
    case 'INT16':
      return asBuffer(Int16Array.from(contents.intContents));
    case 'INT32':
      return asBuffer(Int32Array.from(contents.intContents));
    case 'INT64':
      return asBuffer(BigInt64Array.from(contents.int64Contents));
    case 'UINT8':
      return asBuffer(Uint8Array.from(contents.uintContents));
    case 'UINT16':
      return asBuffer(Uint16Array.from(contents.uintContents));
    case 'UINT32':
      return asBuffer(Uint32Array.from(contents.uintContents));
    case 'UINT64':
      return asBuffer(BigUint64Array.from(contents.uint64Contents));
    case 'FP32':
      return asBuffer(Float32Array.from(contents.fp32Contents));
    case 'FP64':
      return asBuffer(Float64Array.from(contents.fp64Contents));
    case 'BYTES':
      return joinBytesElements(contents.bytesContents);
    default:
      // Unreachable: FIELD maps every other datatype to undefined.
      throw Errors.noTypedField(dt, name);
  }
}
