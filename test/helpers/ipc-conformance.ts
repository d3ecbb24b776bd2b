/**
 * Test helper: the Node half of the ring/arena conformance suite (docs/ipc.md, "Conformance
 * suite"). The cases are test/ipc-conformance/cases.json; test/python/ipc_conformance.py is the
 * Python half and the meaning of each field is documented there and in docs/ipc.md. Messages are
 * built here with Node's own encoder (src/backends/python/ipc/codec.ts), so message sizes are
 * those of the bytes Node really writes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { encode } from '../../src/backends/python/ipc/codec.js';
import { loadNative } from '../../src/backends/python/ipc/native.js';
import { OFF_RING_CAPACITY, type RingOffsets } from '../../src/backends/python/ipc/shm-layout.js';
import { ROOT } from './server.js';

export const CASES_PATH = path.join(ROOT, 'test', 'ipc-conformance', 'cases.json');
export const PEER = path.join(ROOT, 'test', 'python', 'ipc_conformance.py');
/** Every wait of the suite is bounded by this; none is an assertion on speed. */
export const BOUND_MS = 20_000;

export type SizeSpec = number | { payload: number } | { max: number } | { rings: number } | { fillTo: number };
export interface RingCase {
  name: string;
  ring: number;
  blockReader?: boolean;
  /** How both readers wait (docs/ipc.md, "Waiting"); the suite's default is to sleep at once. */
  spinMode?: 'adaptive' | 'always' | 'never';
  messages: SizeSpec[] | { pattern: SizeSpec[]; count: number };
}
export interface SignalCase {
  name: string;
  kind: 'sleeping' | 'heartbeat';
  ring: number;
  rounds?: number;
  periodS?: number;
  /** Both doorbells start here (near 2^32, to see them wrap). */
  doorbellStart?: number;
}
export interface CorruptionCase {
  name: string;
  ring: number;
  head: number;
  tail: number;
  words: Array<[number, number]>;
}
export type ArenaOp = ['alloc', string, number, number] | ['free', string] | ['free!', number];
export interface ArenaCase {
  name: string;
  base: number;
  size: number;
  align: number;
  ops: ArenaOp[];
}
export type RegionOp = ['alloc', string, number, number, number] | ['free', string];
export interface RegionArenaCase {
  name: string;
  ring: number;
  growth: number;
  ops: RegionOp[];
}
export interface Cases {
  ring: RingCase[];
  signals: SignalCase[];
  corruption: CorruptionCase[];
  arena: ArenaCase[];
  regionArena: RegionArenaCase[];
}

export const CASES: Cases = JSON.parse(fs.readFileSync(CASES_PATH, 'utf8'));

/** The conformance messages: {t:"c", i, p} and the closing {t:"c_end", n}; others pass by. */
export type ConfMessage = { t: string; [field: string]: unknown };

// ---- messages -------------------------------------------------------------------------------

export function pattern(i: number, n: number): Buffer {
  const b = Buffer.alloc(n);
  const start = (7 * i) % 256;
  for (let k = 0; k < n; k++) b[k] = (start + k) & 0xff;
  return b;
}

export const message = (i: number, payloadLen: number): ConfMessage => ({ t: 'c', i, p: pattern(i, payloadLen) });
const encodedSize = (i: number, payloadLen: number): number => encode(message(i, payloadLen)).byteLength;

/** len(p) that makes message i exactly `size` bytes with Node's encoder, or undefined. */
export function payloadFor(i: number, size: number): number | undefined {
  const base = encodedSize(i, 0);
  for (const n of [size - base, size - base - 1, size - base - 3]) if (n >= 0 && encodedSize(i, n) === size) return n;
  return undefined;
}

// The record format of docs/ipc.md, "Rings", as the suite's reference: Node's ring code is
// native (ring_core.h, through the addon's createRingLink), so no module of src/ has these any more.
/** Records are `u32 length` + payload, padded to this. */
export const RECORD_ALIGN = 8;
/** Length word of a record: bit 31 set = more fragments of the same message follow. */
export const FRAG_MORE = 0x8000_0000;
/** Length word meaning "skip to offset 0 of the data area". */
export const WRAP_MARKER = 0xffff_ffff;

export const recordSize = (n: number): number => Math.ceil((4 + n) / RECORD_ALIGN) * RECORD_ALIGN;

/** The reference layout (docs/ipc.md, "Rings"): the writer's tail after a message of `nbytes`. */
export function place(tail: number, nbytes: number, cap: number): number {
  const maxRec = cap / 2 - RECORD_ALIGN;
  let off = 0;
  for (;;) {
    const piece = Math.min(maxRec, nbytes - off);
    const need = recordSize(piece);
    const toEnd = cap - (tail % cap);
    if (need > toEnd) tail += toEnd;
    tail += need;
    off += piece;
    if (off >= nbytes) return tail;
  }
}

