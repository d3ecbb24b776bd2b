/**
 * @module core/datatype
 * The tensor datatypes of the KServe v2 protocol as Triton spells them, with their element
 * sizes and how each travels in JSON.
 */

export const DATATYPES = ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BYTES', 'BF16'] as const;

export type Datatype = (typeof DATATYPES)[number];

const ELEMENT_SIZE: Record<Datatype, number> = {
  BOOL: 1,
  UINT8: 1,
  UINT16: 2,
  UINT32: 4,
  UINT64: 8,
  INT8: 1,
  INT16: 2,
  INT32: 4,
  INT64: 8,
  FP16: 2,
  FP32: 4,
  FP64: 8,
  BYTES: 0,
  BF16: 2,
};

export function isDatatype(s: unknown): s is Datatype {
  return typeof s === 'string' && (ELEMENT_SIZE as Record<string, number>)[s] !== undefined;
}

/** Bytes per element; 0 for BYTES, whose elements are variable length. */
export function elementSize(dt: Datatype): number {
  return ELEMENT_SIZE[dt];
}
