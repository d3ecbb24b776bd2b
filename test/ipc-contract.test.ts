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

describe('messages', () => {
  const spec = JSON.parse(fs.readFileSync(path.join(ROOT, 'src', 'backends', 'python', 'ipc', 'messages.json'), 'utf8')) as Record<
    'nodeToStub' | 'stubToNode',
    { messages: Record<string, unknown> }
  >;

  it("messages.ts and the stub's messages.py are what messages.json generates", () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'gen-ipc-messages.mjs'), '--check'], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('the stub sends only declared kinds with declared fields, and dispatches on exactly what Node sends', () => {
    const r = spawnSync(PYTHON, [path.join(ROOT, 'test', 'python', 'message_literals.py')], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual([]);
  });

  it('docs/ipc.md describes every message of both directions', () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs', 'ipc.md'), 'utf8');
    for (const t of [...Object.keys(spec.nodeToStub.messages), ...Object.keys(spec.stubToNode.messages)]) {
      expect(doc, `docs/ipc.md does not mention message '${t}'`).toMatch(new RegExp(`\\b${t}\\b`));
    }
  });
});