/** Sizes whose records end exactly `gap` bytes before the ring's end (ipc_conformance.fill_sizes). */
export function fillSizes(tail: number, cap: number, gap: number, i: number): number[] {
  const sizes: number[] = [];
  let pos = tail % cap;
  const maxPayload = cap / 2 - RECORD_ALIGN;
  let d = (((cap - gap - pos) % cap) + cap) % cap;
  for (;;) {
    while (d > 0 && d < 24) d += cap;
    if (d === 0) return sizes;
    if (cap - pos < 24) {
      d -= cap - pos;
      pos = 0;
      continue;
    }
    const room = Math.min(d, cap - pos);
    let r = Math.min(room, cap / 2);
    if (room - r > 0 && room - r < 24) r -= 24;
    let found: number | undefined;
    for (let n = r - 4; n > r - 12; n--) {
      if (n <= maxPayload && payloadFor(i + sizes.length, n) !== undefined) {
        found = n;
        break;
      }
    }
    if (found === undefined) throw new Error(`no message makes a record of ${r} bytes`);
    sizes.push(found);
    d -= r;
    pos = (pos + r) % cap;
  }
}

export function expand(c: RingCase): SizeSpec[] {
  const m = c.messages;
  if (Array.isArray(m)) return m;
  return Array.from({ length: m.count }, (_, k) => m.pattern[k % m.pattern.length]!);
}

/** [payload length, expected size or -1] of the messages a spec stands for. */
export function resolve(spec: SizeSpec, cap: number, tail: number, i: number): Array<[number, number]> {
  if (typeof spec === 'number') {
    const n = payloadFor(i, spec);
    if (n === undefined) throw new Error(`no message of exactly ${spec} bytes`);
    return [[n, spec]];
  }
  if ('payload' in spec) return [[spec.payload, -1]];
  if ('max' in spec) return resolve(cap / 2 - RECORD_ALIGN + spec.max, cap, tail, i);
  if ('rings' in spec) return resolve(Math.floor(spec.rings * cap), cap, tail, i);
  const out: Array<[number, number]> = [];
  for (const size of fillSizes(tail, cap, spec.fillTo, i)) out.push(...resolve(size, cap, tail, i + out.length));
  return out;
}

// ---- the control header, through a mapping of our own ----------------------------------------

export interface RingWords {
  head: number;
  tail: number;
  doorbell: number;
  sleeping: number;
  producerWaiting: number;
}

/** A second mapping of a region's n0 (real shared memory), read with Atomics. */
export class Header {
  readonly sab: SharedArrayBuffer;
  private readonly u64: BigUint64Array;
  readonly i32: Int32Array;

  /** `ch`: the channel whose n0 to map (its memfd, or its /dev/shm file). */
  constructor(ch: { region: string; segmentFds: readonly [number, number] | undefined }) {
    this.sab = ch.segmentFds ? loadNative().mapFd(ch.segmentFds[0]) : loadNative().openShm(`${ch.region}.n0`);
    this.u64 = new BigUint64Array(this.sab, 0, 512);
    this.i32 = new Int32Array(this.sab, 0, 1024);
  }

  get64(off: number): number {
    return Number(Atomics.load(this.u64, off / 8));
  }

  set64(off: number, v: number): void {
    Atomics.store(this.u64, off / 8, BigInt(v));
  }

  get32(off: number): number {
    return Atomics.load(this.i32, off / 4) >>> 0;
  }

  set32(off: number, v: number): void {
    Atomics.store(this.i32, off / 4, v | 0);
  }

  cap(): number {
    return this.get64(OFF_RING_CAPACITY);
  }

  ring(o: RingOffsets): RingWords {
    return {
      head: this.get64(o.head),
      tail: this.get64(o.tail),
      doorbell: this.get32(o.doorbell),
      sleeping: this.get32(o.sleeping),
      producerWaiting: this.get32(o.producerWaiting),
    };
  }

  close(): void {
    loadNative().releaseShm(this.sab);
  }
}

// ---- writer and reader ------------------------------------------------------------------------

export interface Sent {
  i: number;
  len: number;
  size: number;
  fits: boolean;
  doorbell: number;
}

/**
 * Sends the case's messages and reports each (ipc_conformance.write_case). The writer's tail is
 * checked against `place` whenever nothing is queued; `end` is where the reference layout says
 * the tail must be once everything is written out.
 */
