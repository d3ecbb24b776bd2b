/**
 * The contract of docs/ipc.md kept in one piece across its implementations.
 *
 * One shared-memory layout, four copies: `src/backends/python/ipc/shm-layout.ts` is the source
 * the others must match — the stub's constants (`stub/tritium_stub/ipc.py`), the C++
 * core both native bindings compile (`native/src/ring_core.h`), and the header table of
 * `docs/ipc.md`. The record format, which only the ring code needs, is matched against the
 * suite's reference (test/helpers/ipc-conformance.ts). A change to one of them without the
 * others fails here, before two processes disagree about where a ring's tail is.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { newRegionName } from '../src/backends/python/ipc/channel.js';
import * as L from '../src/backends/python/ipc/shm-layout.js';
import { FRAG_MORE, RECORD_ALIGN, WRAP_MARKER } from './helpers/ipc-conformance.js';
import { PYTHON, ROOT } from './helpers/server.js';

const CXX = process.env.CXX ?? 'g++';
const haveCxx = spawnSync(CXX, ['--version']).status === 0;

const ring = (o: L.RingOffsets): number[] => [o.head, o.tail, o.doorbell, o.sleeping, o.producerWaiting];

/** The constants every implementation shares, as shm-layout.ts (and for records, the reference) has them. */
const expected = {
  MAGIC: L.MAGIC,
  LAYOUT_VERSION: L.LAYOUT_VERSION,
  OFF_VERSION: L.OFF_VERSION,
  OFF_RING_CAPACITY: L.OFF_RING_CAPACITY,
  OFF_RING_A_DATA: L.OFF_RING_A_DATA,
  OFF_RING_B_DATA: L.OFF_RING_B_DATA,
  OFF_HEARTBEAT: L.OFF_HEARTBEAT,
  OFF_STUB_PID: L.OFF_STUB_PID,
  RING_A: ring(L.RING_A),
  RING_B: ring(L.RING_B),
  FRAG_MORE,
  WRAP_MARKER,
  RECORD_ALIGN,
};

