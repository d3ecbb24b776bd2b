/**
 * @module backends/python/ipc/exec-done-decoder
 * The `exec_done` message (docs/ipc.md, "Messages") read from msgpack by hand: every batch
 * answers with one, and msgpackr's generic reader (`read`, `readKey`, megamorphic keyed stores
 * into each new map) was about 4 % of the main loop's samples under load. The reader knows the
 * message's fields (messages.json) and reads the usual shape only; a record of any other shape
 * (another message, a field it does not know, a number past 2^53) returns undefined and goes
 * through `codec.ts`'s decoder as before, so what a message decodes to never depends on which
 * reader read it (test/ipc-exec-done-decoder.test.ts checks both on the stub's own bytes).
 */
import { stringMemos, utf8 } from '../../../core/string-memo.js';
import type { ExecDoneMsg, OutputDescriptor, RespWire } from './messages.js';

/** Thrown inside the reader where the bytes leave the usual shape; never leaves this module. */
const UNUSUAL = new Error('exec_done of an unusual shape');

let b: Uint8Array = new Uint8Array(0);
let pos = 0;
let end = 0;

/**
 * The strings last read at a few places, reused when the bytes match: a response's 3 keys, the
 * message's 4 keys after `t`, then the name, datatype and segment of each of a response's first
 * 4 outputs (the stub writes the keys, and a model its outputs, in the same order every time).
 */
const PLACE_RESP_KEY = 0;
const PLACE_KEY = 3;
const PLACE_OUTPUT = 7;
const OUTPUT_PLACES = 4;
const memos = stringMemos(PLACE_OUTPUT + 3 * OUTPUT_PLACES);

function byte(): number {
  if (pos >= end) throw UNUSUAL;
  return b[pos++]!;
}

function be(n: number): number {
  if (pos + n > end) throw UNUSUAL;
  let v = 0;
  for (let i = 0; i < n; i++) v = v * 256 + b[pos++]!;
  return v;
}

/** An integer of at most 53 bits (msgpack's int and uint forms). */
function int(): number {
  const c = byte();
  if (c < 0x80) return c;
  if (c >= 0xe0) return c - 0x100;
  switch (c) {
    case 0xcc:
      return be(1);
    case 0xcd:
      return be(2);
    case 0xce:
      return be(4);
    case 0xcf: {
      const v = be(8);
      if (v > Number.MAX_SAFE_INTEGER) throw UNUSUAL;
      return v;
    }
    case 0xd0: {
      const v = be(1);
      return v >= 0x80 ? v - 0x100 : v;
    }
    case 0xd1: {
      const v = be(2);
      return v >= 0x8000 ? v - 0x10000 : v;
    }
    case 0xd2: {
      const v = be(4);
      return v >= 0x80000000 ? v - 0x100000000 : v;
    }
    default:
      // int64 (0xd3), floats and everything else: the generic reader's.
      throw UNUSUAL;
  }
}

function strLength(c: number): number {
  if ((c & 0xe0) === 0xa0) return c & 0x1f;
  if (c === 0xd9) return be(1);
  if (c === 0xda) return be(2);
  if (c === 0xdb) return be(4);
  throw UNUSUAL;
}

/** Steps over a string's header and bytes; returns where its bytes start (they end at `pos`). */
function strSpan(): number {
  const n = strLength(byte());
  if (pos + n > end) throw UNUSUAL;
  const start = pos;
  pos += n;
  return start;
}

function str(): string {
  const start = strSpan();
  return utf8(b, start, pos);
}

/** A string that is usually the one last read at `place` (core/string-memo). */
function name(place: number): string {
  const start = strSpan();
  return memos[place]!.read(b, start, pos);
}

function arrayLength(): number {
  const c = byte();
  const n = (c & 0xf0) === 0x90 ? c & 0x0f : c === 0xdc ? be(2) : c === 0xdd ? be(4) : -1;
  // Every item takes at least a byte: a longer count is a broken message, refused before an
  // array is made at that length.
  if (n < 0 || n > end - pos) throw UNUSUAL;
  return n;
}