export function writeCase(
  c: RingCase,
  send: (m: ConfMessage) => void,
  hdr: Header,
  ring: RingOffsets,
  queued: () => boolean,
): { sent: Sent[]; errors: string[]; end: number } {
  const cap = hdr.cap();
  const start = hdr.get64(ring.tail);
  let tail = start;
  const sent: Sent[] = [];
  const errors: string[] = [];
  let i = 0;
  for (const spec of expand(c)) {
    for (const [n, size] of resolve(spec, cap, tail, i)) {
      const msg = message(i, n);
      const bytes = encode(msg).byteLength;
      if (size >= 0 && bytes !== size) errors.push(`message ${i}: ${bytes} bytes instead of ${size}`);
      const before = hdr.ring(ring);
      const fits = !queued() && place(before.tail, bytes, cap) - before.head <= cap;
      send(msg);
      const after = hdr.ring(ring);
      tail = place(tail, bytes, cap);
      if (!queued() && after.tail !== tail) errors.push(`message ${i} (${bytes} bytes): tail ${after.tail - start}, layout says ${tail - start}`);
      sent.push({ i, len: n, size: bytes, fits, doorbell: (after.doorbell - before.doorbell) >>> 0 });
      i++;
    }
  }
  const end: ConfMessage = { t: 'c_end', n: i };
  send(end);
  return { sent, errors, end: place(tail, encode(end).byteLength, cap) };
}

/** Checks order and content of received messages (ipc_conformance.ReadCheck). */
export class ReadCheck {
  readonly lengths: number[] = [];
  readonly errors: string[] = [];
  done = false;

  feed(m: ConfMessage): void {
    if (m.t === 'c_end') {
      if (m.n !== this.lengths.length) this.errors.push(`c_end says ${String(m.n)} messages, ${this.lengths.length} came`);
      this.done = true;
    } else if (m.t === 'c') {
      const i = this.lengths.length;
      const p = m.p;
      if (m.i !== i) this.errors.push(`message ${i} came as ${String(m.i)}`);
      else if (!(p instanceof Uint8Array) || !Buffer.from(p).equals(pattern(i, p.byteLength))) this.errors.push(`message ${i}: payload damaged`);
      this.lengths.push(p instanceof Uint8Array ? p.byteLength : -1);
    }
  }
}

/** Runs an `arena` case against one allocator; returns the differences from the expectation. */
export function runArenaOps(c: ArenaCase, alloc: (n: number) => number, free: (off: number) => void): string[] {
  const errors: string[] = [];
  const live = new Map<string, number>();
  for (const op of c.ops) {
    if (op[0] === 'alloc') {
      const [, name, n, want] = op;
      const got = alloc(n);
      if (got !== want) errors.push(`alloc ${name} (${n} bytes): ${got}, expected ${want}`);
      if (got >= 0) live.set(name, got);
    } else if (op[0] === 'free') {
      free(live.get(op[1])!);
      live.delete(op[1]);
    } else {
      try {
        free(op[1]);
        errors.push(`free of offset ${op[1]} was accepted`);
      } catch {
        /* refused, as it must be */
      }
    }
  }
  return errors;
}

/** A live block of a regionArena case: [name, segment index, offset from the arena start, n, seed]. */
export type Block = [string, number, number, number, number];

/** Runs a `regionArena` case (ipc_conformance.region_blocks): fills each new block with its pattern. */
export function regionBlocks(
  c: RegionArenaCase,
  alloc: (n: number) => { seg: number; off: number; view: Buffer },
  free: (b: Block) => void,
): { blocks: Block[]; errors: string[] } {
  const errors: string[] = [];
  const live = new Map<string, Block>();
  c.ops.forEach((op, seed) => {
    if (op[0] === 'alloc') {
      const [, name, n, wantSeg, wantOff] = op;
      const { seg, off, view } = alloc(n);
      if (seg !== wantSeg || off !== wantOff) errors.push(`alloc ${name} (${n} bytes): segment ${seg} offset ${off}, expected ${wantSeg} ${wantOff}`);
      view.set(pattern(seed, n));
      live.set(name, [name, seg, off, n, seed]);
    } else {
      free(live.get(op[1])!);
      live.delete(op[1]);
    }
  });
  return { blocks: [...live.values()], errors };
}

/** The reader's side of a regionArena case: every live block holds its pattern. */
export function checkBlocks(blocks: Block[], view: (seg: number, off: number, n: number) => Uint8Array): string[] {
  const errors: string[] = [];
  for (const [name, seg, off, n, seed] of blocks) {
    if (!Buffer.from(view(seg, off, n)).equals(pattern(seed, n))) errors.push(`block ${name} (segment ${seg}, offset ${off}) does not hold what was written`);
  }
  return errors;
}