describe('shared-memory layout constants', () => {
  it('the stub (ipc.py) has the same header offsets, ring offsets and record constants', () => {
    const code = [
      'import json, sys',
      `sys.path.insert(0, ${JSON.stringify(path.join(ROOT, 'stub'))})`,
      'from tritium_stub import ipc',
      'names = ["LAYOUT_VERSION","OFF_VERSION","OFF_HEADER_SIZE","OFF_RING_CAPACITY","OFF_RING_A_DATA","OFF_RING_B_DATA","OFF_HEARTBEAT","OFF_STUB_PID","FRAG_MORE","WRAP_MARKER","RECORD_ALIGN","BLOCK_ALIGN","HEADER_SIZE","MIN_RING_BYTES"]',
      'out = {n: getattr(ipc, n) for n in names}',
      'out["MAGIC"] = ipc.MAGIC.decode()',
      'out["RING_A"] = list(ipc.RING_A); out["RING_B"] = list(ipc.RING_B)',
      'print(json.dumps(out))',
    ].join('\n');
    const r = spawnSync(PYTHON, ['-c', code], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const py = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(py).toMatchObject({
      ...expected,
      OFF_HEADER_SIZE: L.OFF_HEADER_SIZE,
      BLOCK_ALIGN: L.BLOCK_ALIGN,
      HEADER_SIZE: L.HEADER_SIZE,
      MIN_RING_BYTES: L.MIN_RING_BYTES,
    });
  });

  it.skipIf(!haveCxx)('the C++ core (ring_core.h) has the same header offsets, ring offsets and record constants', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-layout-'));
    try {
      const exe = path.join(dir, 'layout_dump');
      const build = spawnSync(CXX, ['-std=c++17', `-I${path.join(ROOT, 'native', 'src')}`, path.join(ROOT, 'test', 'native', 'layout_dump.cc'), '-o', exe], {
        encoding: 'utf8',
      });
      expect(build.stderr).toBe('');
      const cxx = JSON.parse(spawnSync(exe, [], { encoding: 'utf8' }).stdout) as Record<string, unknown>;
      expect(cxx).toMatchObject({ ...expected, HEADER_SIZE: L.HEADER_SIZE, MIN_RING_BYTES: L.MIN_RING_BYTES });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("docs/ipc.md's control-header table lists every offset at its place", () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs', 'ipc.md'), 'utf8');
    const rows = new Map<number, string>();
    for (const m of doc.matchAll(/^\| (\d+) \| (\d+) \| (.+) \|$/gm)) rows.set(Number(m[1]), m[3]!);
    const expectRow = (offset: number, words: RegExp): void => {
      expect(rows.get(offset), `docs/ipc.md has no header row for offset ${offset}`).toMatch(words);
    };
    expectRow(L.OFF_MAGIC, /magic/);
    expectRow(L.OFF_VERSION, /layout version/);
    expectRow(L.OFF_HEADER_SIZE, /header size/);
    expectRow(L.OFF_RING_CAPACITY, /ring capacity/);
    expectRow(L.OFF_RING_A_DATA, /ring A .*data/);
    expectRow(L.OFF_RING_B_DATA, /ring B .*data/);
    expectRow(L.OFF_ARENA, /arena/);
    expectRow(L.OFF_ARENA_SIZE, /size of Node's arena/);
    expectRow(L.OFF_HEARTBEAT, /heartbeat/);
    expectRow(L.OFF_STUB_PID, /stub pid/);
    for (const [name, r] of [
      ['A', L.RING_A],
      ['B', L.RING_B],
    ] as const) {
      expectRow(r.head, new RegExp(`ring ${name} head`));
      expectRow(r.tail, new RegExp(`ring ${name} tail`));
      expectRow(r.doorbell, new RegExp(`ring ${name} doorbell`));
      expectRow(r.sleeping, new RegExp(`ring ${name} \`sleeping\``));
      expectRow(r.producerWaiting, new RegExp(`ring ${name} \`producer_waiting\``));
    }
  });
});

describe('region names', () => {
  it('are tritium_<server pid>_<8 hex>_<instance name>, with a safe alphabet, as docs/ipc.md says', () => {
    expect(newRegionName('add_sub_0_0')).toMatch(new RegExp(`^tritium_${process.pid}_[0-9a-f]{8}_add_sub_0_0$`));
    expect(newRegionName('my.model/../x y')).toMatch(new RegExp(`^tritium_${process.pid}_[0-9a-f]{8}_my_model____x_y$`));
    expect(newRegionName('m'.repeat(300)).length).toBeLessThan(140);
  });
});

describe('message types', () => {
  /** The `t` values of one union (or of the interfaces it names) in ipc/messages.ts. */
  function unionTypes(source: string, union: string): Set<string> {
    const start = source.indexOf(`export type ${union} =`);
    const body = source.slice(start, source.indexOf('\n\n', start));
    const out = new Set<string>();
    for (const m of body.matchAll(/t: '([a-z_]+)'/g)) out.add(m[1]!);
    for (const m of body.matchAll(/\|\s*([A-Z][A-Za-z]+Msg)/g)) {
      const decl = new RegExp(`export interface ${m[1]} \\{\\s*t: '([a-z_]+)'`).exec(source);
      if (decl) out.add(decl[1]!);
    }
    return out;
  }

  const messages = fs.readFileSync(path.join(ROOT, 'src', 'backends', 'python', 'ipc', 'messages.ts'), 'utf8');
  const stubDir = path.join(ROOT, 'stub', 'tritium_stub');
  const stubSource = fs
    .readdirSync(stubDir)
    .filter((f) => f.endsWith('.py'))
    .map((f) => fs.readFileSync(path.join(stubDir, f), 'utf8'))
    .join('\n');

  it('the stub sends exactly the StubToNode messages', () => {
    const sent = new Set([...stubSource.matchAll(/\{"t": "([a-z_]+)"/g)].map((m) => m[1]!));
    expect([...sent].sort()).toEqual([...unionTypes(messages, 'StubToNode')].sort());
  });

  it('the stub handles exactly the NodeToStub messages', () => {
    const runtime = fs.readFileSync(path.join(stubDir, 'runtime.py'), 'utf8');
    const handled = new Set([...runtime.matchAll(/(?:msg\["t"\]|kind) == "([a-z_]+)"/g)].map((m) => m[1]!));
    expect([...handled].sort()).toEqual([...unionTypes(messages, 'NodeToStub')].sort());
  });

  it('docs/ipc.md describes every message of both directions', () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs', 'ipc.md'), 'utf8');
    for (const t of [...unionTypes(messages, 'NodeToStub'), ...unionTypes(messages, 'StubToNode')]) {
      expect(doc, `docs/ipc.md does not mention message '${t}'`).toMatch(new RegExp(`\\b${t}\\b`));
    }
  });
});
