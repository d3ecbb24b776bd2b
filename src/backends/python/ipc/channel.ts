/**
 * @module backends/python/ipc/channel
 * `StubChannel`: Node's end of the shared-memory link with one Python stub (docs/ipc.md).
 * Owns the region: creates `n0` (header, rings, input arena) and any `n<k>`, maps the stub's
 * `s<k>` lazily, sends on ring A, receives ring B on the event loop when the stub writes the
 * wake eventfd (`wakeFd`, inherited by the stub), and on close drops every segment: memfds
 * (`segmentFds`, also inherited) go with their last descriptor and mapping, `<region>.*` files
 * in /dev/shm (the fallback, backing.ts) are unlinked.
 */
import fs from 'node:fs';
import { segmentBacking, type SegmentBacking } from './backing.js';
import { decode, encode } from './codec.js';
import { decodeExecDone } from './exec-done-decoder.js';
import { encodeExec } from './exec-encoder.js';
import type { ExecMsg, NodeToStub, StubToNode } from './messages.js';
import { type Arena, loadNative, type NativeAddon, type RingLink, type WakeListener } from './native.js';
import { describeMemoryLimit, memoryHeadroom } from './memory-limit.js';
import { closeQuiet, SegmentFdLink } from './segment-fds.js';
import { describeShmUse, removeRegion } from './shm-cleanup.js';
import { newShmName } from './shm-name.js';
import {
  BLOCK_ALIGN,
  DEFAULT_RING_BYTES,
  HEADER_SIZE,
  LAYOUT_VERSION,
  MAGIC,
  MIN_RING_BYTES,
  MIN_SEGMENT_BYTES,
  OFF_ARENA,
  OFF_ARENA_SIZE,
  OFF_HEADER_SIZE,
  OFF_HEARTBEAT,
  OFF_MAGIC,
  OFF_RING_A_DATA,
  OFF_RING_B_DATA,
  OFF_RING_CAPACITY,
  OFF_STUB_PID,
  OFF_VERSION,
  RING_A,
  SEGMENT_ROUND,
} from './shm-layout.js';

/**
 * adaptive: poll only while it pays (recent messages within the window, an idle core); always;
 * never. The list `spin-mode` is checked against (backends/python/options.ts).
 */
export const SPIN_MODES = ['adaptive', 'always', 'never'] as const;
export type SpinMode = (typeof SPIN_MODES)[number];
export const DEFAULT_SPIN_MODE: SpinMode = 'adaptive';
export const DEFAULT_SPIN_US = 50;

/** How both ends of a link wait for messages (`--backend-config=python,spin-us=...,spin-mode=...`). */
export interface IpcWaitOptions {
  spinUs: number;
  spinMode: SpinMode;
}

export interface StubChannelOptions {
  /** `tritium_<serverPid>_<8 hex>_<instance>`; see newRegionName(). */
  region: string;
  /** Size of n0 (header + rings + first input arena); raised to at least 1 MiB. */
  defaultByteSize: number;
  /** Minimum size of each extra input segment n1, n2, ... */
  growthByteSize: number;
  /** Bytes per ring; power of two, default 64 KiB. */
  ringByteSize?: number;
  /**
   * How long Node's event loop keeps polling after a wake-up before it blocks again, and when
   * (docs/ipc.md, "Waiting"); the same settings as the stub's. Default adaptive, 50 µs.
   */
  wait?: IpcWaitOptions;
  /** memfds or /dev/shm files; default: what this host allows (backing.ts). */
  backing?: SegmentBacking;
}

interface Segment {
  name: string;
  sab: SharedArrayBuffer;
  buf: Buffer;
  /** Only on Node's own input segments (n<k>). */
  arena?: Arena;
  /** The memfd of one of Node's own segments (kept to reserve pages and to pass it); -1 otherwise. */
  fd: number;
  /**
   * Its pages were handed back to tmpfs when its last block was freed (a grown segment, larger
   * than the growth size): a block allocated in it reserves its pages first.
   */
  hollow?: boolean;
}

