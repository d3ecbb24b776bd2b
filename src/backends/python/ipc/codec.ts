/**
 * @module backends/python/ipc/codec
 * msgpack encoding shared with the Python stub (`msgpack.packb(use_bin_type=True)` /
 * `unpackb(raw=False)`): plain maps (no msgpackr records/extensions), Buffers and Uint8Arrays
 * as `bin`, integers as msgpack ints.
 */
import { Packr, Unpackr } from 'msgpackr';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });
// The ring consumer decodes from one scratch buffer it reuses for every record, so a decoded
// `bin` value must be a copy (copyBuffers), never a view of that buffer.
// int64AsType 'auto': ints beyond 2^53 stay exact as bigint, the rest are plain numbers.
// ('auto' exists in msgpackr >= 1.10 but is missing from its .d.ts, hence the cast.)
const unpackr = new Unpackr({
  useRecords: false,
  mapsAsObjects: true,
  copyBuffers: true,
  int64AsType: 'auto' as 'bigint',
});

/** Encoded bytes; the returned Buffer is only valid until the next encode (msgpackr reuses it). */
export function encode(msg: unknown): Uint8Array {
  return packr.pack(msg);
}

/** The value encoded in `bytes[0, end)` (all of `bytes` by default). */
export function decode(bytes: Uint8Array, end: number = bytes.byteLength): unknown {
  return unpackr.unpack(bytes, end);
}