function mapLength(): number {
  const c = byte();
  if ((c & 0xf0) === 0x80) return c & 0x0f;
  if (c === 0xde) return be(2);
  if (c === 0xdf) return be(4);
  throw UNUSUAL;
}

function nil(): boolean {
  if (pos < end && b[pos] === 0xc0) {
    pos++;
    return true;
  }
  return false;
}

// Arrays are made at their length: one grown by push from empty gets room for 16 or more
// items, most of a short answer's allocation when every shape, output list and response list
// paid for it.
function ints(): number[] {
  const n = arrayLength();
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = int();
  return out;
}

/** A `bin`'s bytes, copied: the message's bytes are the ring's, reused once it is read. */
function bin(): Buffer {
  const c = byte();
  const n = c === 0xc4 ? be(1) : c === 0xc5 ? be(2) : c === 0xc6 ? be(4) : -1;
  if (n < 0 || pos + n > end) throw UNUSUAL;
  const out = Buffer.allocUnsafe(n);
  out.set(b.subarray(pos, pos + n));
  pos += n;
  return out;
}

/** The descriptor of a response's `index`th output: in a block, or inline (4 items). */
function descriptor(index: number): OutputDescriptor {
  const items = arrayLength();
  if (items !== 6 && items !== 4) throw UNUSUAL;
  const place = PLACE_OUTPUT + 3 * (index % OUTPUT_PLACES);
  const tensorName = name(place);
  const datatype = name(place + 1);
  const shape = ints();
  if (items === 4) return [tensorName, datatype, shape, bin()];
  const segment = name(place + 2);
  const offset = int();
  const nbytes = int();
  return [tensorName, datatype, shape, segment, offset, nbytes];
}

function resp(): RespWire | null {
  if (nil()) return null;
  const n = mapLength();
  const r: RespWire = {};
  for (let i = 0; i < n; i++) {
    const k = i < 3 ? name(PLACE_RESP_KEY + i) : str();
    if (k === 'outs') {
      const m = arrayLength();
      const outs = new Array<OutputDescriptor>(m);
      for (let j = 0; j < m; j++) outs[j] = descriptor(j);
      r.outs = outs;
    } else if (k === 'params') {
      r.params = str();
    } else if (k === 'err') {
      if (arrayLength() !== 2) throw UNUSUAL;
      const code = int();
      r.err = [code, str()];
    } else {
      throw UNUSUAL;
    }
  }
  return r;
}

/** The fixmap key "t" and the fixstr "exec_done" after a message's map header. */
const HEAD = [0xa1, 0x74, 0xa9, ...Buffer.from('exec_done', 'latin1')];

/**
 * `bytes[0, length)` as an exec_done message, or undefined when they are another message or an
 * unusual one (the caller decodes those with codec.ts).
 */
export function decodeExecDone(bytes: Uint8Array, length: number): ExecDoneMsg | undefined {
  // Every stub message is a map whose first key is `t`; anything else is not an exec_done.
  const c = bytes[0];
  if (length < 1 + HEAD.length || c === undefined || (c & 0xf0) !== 0x80) return undefined;
  for (let i = 0; i < HEAD.length; i++) if (bytes[1 + i] !== HEAD[i]) return undefined;
  b = bytes;
  end = length;
  pos = 1 + HEAD.length;
  try {
    const m: ExecDoneMsg = { t: 'exec_done', id: 0 };
    let sawId = false;
    for (let i = 1; i < (c & 0x0f); i++) {
      const k = i < 5 ? name(PLACE_KEY + i - 1) : str();
      if (k === 'id') {
        m.id = int();
        sawId = true;
      } else if (k === 'resps') {
        const n = arrayLength();
        const resps = new Array<RespWire | null>(n);
        for (let j = 0; j < n; j++) resps[j] = resp();
        m.resps = resps;
      } else if (k === 'err') {
        m.err = str();
      } else if (k === 'resched') {
        m.resched = ints();
      } else if (k === 'ns') {
        m.ns = int();
      } else {
        throw UNUSUAL;
      }
    }
    return sawId && pos === end ? m : undefined;
  } catch (e) {
    if (e === UNUSUAL) return undefined;
    throw e;
  } finally {
    b = EMPTY;
  }
}

const EMPTY = new Uint8Array(0);