/** Region names are `/dev/shm` file names and memfd labels: keep them to a safe alphabet. */
const REGION_RE = /^[A-Za-z0-9_.-]+$/;
const SEGMENT_RE = /^[ns][0-9]+$/;
const PAGE = 4096;
/** Fallback poll while ring A is full, in case the stub's "space freed" signal was missed. */
const FULL_RETRY_MS = 1;
/** Retry of segment descriptors the stub's socket had no room for (it waits for them). */
const FD_RETRY_MS = 1;
/**
 * Output-block releases ride on the next `exec` (field `rel`) instead of costing the stub a
 * wake-up of their own; when no exec comes they go out as a `release` message after this
 * long, or at once when this many are waiting, so an idle instance never holds blocks.
 */
const RELEASE_IDLE_MS = 2;
const RELEASE_BATCH_MAX = 256;

/**
 * A decoded ring-B record as a message: a map with a string `t` (docs/ipc.md, "Messages"). The
 * stub is our own code, so the fields are trusted; a record of another shape is a broken stub
 * or a corrupt ring, surfaced like a codec failure.
 */
function asStubMessage(bytes: Uint8Array, end: number): Message {
  // Every batch answers with an exec_done: read by hand (exec-done-decoder.ts), the rest by msgpackr.
  const m = decodeExecDone(bytes, end) ?? decode(bytes, end);
  if (typeof m !== 'object' || m === null || typeof (m as { t?: unknown }).t !== 'string') {
    throw new Error(`ring B carried a record that is not a message: ${JSON.stringify(m)?.slice(0, 200)}`);
  }
  return m as Message;
}

/** A fresh region name for an instance, following docs/ipc.md. */
export function newRegionName(instance: string): string {
  const safe = instance.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 100);
  return newShmName(safe);
}

const roundUp = (n: number, m: number): number => Math.ceil(n / m) * m;

/** The size of a region's n0 segment (header, both rings, first input arena), what a stub launch allocates at once. */
export function n0ByteSize(defaultByteSize: number, ringByteSize: number = DEFAULT_RING_BYTES): number {
  return roundUp(Math.max(defaultByteSize, MIN_SEGMENT_BYTES, HEADER_SIZE + 2 * ringByteSize + SEGMENT_ROUND), 4096);
}

/** Any message of a ring: a msgpack map whose `t` names its type. */
export interface Message {
  t: string;
}

/**
 * `Out` / `In`: the messages of each direction; the stub protocol's by default (ipc/messages.ts),
 * others for test peers that speak their own (fixtures/ipc_echo_peer.py).
 */
export class StubChannel<Out extends Message = NodeToStub, In extends Message = StubToNode> {
  readonly region: string;
  private readonly native: NativeAddon;
  private readonly segments = new Map<string, Segment>();
  private readonly inputs: Segment[] = [];
  private readonly growthByteSize: number;
  private readonly hdr64: BigUint64Array;
  private readonly hdr32: Int32Array;
  /** Ring A out, ring B in (the ring code itself is native, shared with the stub). */
  private readonly rings: RingLink;
  /**
   * Where each ring-B message is copied to be decoded: one process-local buffer reused for
   * every message (grown to the largest seen). Not a view of the ring: msgpackr's string path
   * uses TextDecoder, which rejects views of a SharedArrayBuffer, and the ring's space is
   * handed back to the stub as soon as the message is taken.
   */
  private scratch = Buffer.allocUnsafe(4096);
  private listener: WakeListener | undefined;
  private readonly listeners: Array<(msg: In) => void> = [];
  private backlog: In[] = [];
  /** Messages (already encoded, copied) waiting for ring A space; `off` = bytes already sent. */
  private readonly outQueue: Array<{ bytes: Uint8Array; off: number }> = [];
  private retryTimer: NodeJS.Timeout | undefined;
  /** Output blocks read and done with, not yet handed back (see RELEASE_IDLE_MS). */
  private pendingRelease: Array<[string, number]> = [];
  private releaseTimer: NodeJS.Timeout | undefined;
  private closed = false;
  readonly backing: SegmentBacking;
  /** memfd backing: the socket that passes segment descriptors (segment-fds.ts). */
  private readonly fdLink: SegmentFdLink | undefined;
  private fdRetryTimer: NodeJS.Timeout | undefined;

