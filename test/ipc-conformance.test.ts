/**
 * The ring/arena conformance suite (docs/ipc.md, "Conformance suite") between Node's channel
 * (src/backends/python/ipc/) and the stub's channel (stub/tritium_stub/ipc.py over
 * _tritium_ipc): every case of test/ipc-conformance/cases.json in
 * both directions, over real shared memory, with the stub side in its own process
 * (test/python/ipc_conformance.py as the peer). Also the cases that need no peer: Node's ring
 * reader (the addon's createRingLink) against hand-laid and corrupt rings, and Node's arena
 * against the allocator cases. The emulator of Node meets the stub on the same cases in
 * test/python/test_ipc_conformance.py.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { segmentBacking, type SegmentBacking } from '../src/backends/python/ipc/backing.js';
import { StubChannel, newRegionName } from '../src/backends/python/ipc/channel.js';
import { loadNative } from '../src/backends/python/ipc/native.js';
import { HEADER_SIZE, OFF_ARENA, RING_A, RING_B, type RingOffsets } from '../src/backends/python/ipc/shm-layout.js';
import {
  BOUND_MS,
  type Block,
  CASES,
  type ConfMessage,
  checkBlocks,
  FRAG_MORE,
  Header,
  message,
  PEER,
  pattern,
  ReadCheck,
  type RingCase,
  regionBlocks,
  recordSize,
  runArenaOps,
  type Sent,
  writeCase,
} from './helpers/ipc-conformance.js';
import { PYTHON, ROOT } from './helpers/server.js';

const MiB = 1 << 20;

interface Peer {
  ch: StubChannel<ConfMessage, ConfMessage>;
  hdr: Header;
  child: ChildProcess;
  /** The next message matching `pred` (those before it are dropped), within BOUND_MS. */
  next(pred?: (m: ConfMessage) => boolean): Promise<ConfMessage>;
  /** Lets a peer that waits on stdin go on. */
  go(): void;
  /** The peer's JSON report, once it exited. */
  report(): Promise<any>;
}

const open: Peer[] = [];

afterEach(() => {
  for (const p of open.splice(0)) {
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
    p.hdr.close();
    p.ch.close();
  }
});

const bounded = <T>(what: string, p: Promise<T>): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gave up after ${BOUND_MS} ms waiting for ${what}`)), BOUND_MS);
    p.then(resolve, reject).finally(() => clearTimeout(timer));
  });

async function waitFor(what: string, pred: () => boolean): Promise<void> {
  const deadline = Date.now() + BOUND_MS;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`gave up after ${BOUND_MS} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

interface PeerCase {
  name: string;
  ring: number;
  growth?: number;
  spinMode?: 'adaptive' | 'always' | 'never';
  doorbellStart?: number;
}

async function startPeer(c: PeerCase, role: string, section: string, backing?: SegmentBacking): Promise<Peer> {
  const ch = StubChannel.create<ConfMessage, ConfMessage>({
    region: newRegionName('conf'),
    defaultByteSize: MiB,
    growthByteSize: c.growth ?? MiB,
    ringByteSize: c.ring,
    wait: { spinUs: 50, spinMode: c.spinMode ?? 'never' },
    ...(backing ? { backing } : {}),
  });
  const hdr = new Header(ch);
  for (const ring of [RING_A, RING_B]) hdr.set32(ring.doorbell, c.doorbellStart ?? 0);
  const child = spawn(PYTHON, [PEER, ch.region, role, section, c.name], {
    // With memfd segments, n0 and the segment socket follow the wake eventfd (docs/ipc.md, "Segments").
    stdio: ['pipe', 'pipe', 'inherit', ch.wakeFd, ...(ch.segmentFds ?? [])],
    env: { ...process.env, TRITIUM_STUB_WAKE_FD: '3', TRITIUM_STUB_SEGMENT_FDS: ch.segmentFds ? '4,5' : undefined },
  });
  ch.stubSpawned();
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  const closed = new Promise<number | null>((res) => child.on('close', (code) => res(code)));
  const inbox: ConfMessage[] = [];
  let waiter: (() => void) | undefined;
  ch.onMessage((m) => {
    inbox.push(m);
    waiter?.();
  });
  const take = async (pred: (m: ConfMessage) => boolean): Promise<ConfMessage> => {
    for (;;) {
      const m = inbox.shift();
      if (m !== undefined) {
        if (pred(m)) return m;
        continue;
      }
      await new Promise<void>((res) => (waiter = res));
      waiter = undefined;
    }
  };
  const peer: Peer = {
    ch,
    hdr,
    child,
    next: (pred = () => true) => bounded('a message from the stub', take(pred)),
    go: () => child.stdin!.write('go\n'),
    report: async () => {
      const code = await bounded('the peer to exit', closed);
      expect(code, 'peer exit code').toBe(0);
      return JSON.parse(out.trim().split('\n').pop()!);
    },
  };
  open.push(peer);
  expect(await peer.next((m) => m.t === 'hello')).toEqual({ t: 'hello', pid: child.pid });
  return peer;
}

