/**
 * Node <-> Python shared-memory IPC (docs/ipc.md) with real segments (memfds passed between the
 * processes, and /dev/shm files, the fallback) and a real Python peer (fixtures/ipc_echo_peer.py
 * over stub/tritium_stub/ipc.py). No timing assertions.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { segmentBacking, type SegmentBacking } from '../src/backends/python/ipc/backing.js';
import { StubChannel, newRegionName } from '../src/backends/python/ipc/channel.js';
import { loadNative } from '../src/backends/python/ipc/native.js';
import { listRegionFiles, removeStaleFiles } from '../src/backends/python/ipc/shm-cleanup.js';
import { mappedMemfdsOf, memfdsOf } from './helpers/memfd.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const python = path.resolve(root, process.env.TRITIUM_PYTHON ?? '.venv/bin/python');
const echoStub = path.join(root, 'fixtures', 'ipc_echo_peer.py');
const MiB = 1 << 20;

interface Peer {
  ch: StubChannel<EchoMessage, EchoMessage>;
  child: ChildProcess;
  /** Resolves with the next message matching `pred` (messages before it are dropped). */
  next(pred?: (m: any) => boolean): Promise<any>;
  /** Resolves with the next `n` messages of type `t`, in arrival order. */
  collect(t: string, n: number): Promise<any[]>;
}

/** A message of the echo peer's test protocol: any map with a type. */
type EchoMessage = { t: string; [field: string]: unknown };

const open: Peer[] = [];
/** Where the peers' segments live: the suite runs with memfds and with /dev/shm files. */
let backing: SegmentBacking = 'memfd';

async function startPeer(opts: { ringByteSize?: number; defaultByteSize?: number; growthByteSize?: number; env?: NodeJS.ProcessEnv } = {}): Promise<Peer> {
  const growth = opts.growthByteSize ?? MiB;
  // The echo peer speaks its own test protocol (fixtures/ipc_echo_peer.py), not the stub's.
  const ch = StubChannel.create<EchoMessage, EchoMessage>({
    region: newRegionName('test'),
    defaultByteSize: opts.defaultByteSize ?? MiB,
    growthByteSize: growth,
    ...(opts.ringByteSize ? { ringByteSize: opts.ringByteSize } : {}),
    backing,
  });
  const child = spawn(python, [echoStub, ch.region, String(growth)], {
    // With memfd segments, n0 and the segment socket follow the wake eventfd (docs/ipc.md, "Segments").
    stdio: ['ignore', 'inherit', 'inherit', ch.wakeFd, ...(ch.segmentFds ?? [])],
    env: {
      ...process.env,
      ...opts.env,
      TRITIUM_STUB_WAKE_FD: '3',
      TRITIUM_STUB_SEGMENT_FDS: ch.segmentFds ? '4,5' : undefined,
    },
  });
  ch.stubSpawned();
  const inbox: any[] = [];
  let waiter: (() => void) | undefined;
  ch.onMessage((m) => {
    inbox.push(m);
    waiter?.();
  });
  const take = async (pred: (m: any) => boolean): Promise<any> => {
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
    child,
    next: (pred = () => true) => take(pred),
    collect: async (t, n) => {
      const out: any[] = [];
      while (out.length < n) out.push(await take((m) => m.t === t));
      return out;
    },
  };
  open.push(peer);
  const hello = await peer.next();
  expect(hello).toEqual({ t: 'hello', pid: child.pid });
  expect(ch.stubPid()).toBe(child.pid);
  return peer;
}

async function stopPeer(p: Peer): Promise<void> {
  if (p.child.exitCode === null && p.child.signalCode === null) {
    const exited = new Promise((res) => p.child.once('exit', res));
    p.ch.send({ t: 'fin' });
    await p.next((m) => m.t === 'fin_done');
    await exited;
  }
  p.ch.close();
}

afterEach(async () => {
  for (const p of open.splice(0)) {
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
    p.ch.close();
  }
});

const pattern = (n: number, seed: number) => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
};
const byteSum = (b: Uint8Array) => b.reduce((a, x) => (a + x) >>> 0, 0);