  private constructor(opts: StubChannelOptions) {
    if (!REGION_RE.test(opts.region)) throw new Error(`invalid shm region name '${opts.region}'`);
    const ring = opts.ringByteSize ?? DEFAULT_RING_BYTES;
    if (ring < MIN_RING_BYTES || (ring & (ring - 1)) !== 0) {
      throw new Error(`ringByteSize must be a power of two >= ${MIN_RING_BYTES}, got ${ring}`);
    }
    this.region = opts.region;
    this.native = loadNative();
    this.growthByteSize = Math.max(opts.growthByteSize, SEGMENT_ROUND);
    const arenaOff = HEADER_SIZE + 2 * ring;
    const n0Size = n0ByteSize(opts.defaultByteSize, ring);
    this.backing = opts.backing ?? segmentBacking();

    const n0 = this.createSegment('n0', n0Size, n0Size);
    if (this.backing === 'memfd') {
      try {
        this.fdLink = new SegmentFdLink(this.native);
      } catch (e) {
        this.dropSegments();
        throw e;
      }
    }
    this.hdr64 = new BigUint64Array(n0.sab, 0, HEADER_SIZE / 8);
    this.hdr32 = new Int32Array(n0.sab, 0, HEADER_SIZE / 4);
    const dv = new DataView(n0.sab, 0, HEADER_SIZE);
    // Fresh tmpfs pages are zero, so positions, doorbells and flags already start at 0.
    n0.buf.write(MAGIC, OFF_MAGIC, 'latin1');
    dv.setUint32(OFF_VERSION, LAYOUT_VERSION, true);
    dv.setUint32(OFF_HEADER_SIZE, HEADER_SIZE, true);
    dv.setBigUint64(OFF_RING_CAPACITY, BigInt(ring), true);
    dv.setBigUint64(OFF_RING_A_DATA, BigInt(HEADER_SIZE), true);
    dv.setBigUint64(OFF_RING_B_DATA, BigInt(HEADER_SIZE + ring), true);
    dv.setBigUint64(OFF_ARENA, BigInt(arenaOff), true);
    dv.setBigUint64(OFF_ARENA_SIZE, BigInt(n0Size - arenaOff), true);
    n0.arena = this.native.createArena(arenaOff, n0Size - arenaOff, BLOCK_ALIGN);
    this.inputs.push(n0);

    try {
      this.rings = this.native.createRingLink(n0.sab);
      this.listener = new this.native.WakeListener(() => this.onWake(), n0.sab, {
        spinUs: opts.wait?.spinUs ?? DEFAULT_SPIN_US,
        spinMode: opts.wait?.spinMode ?? DEFAULT_SPIN_MODE,
      });
    } catch (e) {
      // Out of descriptors: nothing of the region may outlive the failed launch.
      this.fdLink?.close();
      this.dropSegments();
      removeRegion(this.region);
      throw e;
    }
  }

  /**
   * The eventfd the stub writes to wake this channel: pass it to the stub process as an
   * inherited descriptor and tell the stub its number there (`TRITIUM_STUB_WAKE_FD`).
   */
  get wakeFd(): number {
    return this.listener?.fd ?? -1;
  }

  /**
   * memfd backing: the descriptors the stub inherits besides the wake eventfd, n0's memfd and
   * its end of the segment socket (it learns their numbers from `TRITIUM_STUB_SEGMENT_FDS`);
   * undefined with /dev/shm files, which the stub opens by name. Call `stubSpawned` after the spawn.
   */
  get segmentFds(): [number, number] | undefined {
    const n0 = this.inputs[0];
    return this.fdLink && n0 ? [n0.fd, this.fdLink.stubFd] : undefined;
  }

  /** The stub was spawned with `segmentFds`: Node closes its copy of the stub's socket end. */
  stubSpawned(): void {
    this.fdLink?.stubSpawned();
  }