async function readCase(p: Peer): Promise<ReadCheck> {
  const check = new ReadCheck();
  while (!check.done) check.feed(await p.next());
  return check;
}

/** Node's channel keeps what does not fit in ring A in a queue (docs/ipc.md, "Back-pressure"). */
const queuedIn = (ch: StubChannel<ConfMessage, ConfMessage>) => () => (ch as unknown as { outQueue: unknown[] }).outQueue.length > 0;

/**
 * Blocks the event loop (so Node reads nothing) until the stub's writer waits for space: it
 * publishes again and again (forced wake-ups) while its tail stands still.
 */
function blockUntilWriterWaits(hdr: Header, ring: RingOffsets): void {
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + BOUND_MS;
  for (;;) {
    const a = hdr.ring(ring);
    Atomics.wait(nap, 0, 0, 5);
    const b = hdr.ring(ring);
    if (b.doorbell !== a.doorbell && b.tail === a.tail && b.tail !== b.head) return;
    if (Date.now() > deadline) throw new Error('the stub never waited for ring B space');
  }
}

/**
 * One publish, one doorbell step, for a message that fits. One that does not: the stub's
 * writer publishes at least once (forced wake-ups while it waits); Node's may only queue it
 * (`minWhenFull` 0) and publish when the queue is flushed.
 */
function expectWriterReport(sent: Sent[], c: RingCase, minWhenFull: number): void {
  for (const s of sent) {
    if (s.fits) expect(s.doorbell, `message ${s.i}: one publish, one doorbell step`).toBe(1);
    else expect(s.doorbell, `message ${s.i}`).toBeGreaterThanOrEqual(minWhenFull);
  }
  if (c.blockReader) expect(sent.some((s) => !s.fits)).toBe(true);
}

/** The stub's extension, without which no stub runs. */
const stubNativeBuilt =
  fs.existsSync(path.join(ROOT, 'native', 'build', 'python')) &&
  fs.readdirSync(path.join(ROOT, 'native', 'build', 'python')).some((f) => f.startsWith('_tritium_ipc'));