/** Bytes the pages of a segment really hold: its /dev/shm file, or its memfd in the process that created it. */
function held(p: Peer, seg: string): number {
  const label = `${p.ch.region}.${seg}`;
  if (p.ch.backing === 'dev-shm') return fs.statSync(`/dev/shm/${label}`).blocks * 512;
  return memfdsOf(seg.startsWith('n') ? process.pid : p.child.pid!, label).get(label) ?? -1;
}

// memfds where this host allows them (backing.ts); /dev/shm files everywhere.
const BACKINGS: SegmentBacking[] = ['memfd', 'dev-shm'];

describe.each(BACKINGS.filter((b) => b === 'dev-shm' || segmentBacking() === 'memfd'))('StubChannel <-> tritium_stub.ipc.Channel (%s segments)', (segments) => {
  beforeAll(() => {
    backing = segments;
  });

  it('carries pending output releases on the next exec, or sends them alone when idle', async () => {
    const p = await startPeer();
    const outs: any[] = [];
    for (let i = 0; i < 3; i++) {
      p.ch.send({ t: 'write', n: 100 });
      outs.push(await p.next((m) => m.t === 'write_ok'));
    }
    p.ch.releaseOutputs([[outs[0].seg, outs[0].off]]);
    p.ch.send({ t: 'exec', id: 7, reqs: [] });
    expect(await p.next((m) => m.t === 'exec_done')).toEqual({ t: 'exec_done', id: 7, resps: [], freed: 1 });
    // No exec follows: the idle timer sends a plain release.
    p.ch.releaseOutputs([
      [outs[1].seg, outs[1].off],
      [outs[2].seg, outs[2].off],
    ]);
    expect(await p.next((m) => m.t === 'released')).toEqual({ t: 'released', n: 2 });
    await stopPeer(p);
  });

  it('delivers messages in order both ways, with msgpack types intact', async () => {
    const p = await startPeer();
    for (let i = 0; i < 2000; i++) p.ch.send({ t: 'echo', i, s: `m${i}`, b: Buffer.from([i & 0xff, 1, 2]), big: 2 ** 40 + i, f: 0.5 });
    const got = await p.collect('echo', 2000);
    got.forEach((m, i) => {
      expect(m.i).toBe(i);
      expect(m.s).toBe(`m${i}`);
      expect(Buffer.from(m.b)).toEqual(Buffer.from([i & 0xff, 1, 2]));
      expect(m.big).toBe(2 ** 40 + i);
      expect(m.f).toBe(0.5);
    });
    p.ch.send({ t: 'exec', id: 7, reqs: [] });
    expect(await p.next()).toEqual({ t: 'exec_done', id: 7, resps: [] });
    await stopPeer(p);
  });

  it('wraps small rings with many messages of varied size, fragmenting the big ones', async () => {
    const p = await startPeer({ ringByteSize: 4096 });
    // Node -> stub -> Node: sizes up to 3x the ring, so wrap markers and fragments both occur.
    const sizes = Array.from({ length: 1500 }, (_, i) => (i * 97) % 12000);
    for (const [i, n] of sizes.entries()) p.ch.send({ t: 'echo', i, pad: pattern(n, i) });
    const got = await p.collect('echo', sizes.length);
    got.forEach((m, i) => {
      expect(m.i).toBe(i);
      expect(Buffer.from(m.pad).equals(pattern(sizes[i]!, i))).toBe(true);
    });
    // Stub -> Node burst: the stub blocks on a full ring B until the event loop drains it.
    p.ch.send({ t: 'burst', n: 3000, max: 5000 });
    const burst = await p.collect('b', 3000);
    burst.forEach((m, i) => {
      expect(m.i).toBe(i);
      expect(m.pad.length).toBe((i * 37) % 5000);
    });
    await stopPeer(p);
  });

  it('delivers answers the stub published while the loop was busy, which woke nobody', async () => {
    // Node asks for a wake-up (ring B's `sleeping` word) only when its loop is about to block
    // (docs/ipc.md, "Waking Node"). Each echo's handler sends the next one and then keeps the
    // loop busy until the stub has answered: in the check phase, after the wake-up's callback,
    // the word is down, so the stub publishes without writing the eventfd, and only the look
    // before the loop sleeps can find the answer. A lost answer hangs this test.
    const p = await startPeer();
    const rings = (p.ch as unknown as { rings: { hasData(): boolean } }).rings;
    const got: number[] = [];
    let sent = 1;
    const done = new Promise<void>((resolve) => {
      p.ch.onMessage((m) => {
        if (m.t !== 'echo') return;
        got.push(m.i as number);
        if (got.length === 50) return resolve();
        p.ch.send({ t: 'echo', i: sent++ });
        setImmediate(() => {
          // Busy until the answer is in ring B, unless it was delivered already; bounded, so
          // that a lost answer fails the test instead of blocking its loop.
          const until = Date.now() + 10_000;
          while (got.length < sent && !rings.hasData() && Date.now() < until) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
        });
      });
    });
    p.ch.send({ t: 'echo', i: 0 });
    await done;
    expect(got).toEqual(Array.from({ length: 50 }, (_, i) => i));
    await stopPeer(p);
  });

  it('queues on a full ring A instead of throwing, and flushes when the stub catches up', async () => {
    const p = await startPeer({ ringByteSize: 4096 });
    p.ch.send({ t: 'sleep', s: 0.3 }); // the stub stops reading ring A for a while
    // ~100 KiB into a 4 KiB ring, all synchronously: must not throw.
    for (let i = 0; i < 500; i++) p.ch.send({ t: 'echo', i, pad: pattern(200, i) });
    await p.next((m) => m.t === 'slept');
    const got = await p.collect('echo', 500);
    got.forEach((m, i) => expect(m.i).toBe(i));
    await stopPeer(p);
  });

  it('shares tensor data both ways, growing to n1 and s1, and reuses freed blocks', async () => {
    const p = await startPeer({ defaultByteSize: MiB, growthByteSize: MiB });
    // Node -> stub, in n0's arena.
    const a = p.ch.allocInput(100_000);
    expect(a.seg).toBe('n0');
    a.view.set(pattern(100_000, 1));
    p.ch.send({ t: 'read', seg: a.seg, off: a.off, n: 100_000 });
    let r = await p.next((m) => m.t === 'read_ok');
    expect(r.sum).toBe(byteSum(pattern(100_000, 1)));
    expect(Buffer.from(r.head)).toEqual(pattern(16, 1));
    // Larger than what is left of n0: the arena grows with segment n1.
    const big = p.ch.allocInput(900_000);
    expect(big.seg).toBe('n1');
    big.view.set(pattern(900_000, 2));
    p.ch.send({ t: 'read', seg: big.seg, off: big.off, n: 900_000 });
    r = await p.next((m) => m.t === 'read_ok');
    expect(r.sum).toBe(byteSum(pattern(900_000, 2)));
    const before = p.ch.bytesInUse();
    expect(before).toBeGreaterThanOrEqual(2 * MiB);
    // Input free + reuse (first fit returns the same block).
    p.ch.freeInput(a.seg, a.off);
    const again = p.ch.allocInput(100_000);
    expect([again.seg, again.off]).toEqual([a.seg, a.off]);
    expect(() => p.ch.freeInput('n0', 12345)).toThrow(/unknown block/);

    // Stub -> Node: two 700 KB outputs with 1 MiB growth -> segments s0 then s1.
    const expectOut = (n: number) => {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = (i * 7) & 0xff;
      return b;
    };
    const outs: any[] = [];
    for (const expectedSeg of ['s0', 's1']) {
      p.ch.send({ t: 'write', n: 700_000 });
      const seg = await p.next((m) => m.t === 'seg');
      expect(seg).toEqual({ t: 'seg', name: expectedSeg, size: MiB });
      const w = await p.next((m) => m.t === 'write_ok');
      expect(w.seg).toBe(expectedSeg);
      const v = p.ch.view(w.seg, w.off, w.n); // mapped lazily here
      expect(v.equals(expectOut(700_000))).toBe(true);
      outs.push(w);
    }
    expect(p.ch.bytesInUse()).toBe(before + 2 * MiB);
    // Release s1's block; the next output of that size lands in the same place.
    p.ch.releaseOutputs([[outs[1].seg, outs[1].off]]);
    expect(await p.next((m) => m.t === 'released')).toEqual({ t: 'released', n: 1 });
    p.ch.send({ t: 'write', n: 700_000 });
    const w = await p.next((m) => m.t === 'write_ok' || m.t === 'seg');
    expect([w.t, w.seg, w.off]).toEqual(['write_ok', outs[1].seg, outs[1].off]);
    await stopPeer(p);
  });

  it('hollows a grown segment when its last block is freed, on both sides, and reuses it', async () => {
    const p = await startPeer({ defaultByteSize: MiB, growthByteSize: MiB });
    const n = 3 * MiB;
    // Node's side: a 3 MiB input grows n1 (larger than the growth size).
    const big = p.ch.allocInput(n);
    expect(big.seg).toBe('n1');
    big.view.set(pattern(n, 3));
    expect(held(p, 'n1')).toBeGreaterThanOrEqual(n);
    p.ch.freeInput(big.seg, big.off);
    expect(held(p, 'n1')).toBe(0); // the pages went back to /dev/shm
    const again = p.ch.allocInput(n);
    expect([again.seg, again.off]).toEqual([big.seg, big.off]);
    expect(held(p, 'n1')).toBeGreaterThanOrEqual(n); // reserved again before use
    again.view.set(pattern(n, 4));
    p.ch.send({ t: 'read', seg: again.seg, off: again.off, n });
    expect((await p.next((m) => m.t === 'read_ok')).sum).toBe(byteSum(pattern(n, 4)));

    // The stub's side: a 3 MiB output grows s0; released, its pages go; the next lands there.
    const expected = Buffer.alloc(n);
    for (let i = 0; i < n; i++) expected[i] = (i * 7) & 0xff;
    p.ch.send({ t: 'write', n });
    expect(await p.next((m) => m.t === 'seg')).toEqual({ t: 'seg', name: 's0', size: n });
    const w = await p.next((m) => m.t === 'write_ok');
    expect(held(p, 's0')).toBeGreaterThanOrEqual(n);
    p.ch.releaseOutputs([[w.seg, w.off]]);
    expect(await p.next((m) => m.t === 'released')).toEqual({ t: 'released', n: 1 });
    expect(held(p, 's0')).toBe(0);
    p.ch.send({ t: 'write', n });
    const w2 = await p.next((m) => m.t === 'write_ok' || m.t === 'seg');
    expect([w2.t, w2.seg, w2.off]).toEqual(['write_ok', w.seg, w.off]);
    expect(p.ch.view(w2.seg, w2.off, n).equals(expected)).toBe(true);
    await stopPeer(p);
  });

  it.runIf(segments === 'dev-shm')('reports a full /dev/shm with the bytes needed and the flag to change', async () => {
    const p = await startPeer();
    const st = fs.statfsSync('/dev/shm');
    const tooBig = (st.blocks + 1) * st.bsize; // more than the whole filesystem: fails up front
    expect(() => p.ch.allocInput(tooBig)).toThrow(/\/dev\/shm is full.*shm-default-byte-size/);
    expect(listRegionFiles(p.ch.region)).toEqual([`${p.ch.region}.n0`]); // nothing half-created
    await stopPeer(p);
  });

  it.runIf(segments === 'memfd')('refuses a segment larger than the memory available, saying that memory is the limit, not /dev/shm', async () => {
    const p = await startPeer();
    // More than the host has: the kernel would OOM-kill rather than fail it, so it must not be tried.
    const tooBig = 2 * os.totalmem();
    let err: (Error & { code?: string }) | undefined;
    try {
      p.ch.allocInput(tooBig);
    } catch (e) {
      err = e as Error & { code?: string };
    }
    expect(err?.code).toBe('ENOMEM');
    expect(err?.message).toMatch(
      new RegExp(
        `^out of memory for shared memory: cannot create \\d+-byte segment ${p.ch.region}\\.n1 for ${tooBig} bytes of tensor data ` +
          '\\(more than the \\d+ bytes available\\)\\. Tensors travel in memfd segments, which are charged to the memory of the server ' +
          'and its stubs \\(their memory cgroup\\), not to /dev/shm: ',
      ),
    );
    expect(err?.message).toMatch(/This server holds \d+ bytes of them: \d+ in the n0 segments of its \d+ Python instances/);
    expect(err?.message).toContain('Raise the memory limit of the container');
    expect(err?.message).toContain('shm-default-byte-size');
    expect(err?.message).not.toContain('--shm-size');
    expect([...memfdsOf(process.pid, `${p.ch.region}.`).keys()]).toEqual([`${p.ch.region}.n0`]); // nothing half-created
    // The instance goes on: the next input fits.
    const ok = p.ch.allocInput(1000);
    ok.view.fill(5);
    p.ch.send({ t: 'read', seg: ok.seg, off: ok.off, n: 1000 });
    expect((await p.next((m) => m.t === 'read_ok')).sum).toBe(5000);
    await stopPeer(p);
  });

  it.runIf(segments === 'memfd')('passes many new segments both ways while the peer is not reading', async () => {
    const growth = 1 << 16;
    const p = await startPeer({ defaultByteSize: MiB, growthByteSize: growth });
    // The stub stops reading ring A and its socket; Node grows 24 segments, one message each:
    // more datagrams than a SEQPACKET socket queues (10), so Node retries until the stub reads.
    p.ch.send({ t: 'sleep', s: 0.3 });
    const blocks = [];
    for (let i = 0; i < 24; i++) {
      const b = p.ch.allocInput(MiB + 1); // more than n0's arena: a segment each
      b.view.fill(i + 1);
      blocks.push(b);
      p.ch.send({ t: 'read', seg: b.seg, off: b.off, n: 16 });
    }
    expect(new Set(blocks.map((b) => b.seg)).size).toBe(24);
    const reads = await p.collect('read_ok', 24);
    expect(reads.map((r) => Buffer.from(r.head)[0])).toEqual(blocks.map((_, i) => i + 1));
    // Now the stub grows 24 output segments while Node's event loop is blocked: the stub waits
    // for room on the socket, which Node makes when it reads the `seg` messages.
    for (let i = 0; i < 24; i++) p.ch.send({ t: 'write', n: 40_000 });
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
    const writes = await p.collect('write_ok', 24);
    expect(new Set(writes.map((w) => w.seg)).size).toBe(24);
    for (const w of writes) expect(p.ch.view(w.seg, w.off, w.n).subarray(0, 3)).toEqual(Buffer.from([0, 7, 14]));
    await stopPeer(p);
  });

  it.runIf(segments === 'memfd')('maps the output segments of a stub that cannot create memfds from /dev/shm files', async () => {
    const p = await startPeer({ env: { ECHO_STUB_REFUSE_MEMFD: '1' } });
    p.ch.send({ t: 'write', n: 700_000 });
    expect(await p.next((m) => m.t === 'seg')).toEqual({ t: 'seg', name: 's0', size: MiB });
    const w = await p.next((m) => m.t === 'write_ok');
    expect(listRegionFiles(p.ch.region)).toEqual([`${p.ch.region}.s0`]);
    expect(p.ch.view(w.seg, w.off, 3)).toEqual(Buffer.from([0, 7, 14]));
    await stopPeer(p);
    expect(listRegionFiles(p.ch.region)).toEqual([]);
  });

  it('exposes the stub heartbeat', async () => {
    const p = await startPeer();
    expect(p.ch.heartbeatMs()).toBe(0);
    p.ch.send({ t: 'heartbeat', period: 0.01 });
    await p.next((m) => m.t === 'heartbeat_ok');
    const first = p.ch.heartbeatMs();
    expect(first).toBeGreaterThan(0);
    while (p.ch.heartbeatMs() === first) await new Promise((r) => setTimeout(r, 5));
    expect(p.ch.heartbeatMs()).toBeGreaterThan(first);
    await stopPeer(p);
  });

  it('close() drops every segment, including stub segments, and is idempotent', async () => {
    const p = await startPeer();
    const region = p.ch.region;
    p.ch.allocInput(2 * MiB); // n1
    p.ch.send({ t: 'write', n: 10 }); // s0, never mapped by Node
    await p.next((m) => m.t === 'write_ok');
    const names = (...segs: string[]) => segs.map((s) => `${region}.${s}`);
    if (segments === 'dev-shm') expect(listRegionFiles(region).sort()).toEqual(names('n0', 'n1', 's0'));
    else {
      // Nothing in /dev/shm: each side holds the memfds it made.
      expect(listRegionFiles(region)).toEqual([]);
      // Node holds its own and s0's descriptor, passed with `seg` although Node never mapped it.
      expect([...memfdsOf(process.pid, `${region}.`).keys()].sort()).toEqual(names('n0', 'n1', 's0'));
      // The stub: its s0, and n0 (Python's mmap keeps a descriptor of what it maps).
      expect([...memfdsOf(p.child.pid!, `${region}.`).keys()].sort()).toEqual(names('n0', 's0'));
    }
    await stopPeer(p);
    expect(listRegionFiles(region)).toEqual([]);
    expect(fs.readdirSync('/dev/shm').filter((f) => f.startsWith(`${region}.`))).toEqual([]);
    expect(memfdsOf(process.pid, `${region}.`).size).toBe(0);
    expect(mappedMemfdsOf(process.pid, `${region}.`).size).toBe(0);
    p.ch.close();
    expect(() => p.ch.send({ t: 'x' })).toThrow(/closed/);
  });
});

