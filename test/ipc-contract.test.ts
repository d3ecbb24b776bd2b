/**
 * The contract of docs/ipc.md kept in one piece across its bindings.
 *
 * The shared-memory layout is declared once, in native/src/layout.h, and each binding exports
 * that table: Node's addon as `layout` (re-exported by `src/backends/python/ipc/shm-layout.ts`),
 * the stub's `_tritium_ipc` as module attributes (re-exported by `stub/tritium_stub/ipc.py`).
 * These tests check that both bindings hand out the whole table with the same values, that the
 * record constants match the conformance suite's reference (test/helpers/ipc-conformance.ts),
 * and that docs/ipc.md's header table puts every offset at its place.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { newRegionName } from '../src/backends/python/ipc/channel.js';
import { loadNative } from '../src/backends/python/ipc/native.js';
import * as L from '../src/backends/python/ipc/shm-layout.js';
import { FRAG_MORE, RECORD_ALIGN, WRAP_MARKER } from './helpers/ipc-conformance.js';
import { PYTHON, ROOT } from './helpers/server.js';

describe('shared-memory layout constants', () => {
  const table = loadNative().layout;

  it("Node's addon and the stub's extension export the same table from layout.h", () => {
    const code = [
      'import json, sys',
      `sys.path.insert(0, ${JSON.stringify(path.join(ROOT, 'stub'))})`,
      'from tritium_stub import ipc',
      'ext = ipc.load_native()[0]',
      'names = [n for n in dir(ext) if n.isupper()]',
      'out = {n: getattr(ext, n) for n in names}',
      'out["MAGIC"] = ext.MAGIC.decode()',
      'out["ipc.RING_A"] = list(ipc.RING_A); out["ipc.RING_B"] = list(ipc.RING_B)',
      'print(json.dumps(out))',
    ].join('\n');
    const r = spawnSync(PYTHON, ['-c', code], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const { 'ipc.RING_A': ringA, 'ipc.RING_B': ringB, ...py } = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(py).toEqual({ ...table });
    expect(Object.keys(table).length).toBeGreaterThan(25);
    const words = (o: L.RingOffsets) => [o.head, o.tail, o.doorbell, o.sleeping, o.producerWaiting];
    expect(ringA).toEqual(words(L.RING_A));
    expect(ringB).toEqual(words(L.RING_B));
  });

  it("the record constants are the conformance suite's, and the header's words do not overlap", () => {
    expect({ FRAG_MORE: table.FRAG_MORE, WRAP_MARKER: table.WRAP_MARKER, RECORD_ALIGN: table.RECORD_ALIGN }).toEqual({
      FRAG_MORE,
      WRAP_MARKER,
      RECORD_ALIGN,
    });
    // Each ring's hot words on cache lines of their own, inside the header.
    for (const r of [L.RING_A, L.RING_B]) {
      expect(new Set([r.head, r.tail, r.doorbell].map((o) => Math.floor(o / 64))).size).toBe(3);
      expect(r.producerWaiting + 4).toBeLessThanOrEqual(L.HEADER_SIZE);
    }
    expect(L.MAGIC).toBe('TRITIUM1');
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