  /** Creates the region's n0 segment and starts listening; see StubChannelOptions. */
  static create<O extends Message = NodeToStub, I extends Message = StubToNode>(opts: StubChannelOptions): StubChannel<O, I> {
    return new StubChannel<O, I>(opts);
  }

  /**
   * msgpack-encodes `msg` onto ring A. Never throws for a full ring: queues and flushes later.
   * An `exec` carries the pending output-block releases in `rel`, added to `msg` itself (a
   * message is the caller's to build and not to reuse).
   */
  send(msg: Out): void {
    this.write(msg);
  }

  private write(msg: Message): void {
    if (this.closed) throw new Error(`StubChannel ${this.region} is closed`);
    // New n<k> segments go out before the message that may name them (segment-fds.ts).
    if (this.fdLink?.hasPending) this.flushFds();
    // Added to the caller's fresh message rather than copied into a new one: a spread of it
    // made V8 build and migrate object maps on every exec (3 % of the server's samples at
    // concurrency 1 in a profile, docs/ipc.md).
    if (this.pendingRelease.length > 0 && msg.t === 'exec') (msg as Message & { rel?: Array<[string, number]> }).rel = this.takeReleases();
    const bytes = msg.t === 'exec' ? encodeExec(msg as unknown as ExecMsg) : encode(msg);
    if (this.outQueue.length === 0) {
      const off = this.rings.write(bytes, 0);
      this.rings.publish();
      if (off === bytes.byteLength) return;
      this.outQueue.push({ bytes: Uint8Array.prototype.slice.call(bytes, off), off: 0 });
    } else {
      // msgpackr reuses its output buffer: keep our own copy while queued.
      this.outQueue.push({ bytes: Uint8Array.prototype.slice.call(bytes), off: 0 });
    }
    this.waitForSpace();
  }

  /** Called on the event loop for every ring-B message, in order. */
  onMessage(cb: (msg: In) => void): void {
    this.listeners.push(cb);
    if (this.backlog.length > 0) {
      const early = this.backlog;
      this.backlog = [];
      // Messages that arrived before anyone listened; a microtask still precedes later doorbells.
      queueMicrotask(() => this.dispatch(early));
    }
  }

  /** A block of Node's input arenas; grows the region with a new n<k> segment when all are full. */
  allocInput(nbytes: number): { seg: string; off: number; view: Buffer } {
    const off = this.allocBlock(nbytes);
    const s = this.allocated!;
    return { seg: s.name, off, view: s.buf.subarray(off, off + nbytes) };
  }

  /**
   * A block of `nbytes` in Node's input arenas for a writer that fills it in parts (a request's
   * cancel flag and inputs, tensor-codec's writeRequestInputs): its offset in the segment that
   * `lastBlockSegment` names and `lastBlockBytes` holds, both valid until the next allocation. No
   * view or record is made per block (allocInput's object and Buffer view were a good part of
   * what `exec` allocated).
   */
  allocBlockIn(nbytes: number): number {
    return this.allocBlock(nbytes);
  }

  /** The name of the segment of the last block allocated (allocBlockIn). */
  get lastBlockSegment(): string {
    return this.allocated!.name;
  }

  /** The bytes of the segment of the last block allocated (allocBlockIn). */
  get lastBlockBytes(): Buffer {
    return this.allocated!.buf;
  }

  /** Writes `value` as a u32 at the start of input block `block` (a request's cancel flag). */
  writeInputU32(block: readonly [string, number], value: number): void {
    if (this.closed) return;
    this.segments.get(block[0])?.buf.writeUInt32LE(value, block[1]);
  }

  /** The input segment of the last allocBlock, so that it returns a bare offset. */
  private allocated: Segment | undefined;

  private allocBlock(nbytes: number): number {
    this.assertOpen();
    if (!Number.isSafeInteger(nbytes) || nbytes < 0) throw new RangeError(`allocInput: bad size ${nbytes}`);
    for (const s of this.inputs) {
      const off = s.arena!.alloc(nbytes);
      if (off < 0) continue;
      if (s.hollow) this.reserve(s, off, nbytes);
      this.allocated = s;
      return off;
    }
    const name = `n${this.inputs.length}`;
    const size = Math.max(this.growthByteSize, roundUp(nbytes, SEGMENT_ROUND));
    const seg = this.createSegment(name, size, nbytes);
    seg.arena = this.native.createArena(0, size, BLOCK_ALIGN);
    this.inputs.push(seg);
    this.allocated = seg;
    return seg.arena.alloc(nbytes);
  }