describe('shm cleanup', () => {
  it('removes tritium_<pid>_* files of dead processes only', () => {
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    expect(Number(dead)).toBeGreaterThan(0);
    const stale = `tritium_${dead}_deadbeef_model.n0`;
    const live = `tritium_${process.pid}_cafef00d_model.n0`;
    fs.writeFileSync(path.join('/dev/shm', stale), 'x');
    fs.writeFileSync(path.join('/dev/shm', live), 'x');
    try {
      const removed = removeStaleFiles();
      expect(removed).toContain(stale);
      expect(removed).not.toContain(live);
      expect(fs.existsSync(path.join('/dev/shm', stale))).toBe(false);
      expect(fs.existsSync(path.join('/dev/shm', live))).toBe(true);
    } finally {
      fs.rmSync(path.join('/dev/shm', stale), { force: true });
      fs.rmSync(path.join('/dev/shm', live), { force: true });
    }
  });
});

describe("Node's arena (createArena, over arena_core.h)", () => {
  it('allocates first-fit and coalesces on free', () => {
    const a = loadNative().createArena(0, 1024, 64);
    const x = a.alloc(100); // 128
    const y = a.alloc(64);
    const z = a.alloc(64);
    expect([x, y, z]).toEqual([0, 128, 192]);
    expect(a.alloc(2000)).toBe(-1);
    a.release(y);
    a.release(x); // merges with y's extent
    expect(a.alloc(192)).toBe(0);
    a.release(0);
    a.release(z); // everything free again: one extent
    expect(a.bytesFree()).toBe(1024);
    expect(a.alloc(1024)).toBe(0);
    expect(() => a.release(64)).toThrow(/unknown block/);
    expect(a.owns(0)).toBe(true);
    expect(a.blocksInUse()).toBe(1);
  });

  it('refuses arguments that are not whole, non-negative numbers, and a bad alignment', () => {
    const native = loadNative();
    const a = native.createArena(64, 4096, 64);
    for (const bad of [-1, 1.5, Number.NaN, '8', 2 ** 53]) {
      expect(() => a.alloc(bad as number), String(bad)).toThrow(TypeError);
      expect(() => a.release(bad as number), String(bad)).toThrow(TypeError);
    }
    expect(a.owns(-1)).toBe(false);
    expect(a.blocksInUse()).toBe(0);
    expect(() => native.createArena(0, 4096, 48)).toThrow(RangeError);
    expect(() => native.createArena(2 ** 52, 2 ** 52, 64)).toThrow(RangeError);
  });
});