describe('Node <-> stub', () => {
  if (!stubNativeBuilt) {
    it.skip('needs native/build/python/_tritium_ipc (npm run build:native)', () => {});
    return;
  }
  describe.each(CASES.ring)('ring case: $name', (c) => {
    it('Node writes ring A, the stub reads it', async () => {
      const p = await startPeer(c, 'ring-reader', 'ring');
      const w = writeCase(c, (m) => p.ch.send(m), p.hdr, RING_A, queuedIn(p.ch));
      if (c.blockReader) {
        // Everything was sent synchronously into a stopped reader: Node queued and says so.
        expect(p.hdr.ring(RING_A).producerWaiting).toBe(1);
        p.go();
      }
      const rep = await p.report();
      expect(w.errors).toEqual([]);
      expect(rep.errors).toEqual([]);
      expect(rep.lengths).toEqual(w.sent.map((s) => s.len));
      expectWriterReport(w.sent, c, 0);
      if (c.blockReader) expect(rep.atGo.producer_waiting).toBe(1);
      expect(p.hdr.get64(RING_A.tail)).toBe(w.end);
    });

    it('the stub writes ring B, Node reads it', async () => {
      const p = await startPeer(c, 'ring-writer', 'ring');
      if (c.blockReader) blockUntilWriterWaits(p.hdr, RING_B);
      const got = await readCase(p);
      const rep = await p.report();
      expect(rep.errors).toEqual([]);
      expect(got.errors).toEqual([]);
      expect(got.lengths).toEqual(rep.sent.map((s: Sent) => s.len));
      expectWriterReport(rep.sent, c, 1);
    });
  });

  const heartbeat = CASES.signals.find((s) => s.kind === 'heartbeat')!;

  describe.each(CASES.signals.filter((s) => s.kind === 'sleeping'))('signals case: $name', (sleeping) => {
    it('the stub sleeps on ring A only with `sleeping` set, and wakes for a publish', async () => {
      const p = await startPeer(sleeping, 'sleeping-reader', 'signals');
      const addon = loadNative();
      for (let k = 0; k < sleeping.rounds!; k++) {
        await waitFor('the stub to sleep on ring A', () => p.hdr.ring(RING_A).sleeping === 1);
        // sleeping = 1 promises a FUTEX_WAIT on the doorbell: a FUTEX_WAKE there finds it.
        await waitFor('a FUTEX_WAKE to find the stub waiting', () => addon.futexWake(p.hdr.sab, RING_A.doorbell) >= 1);
        p.ch.send(message(k, 8));
      }
      const rep = await p.report();
      expect(rep.received).toEqual(Array.from({ length: sleeping.rounds! }, (_, k) => k));
      expect(rep.sleepingAfter).toBe(0);
    });

    it('Node asks for a wake-up with `sleeping` on ring B, and the stub wakes it', async () => {
      const p = await startPeer(sleeping, 'sleeping-writer', 'signals');
      // Node drains only when the stub writes its eventfd: each message arriving is a wake-up.
      const got = await readCase(p);
      const rep = await p.report();
      expect(got.errors).toEqual([]);
      expect(got.lengths.length).toBe(sleeping.rounds);
      expect(rep.rounds.every((r: { sleeping: number }) => r.sleeping === 1)).toBe(true);
      await waitFor('Node to ask for the next wake-up', () => p.hdr.ring(RING_B).sleeping === 1);
    });
  });

  it('the stub pid and heartbeat words', async () => {
    const p = await startPeer(heartbeat, 'heartbeat', 'signals');
    expect(p.ch.stubPid()).toBe(p.child.pid);
    await p.next((m) => m.t === 'hb_before');
    expect(p.ch.heartbeatMs()).toBe(0);
    p.go();
    await p.next((m) => m.t === 'hb_started');
    const first = p.ch.heartbeatMs();
    // CLOCK_MONOTONIC milliseconds: the clock of Node's hrtime.
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThanOrEqual(Number(process.hrtime.bigint() / 1_000_000n) + 1);
    await waitFor('the heartbeat to advance', () => p.ch.heartbeatMs() > first);
    p.go();
    await p.report();
  });

  // Segments as memfds passed between the processes (where this host allows them) and as /dev/shm files.
  const backings: SegmentBacking[] = segmentBacking() === 'memfd' ? ['memfd', 'dev-shm'] : ['dev-shm'];
  describe.each(CASES.regionArena.flatMap((c) => backings.map((backing) => ({ ...c, backing }))))('region arena case: $name, $backing segments', (c) => {
    it("Node's input blocks, read by the stub", async () => {
      const p = await startPeer(c, 'arena-reader', 'regionArena', c.backing);
      const arenaStart = p.hdr.get64(OFF_ARENA);
      const base = (seg: number) => (seg === 0 ? arenaStart : 0);
      const { blocks, errors } = regionBlocks(
        c,
        (n) => {
          const a = p.ch.allocInput(n);
          const seg = Number(a.seg.slice(1));
          return { seg, off: a.off - base(seg), view: a.view };
        },
        (b: Block) => p.ch.freeInput(`n${b[1]}`, b[2] + base(b[1])),
      );
      expect(errors).toEqual([]);
      p.ch.send({ t: 'blocks', blocks });
      const rep = await p.report();
      expect(rep.errors).toEqual([]);
    });

    it("the stub's output blocks, read by Node", async () => {
      const p = await startPeer(c, 'arena-writer', 'regionArena', c.backing);
      const segs: ConfMessage[] = [];
      let m: ConfMessage;
      while ((m = await p.next()).t === 'seg') segs.push(m);
      expect(m.t).toBe('blocks');
      expect(m.errors).toEqual([]);
      const growth = Math.max(c.growth, 1 << 16);
      expect(segs).toEqual([
        { t: 'seg', name: 's0', size: growth },
        { t: 'seg', name: 's1', size: growth },
        { t: 'seg', name: 's2', size: 2031616 },
      ]);
      expect(checkBlocks(m.blocks as Block[], (seg, off, n) => p.ch.view(`s${seg}`, off, n))).toEqual([]);
      p.go();
      await p.report();
    });
  });
});