  /** Passes the queued segment descriptors; while the stub's queue is full, again shortly. */
  private flushFds(): void {
    if (this.closed || this.fdLink!.flush() || this.fdRetryTimer !== undefined) return;
    this.fdRetryTimer = setTimeout(() => {
      this.fdRetryTimer = undefined;
      this.flushFds();
    }, FD_RETRY_MS);
  }

  /** Blocks of Node's input arenas in use now, over every segment (a request's leave with it). */
  inputBlocksInUse(): number {
    let n = 0;
    for (const s of this.inputs) n += s.arena!.blocksInUse();
    return n;
  }

  freeInput(seg: string, off: number): void {
    const s = this.segments.get(seg);
    if (!s?.arena) throw new Error(`freeInput: '${seg}' is not an input segment of ${this.region}`);
    s.arena.release(off);
    // A segment grown for large tensors gives its pages back once nothing is in it, so the
    // space returns to /dev/shm after a large request; n0 and growth-sized segments stay.
    if (s !== this.inputs[0] && s.arena.blocksInUse() === 0 && s.buf.byteLength > this.growthByteSize) {
      this.native.hollowShm(s.sab);
      s.hollow = true;
    }
  }

  /** Reserves the pages of a block in a hollowed segment; when memory or /dev/shm is short, frees it again and throws. */
  private reserve(s: Segment, off: number, nbytes: number): void {
    const start = off & ~(PAGE - 1);
    const end = Math.min(s.buf.byteLength, roundUp(off + Math.max(nbytes, 1), PAGE));
    const what = `reserve ${end - start} bytes of segment ${this.region}.${s.name}`;
    try {
      if (s.fd >= 0) {
        this.checkHeadroom(what, end - start, nbytes);
        this.native.reserveFd(s.fd, start, end - start);
      } else this.native.reserveShm(`${this.region}.${s.name}`, start, end - start);
    } catch (e) {
      s.arena!.release(off);
      throw this.allocationError(e, what, nbytes, s.fd >= 0);
    }
  }

  /**
   * memfd backing: refuses a segment that needs more memory than is available, since past the
   * limit the kernel OOM-kills a process instead of failing the allocation (memory-limit.ts).
   */
  private checkHeadroom(what: string, bytes: number, needed: number): void {
    const room = memoryHeadroom();
    if (bytes <= room.bytes) return;
    throw Object.assign(new Error(describeMemoryLimit(what, needed, `more than the ${room.bytes} bytes available`)), { code: 'ENOMEM' });
  }

  /** The error of an allocation that failed: says what is limited when it is memory or /dev/shm. */
  private allocationError(e: unknown, what: string, needed: number, memfd: boolean): unknown {
    const code = (e as NodeJS.ErrnoException).code;
    if (memfd && (code === 'ENOMEM' || code === 'ENOSPC')) {
      // A text we made already (checkHeadroom) says it all; a kernel refusal is described here.
      if ((e as Error).message.startsWith('out of memory')) return e;
      return Object.assign(new Error(describeMemoryLimit(what, needed, code)), { code });
    }
    if (!memfd && code === 'ENOSPC') return new Error(this.shmFullText(what, needed));
    return e;
  }

  /** The "/dev/shm is full" text: what holds the space, and what helps. */
  private shmFullText(what: string, needed: number): string {
    return `/dev/shm is full: cannot ${what} for ${needed} bytes of tensor data. ${describeShmUse()}`;
  }

  /** Zero-copy view into any segment of the region; maps the stub's s<k> segments on first use. */
  view(seg: string, off: number, nbytes: number): Buffer {
    this.assertOpen();
    const s = this.segments.get(seg) ?? this.mapPeerSegment(seg);
    if (!(off >= 0 && nbytes >= 0 && off + nbytes <= s.buf.byteLength)) {
      throw new RangeError(`view ${seg}[${off}, +${nbytes}) is outside the ${s.buf.byteLength}-byte segment`);
    }
    return s.buf.subarray(off, off + nbytes);
  }

