/**
 * @module backends/onnx/ort-types
 * The three spellings of a tensor element type that meet in this backend: the protocol datatype
 * (`FP32`), the config enum (`DataType.TYPE_FP32`) and onnxruntime-node's type string
 * (`float32`), plus the typed array each fixed-size ORT type travels in.
 */
import type { Datatype } from '../../core/datatype.js';

/** onnxruntime-node tensor types tritium can exchange (no bfloat16 or 4-bit types in the JS API). */
export type OrtType = 'bool' | 'uint8' | 'uint16' | 'uint32' | 'uint64' | 'int8' | 'int16' | 'int32' | 'int64' | 'float16' | 'float32' | 'float64' | 'string';

export type OrtTypedArray =
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | BigUint64Array
  | Int8Array
  | Int16Array
  | Int32Array
  | BigInt64Array
  | Float32Array
  | Float64Array;

/** What an ORT tensor's data is: a typed array, or one JS string per element for `string`. */
export type OrtData = OrtTypedArray | string[];

const TO_ORT: Partial<Record<Datatype, OrtType>> = {
  BOOL: 'bool',
  UINT8: 'uint8',
  UINT16: 'uint16',
  UINT32: 'uint32',
  UINT64: 'uint64',
  INT8: 'int8',
  INT16: 'int16',
  INT32: 'int32',
  INT64: 'int64',
  // FP16 travels as raw 16-bit words: neither side needs to do arithmetic on it.
  FP16: 'float16',
  FP32: 'float32',
  FP64: 'float64',
  BYTES: 'string',
};

const FROM_ORT: Record<OrtType, Datatype> = {
  bool: 'BOOL',
  uint8: 'UINT8',
  uint16: 'UINT16',
  uint32: 'UINT32',
  uint64: 'UINT64',
  int8: 'INT8',
  int16: 'INT16',
  int32: 'INT32',
  int64: 'INT64',
  float16: 'FP16',
  float32: 'FP32',
  float64: 'FP64',
  string: 'BYTES',
};

/** ORT type of a protocol datatype, or undefined where onnxruntime-node has none (BF16). */
export function ortTypeOf(dt: Datatype): OrtType | undefined {
  return TO_ORT[dt];
}

/** Protocol datatype of an ORT metadata type string, or undefined for types tritium cannot serve. */
export function datatypeOfOrt(type: string): Datatype | undefined {
  return (FROM_ORT as Record<string, Datatype | undefined>)[type];
}

type TypedArrayCtor = {
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): OrtTypedArray;
  new (length: number): OrtTypedArray;
  readonly BYTES_PER_ELEMENT: number;
};

const CTORS: Record<Exclude<OrtType, 'string'>, TypedArrayCtor> = {
  bool: Uint8Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  uint64: BigUint64Array,
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  int64: BigInt64Array,
  float16: Uint16Array,
  float32: Float32Array,
  float64: Float64Array,
} as unknown as Record<Exclude<OrtType, 'string'>, TypedArrayCtor>;

export function typedArrayCtor(type: Exclude<OrtType, 'string'>): TypedArrayCtor {
  return CTORS[type];
}
