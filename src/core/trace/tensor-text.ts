/**
 * @module core/trace/tensor-text
 * A tensor's `data` and `shape` as a TENSORS trace entry writes them (docs/protocol-notes.md,
 * "Trace"), checked against tritonserver 2.51: elements joined by commas; integers in decimal,
 * BOOL as 1/0, FP32/FP64 as C++ streams print a double by default (6 significant digits,
 * `1e+20`, `1.23457e+08`, `nan`, `inf`, `-0`), BYTES elements each in double quotes, FP16/BF16
 * not written (an empty string, as Triton). Where Triton's text is not valid JSON, tritium
 * writes what it meant: INT8/UINT8 in decimal (Triton writes the raw byte as a character) and
 * the whole data string JSON-escaped once (Triton leaves quotes and backslashes inside BYTES
 * elements bare). The text is cut after DATA_TEXT_LIMIT characters, where Triton writes it all.
 */
import type { Tensor } from '../tensor.js';

/**
 * Characters of one tensor's data text at most: a traced request holds its text until the
 * trace file is written (with `log_frequency` 0, until exit), so one huge tensor must not hold
 * its size again, several times over, as text. Whole elements up to the limit are written (a
 * longer BYTES element is cut inside its quotes); the shape still gives the full size.
 */
export const DATA_TEXT_LIMIT = 1 << 20;

/** The shape as Triton writes it: dims joined by commas ("" for a scalar). */
export function shapeText(shape: readonly number[]): string {
  return shape.join(',');
}

/** The data text of `t` (see the module comment), at most `limit` characters. */
export function dataText(t: Tensor, limit: number = DATA_TEXT_LIMIT): string {
  const b = t.data;
  switch (t.datatype) {
    case 'BOOL':
      return join(b.length, 1, limit, (i) => (b[i] !== 0 ? '1' : '0'));
    case 'INT8':
      return join(b.length, 1, limit, (i) => String(b.readInt8(i)));
    case 'UINT8':
      return join(b.length, 1, limit, (i) => String(b[i]));
    case 'INT16':
      return join(b.length, 2, limit, (i) => String(b.readInt16LE(i)));
    case 'UINT16':
      return join(b.length, 2, limit, (i) => String(b.readUInt16LE(i)));
    case 'INT32':
      return join(b.length, 4, limit, (i) => String(b.readInt32LE(i)));
    case 'UINT32':
      return join(b.length, 4, limit, (i) => String(b.readUInt32LE(i)));
    case 'INT64':
      return join(b.length, 8, limit, (i) => b.readBigInt64LE(i).toString());
    case 'UINT64':
      return join(b.length, 8, limit, (i) => b.readBigUInt64LE(i).toString());
    case 'FP32':
      return join(b.length, 4, limit, (i) => streamDouble(b.readFloatLE(i)));
    case 'FP64':
      return join(b.length, 8, limit, (i) => streamDouble(b.readDoubleLE(i)));
    case 'BYTES':
      return bytesText(b, limit);
    default:
      return ''; // FP16, BF16: Triton 2.51 writes no values
  }
}

/** Elements of `size` bytes at offsets 0, size, ... of a `length`-byte buffer, joined by commas. */
function join(length: number, size: number, limit: number, element: (offset: number) => string): string {
  let out = '';
  for (let off = 0; off + size <= length; off += size) {
    const e = element(off);
    if (out.length + e.length + 1 > limit) break;
    out = off === 0 ? e : `${out},${e}`;
  }
  return out;
}

/** BYTES elements (u32 LE length + bytes), each in double quotes, decoded as UTF-8. */
function bytesText(b: Buffer, limit: number): string {
  let out = '';
  let off = 0;
  while (off + 4 <= b.length) {
    const len = b.readUInt32LE(off);
    const end = Math.min(off + 4 + len, b.length);
    const sep = out.length === 0 ? '' : ',';
    const room = limit - out.length - sep.length - 2;
    if (room <= 0) break;
    const text = b.toString('utf8', off + 4, end);
    out += `${sep}"${text.length > room ? text.slice(0, room) : text}"`;
    if (text.length > room) break;
    off = end;
  }
  return out;
}

/** `x` as `std::ostream << double` writes it by default (`%g`, precision 6). */
export function streamDouble(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const [mantissa, exp] = x.toExponential(5).split('e') as [string, string];
  const e = Number(exp);
  if (e < -4 || e >= 6) {
    const digits = Math.abs(e) < 10 ? `0${Math.abs(e)}` : String(Math.abs(e));
    return `${trimZeros(mantissa)}e${e < 0 ? '-' : '+'}${digits}`;
  }
  return trimZeros(x.toFixed(5 - e));
}

function trimZeros(s: string): string {
  if (!s.includes('.')) return s;
  return s.replace(/\.?0+$/, '');
}