  /** Hands output blocks back to the stub: with the next `exec`, or after RELEASE_IDLE_MS. */
  releaseOutputs(blocks: Array<[string, number]>): void {
    if (blocks.length === 0 || this.closed) return;
    for (const b of blocks) this.pendingRelease.push(b);
    if (this.pendingRelease.length >= RELEASE_BATCH_MAX) {
      this.flushReleases();
      return;
    }
    if (this.releaseTimer === undefined) {
      this.releaseTimer = setTimeout(() => {
        this.releaseTimer = undefined;
        this.flushReleases();
      }, RELEASE_IDLE_MS);
      this.releaseTimer.unref();
    }
  }

  /** Sends the pending releases now as a `release` message (no exec came to carry them). */
  flushReleases(): void {
    if (this.closed || this.pendingRelease.length === 0) return;
    const release: NodeToStub = { t: 'release', blocks: this.takeReleases() };
    this.write(release);
  }

  /**
   * The pending releases, now leaving (or dropped); the idle timer stops with them: firing for
   * nothing would wake an idle loop, which at concurrency 1 happened every few requests.
   */
  private takeReleases(): Array<[string, number]> {
    const blocks = this.pendingRelease;
    this.pendingRelease = [];
    if (this.releaseTimer !== undefined) {
      clearTimeout(this.releaseTimer);
      this.releaseTimer = undefined;
    }
    return blocks;
  }

  /** Last value of the stub's heartbeat (CLOCK_MONOTONIC ms, comparable with process.hrtime), 0 before the first beat. */
  heartbeatMs(): number {
    return Number(Atomics.load(this.hdr64, OFF_HEARTBEAT / 8));
  }

  /** Pid the stub wrote into the header, 0 before it did. */
  stubPid(): number {
    return Atomics.load(this.hdr32, OFF_STUB_PID / 4);
  }

  /** Total bytes of every segment this process has mapped. */
  bytesInUse(): number {
    let n = 0;
    for (const s of this.segments.values()) n += s.buf.byteLength;
    return n;
  }

  /** Let the process exit while the channel is open and idle (the wake listener holds a ref by default). */
  unref(): void {
    this.listener?.unref();
  }

  ref(): void {
    this.listener?.ref();
  }

  /** Stops listening, returns the mapped pages, closes the memfds and unlinks every `<region>.*` file. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.listener?.close();
    this.listener = undefined;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.takeReleases();
    if (this.fdRetryTimer) clearTimeout(this.fdRetryTimer);
    this.fdRetryTimer = undefined;
    this.outQueue.length = 0;
    this.fdLink?.close();
    this.dropSegments();
    // Includes s<k> segments the stub created but Node never mapped; with memfds, files the
    // stub made where it could not create memfds.
    removeRegion(this.region);
  }

  /** Returns the pages of every mapped segment now and closes Node's memfds. */
  private dropSegments(): void {
    for (const s of this.segments.values()) {
      try {
        this.native.releaseShm(s.sab);
      } catch {
        /* the GC-time munmap still happens */
      }
      closeQuiet(s.fd);
      s.fd = -1;
    }
    this.segments.clear();
    this.inputs.length = 0;
  }

  // --- internals ------------------------------------------------------------------------

  private assertOpen(): void {
    if (this.closed) throw new Error(`StubChannel ${this.region} is closed`);
  }

  private createSegment(name: string, size: number, needed: number): Segment {
    const label = `${this.region}.${name}`;
    const what = `create ${size}-byte segment ${label}`;
    const memfd = this.backing === 'memfd';
    let sab: SharedArrayBuffer;
    let fd = -1;
    try {
      if (memfd) {
        this.checkHeadroom(what, size, needed);
        ({ fd, buffer: sab } = this.native.createMemfd(label, size));
      } else sab = this.native.createShm(label, size);
    } catch (e) {
      throw this.allocationError(e, what, needed, memfd);
    }
    const seg: Segment = { name, sab, buf: Buffer.from(sab), fd };
    this.segments.set(name, seg);
    // n0 reaches the stub at spawn; later segments through the socket, before any message names them.
    if (memfd && name !== 'n0') this.fdLink!.send(name, fd);
    return seg;
  }