/** A channel without a peer, and a second mapping of its n0 to lay out ring B by hand. */
function bareChannel(ring: number): { ch: StubChannel<ConfMessage, ConfMessage>; hdr: Header; ringB: DataView } {
  const ch = StubChannel.create<ConfMessage, ConfMessage>({ region: newRegionName('conf'), defaultByteSize: MiB, growthByteSize: MiB, ringByteSize: ring });
  const hdr = new Header(ch);
  return { ch, hdr, ringB: new DataView(hdr.sab, HEADER_SIZE + ring, ring) };
}

describe("Node's ring reader (createRingLink) on ring B", () => {
  it('refuses a segment without a valid header, saying why', () => {
    expect(() => loadNative().createRingLink(new SharedArrayBuffer(8192))).toThrow(/no TRITIUM1 header/);
  });

  it('keeps a message that does not fit the scratch buffer until one does, and joins fragments', () => {
    const { ch, hdr, ringB } = bareChannel(4096);
    try {
      // Records as docs/ipc.md lays them out: a one-record message, then one in two fragments.
      let tail = 0;
      const put = (payload: Buffer, more: boolean): void => {
        ringB.setUint32(tail, ((more ? FRAG_MORE : 0) | payload.byteLength) >>> 0, true);
        new Uint8Array(ringB.buffer, ringB.byteOffset + tail + 4, payload.byteLength).set(payload);
        tail += recordSize(payload.byteLength);
      };
      const [single, first, last] = [pattern(1, 100), pattern(2, 300), pattern(3, 50)];
      put(single, false);
      put(first, true);
      put(last, false);
      hdr.set64(RING_B.tail, tail);

      const link = loadNative().createRingLink(hdr.sab);
      const small = Buffer.alloc(64);
      const big = Buffer.alloc(400);
      expect(link.hasData()).toBe(true);
      expect(link.receive(small)).toBe(100);
      expect(link.receive(small), 'the message is still there').toBe(100);
      expect(hdr.get64(RING_B.head)).toBe(0);
      expect(link.receive(big)).toBe(100);
      expect(big.subarray(0, 100)).toEqual(single);
      expect(link.receive(small)).toBe(350);
      expect(link.receive(big)).toBe(350);
      expect(big.subarray(0, 350)).toEqual(Buffer.concat([first, last]));
      expect(link.receive(big)).toBe(-1);
      expect(link.hasData()).toBe(false);
      expect(hdr.get64(RING_B.head), 'the space is handed back').toBe(tail);
    } finally {
      hdr.close();
      ch.close();
    }
  });

  it.each(CASES.corruption)('throws on a corrupt ring: $name', (c) => {
    const { ch, hdr, ringB } = bareChannel(c.ring);
    try {
      hdr.set64(RING_B.head, c.head);
      for (const [pos, word] of c.words) ringB.setUint32(pos, word, true);
      hdr.set64(RING_B.tail, c.tail);
      const link = loadNative().createRingLink(hdr.sab);
      expect(() => link.receive(Buffer.alloc(1024))).toThrow(/ring B is corrupt/);
    } finally {
      hdr.close();
      ch.close();
    }
  });
});

describe("Node's arena follows the allocator cases", () => {
  it.each(CASES.arena)('$name', (c) => {
    const a = loadNative().createArena(c.base, c.size, c.align);
    expect(
      runArenaOps(
        c,
        (n) => a.alloc(n),
        (off) => a.release(off),
      ),
    ).toEqual([]);
  });
});