  private mapPeerSegment(name: string): Segment {
    if (!SEGMENT_RE.test(name)) throw new Error(`invalid segment name '${name}'`);
    // A stub's segment comes as a descriptor when it is a memfd, else it is a /dev/shm file.
    const fd = name.startsWith('s') ? this.fdLink?.take(name) : undefined;
    let sab: SharedArrayBuffer;
    if (fd === undefined) sab = this.native.openShm(`${this.region}.${name}`);
    else {
      try {
        sab = this.native.mapFd(fd);
      } finally {
        fs.closeSync(fd);
      }
    }
    const seg: Segment = { name, sab, buf: Buffer.from(sab), fd: -1 };
    this.segments.set(name, seg);
    return seg;
  }

  private flush(): void {
    while (this.outQueue.length > 0) {
      const head = this.outQueue[0]!;
      head.off = this.rings.write(head.bytes, head.off);
      if (head.off < head.bytes.byteLength) break;
      this.outQueue.shift();
    }
    this.rings.publish();
    if (this.outQueue.length > 0) this.waitForSpace();
    else Atomics.store(this.hdr32, RING_A.producerWaiting / 4, 0);
  }

  /**
   * Ring A is full. The stub bumps ring B's doorbell after consuming when `producerWaiting` is
   * set (fast path); the timer covers the case where its plain stores let it miss the flag.
   */
  private waitForSpace(): void {
    Atomics.store(this.hdr32, RING_A.producerWaiting / 4, 1);
    if (this.retryTimer === undefined) {
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        if (!this.closed) this.flush();
      }, FULL_RETRY_MS);
    }
  }

  /**
   * Delivers every message already in ring B now. Called when the stub exits: its last
   * messages (an answer sent just before a clean exit) may not have woken us yet.
   */
  drain(): void {
    this.onWake();
  }

  /**
   * The stub wrote the eventfd, or the loop is about to sleep with messages in ring B. Drain;
   * the listener asks for the next wake-up itself, when the loop is about to block
   * (docs/ipc.md, "Waking Node").
   */
  private onWake(): void {
    if (this.closed) return;
    try {
      this.receive();
    } catch (e) {
      // Surface a corrupt ring or codec failure as an ordinary uncaught error, outside the
      // native callback.
      process.nextTick(() => {
        throw e;
      });
    }
  }

  private receive(): void {
    const msgs = this.takeMessages();
    // The stub passed a segment's descriptor before each `seg`: take them off its queue so
    // that its next ones find room (segment-fds.ts).
    if (this.fdLink) for (const m of msgs) if (m.t === 'seg') this.fdLink.drain();
    if (this.outQueue.length > 0) this.flush();
    if (msgs.length > 0) this.dispatch(msgs);
  }

  /** Every message ring B holds now, decoded, in order. */
  private takeMessages(): In[] {
    const msgs: In[] = [];
    for (;;) {
      const n = this.rings.receive(this.scratch);
      if (n < 0) return msgs;
      if (n > this.scratch.byteLength) {
        // It stays in the ring until there is room for it.
        this.scratch = Buffer.allocUnsafe(Math.max(n, 2 * this.scratch.byteLength));
        continue;
      }
      msgs.push(asStubMessage(this.scratch, n) as In);
    }
  }

  private dispatch(msgs: In[]): void {
    if (this.listeners.length === 0) {
      this.backlog.push(...msgs);
      return;
    }
    let firstError: unknown;
    for (const m of msgs) {
      for (const cb of this.listeners) {
        try {
          cb(m);
        } catch (e) {
          firstError ??= e;
        }
      }
    }
    // One listener's bug must not drop the messages after it; still surface it as uncaught.
    if (firstError !== undefined)
      queueMicrotask(() => {
        throw firstError;
      });
  }
}
