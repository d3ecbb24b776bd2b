/**
 * The hand-written `exec` encoder (src/backends/python/ipc/exec-encoder.ts) against the generic
 * one (codec.ts, msgpackr): the same value after decoding, on Node's decoder and on the stub's
 * (Python msgpack, and the stub's native decoder, native/src/py_unpack.h), for every field
 * messages.json declares, and at each msgpack width boundary.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { decode, encode } from '../src/backends/python/ipc/codec.js';
import { encodeExec } from '../src/backends/python/ipc/exec-encoder.js';
import type { ExecMsg, ExecRequestWire } from '../src/backends/python/ipc/messages.js';
import { python, ROOT } from './helpers/server.js';

function req(over: Partial<ExecRequestWire> = {}): ExecRequestWire {
  return {
    rid: 7,
    id: 'req-1',
    corr: 0,
    flags: 0,
    params: '{}',
    timeout: 0,
    outs: null,
    inputs: [
      ['INPUT0', 'FP32', [4], 'n0', 69632, 16],
      ['INPUT1', 'FP32', [4], 'n0', 69696, 16],
    ],
    cflag: ['n0', 69760],
    ...over,
  };
}

const long = (n: number, unit = 'x'): string => unit.repeat(n);

/** Messages that cover every field, optional ones absent and present, and the width boundaries. */
const SAMPLES: ExecMsg[] = [
  { t: 'exec', id: 1, reqs: [req()] },
  { t: 'exec', id: 2, reqs: [req()], rel: [['s0', 4096]] },
  { t: 'exec', id: 3, reqs: [req({ tr: 1, outs: ['OUTPUT0', 'OUTPUT1'], cflag: null })], rel: [] },
  // Optional fields left out entirely (a request of the generic path may lack them).
  { t: 'exec', id: 4, reqs: [{ rid: 1, id: '', timeout: 5, outs: [], inputs: [], cflag: null }] },
  // Correlation ids: small, 32-bit, 53-bit, beyond 2^53 (bigint, unsigned 64-bit), a string.
  {
    t: 'exec',
    id: 0x7fffffff,
    reqs: [
      req({ corr: 127, rid: 128 }),
      req({ corr: 255, rid: 256 }),
      req({ corr: 65535, rid: 65536 }),
      req({ corr: 2 ** 32 - 1, rid: 2 ** 32 }),
      req({ corr: Number.MAX_SAFE_INTEGER }),
      req({ corr: 2n ** 64n - 1n }),
      req({ corr: 2n ** 63n }),
      req({ corr: 'sequence-ä-01' }),
    ],
  },
  // Shapes: scalar, zero-size, large dims; negative ints (never sent today, still valid msgpack).
  {
    t: 'exec',
    id: 6,
    reqs: [
      req({
        inputs: [
          ['S', 'BYTES', [], 'n1', 0, 0],
          ['Z', 'FP32', [0, 3], 'n2', 2 ** 31, 0],
          ['L', 'UINT8', [2 ** 40, 1], 'n0', 64, 2 ** 33],
        ],
        flags: 3,
        timeout: -1,
      }),
      req({ timeout: -33, flags: -129 }),
      req({ timeout: -(2 ** 31) - 1 }),
    ],
  },
  // Strings at each header width (fixstr, str8, str16, str32), ASCII and not.
  {
    t: 'exec',
    id: 7,
    reqs: [
      req({ id: long(31) }),
      req({ id: long(32) }),
      req({ id: long(255) }),
      req({ id: long(256) }),
      req({ id: long(70_000) }),
      req({ id: long(10, 'é') }),
      req({ id: long(100, '€') }),
      req({ id: long(30_000, '€') }),
      req({ params: JSON.stringify({ custom: 'é'.repeat(40), n: 3 }) }),
      req({ outs: ['出力', long(40)] }),
    ],
  },
];

describe('exec encoder', () => {
  it('decodes on Node to what the generic encoder gives', () => {
    for (const m of SAMPLES) {
      const generic = decode(Uint8Array.prototype.slice.call(encode(m)));
      const hand = decode(Uint8Array.prototype.slice.call(encodeExec(m)));
      expect(hand).toEqual(generic);
    }
  });

  it('leaves a value of an undeclared type to the generic encoder, as before it existed', () => {
    const odd = [
      { t: 'exec', id: 1, reqs: [req({ id: undefined as unknown as string })] },
      { t: 'exec', id: 2, reqs: [req({ corr: { x: 1 } as unknown as string })] },
      { t: 'exec', id: 3, reqs: [req({ timeout: 5n as unknown as number })] },
      { t: 'exec', id: 4, reqs: [req({ inputs: [['A', 'FP32', [1.5 as number], 'n0', 0, 4]] })] },
      // An integral number past 64 bits: no msgpack integer holds it (msgpackr writes a float).
      { t: 'exec', id: 5, reqs: [req({ inputs: [['B', 'FP32', [2 ** 70, -(2 ** 70)], 'n0', 0, 4]] })] },
    ] as ExecMsg[];
    for (const m of odd) {
      const generic = decode(Uint8Array.prototype.slice.call(encode(m)));
      expect(decode(Uint8Array.prototype.slice.call(encodeExec(m)))).toEqual(generic);
    }
    // And the next ordinary message is written by hand again, from the start of its buffer.
    const m = SAMPLES[1]!;
    expect(decode(Uint8Array.prototype.slice.call(encodeExec(m)))).toEqual(decode(Uint8Array.prototype.slice.call(encode(m))));
  });

  it('writes every field messages.json declares for exec and its requests', () => {
    const json = JSON.parse(fs.readFileSync(path.join(ROOT, 'src/backends/python/ipc/messages.json'), 'utf8'));
    const names = (fields: Record<string, unknown>): string[] => Object.keys(fields).map((k) => k.replace(/\?$/, ''));
    const full: ExecMsg = { t: 'exec', id: 9, reqs: [req({ tr: 1 })], rel: [['s1', 128]] };
    const got = decode(Uint8Array.prototype.slice.call(encodeExec(full))) as Record<string, unknown>;
    expect(Object.keys(got).sort()).toEqual(['t', ...names(json.nodeToStub.messages.exec.fields)].sort());
    const r = (got.reqs as Array<Record<string, unknown>>)[0]!;
    expect(Object.keys(r).sort()).toEqual(names(json.structs.ExecRequestWire.fields).sort());
  });

  it("decodes in the stub's msgpack, and in its own decoder (_tritium_ipc.unpack), to what the generic encoder gives", () => {
    const pairs = SAMPLES.map((m) => [Buffer.from(encode(m)).toString('hex'), Buffer.from(encodeExec(m)).toString('hex')]);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'exec-encoder-')), 'pairs.json');
    fs.writeFileSync(file, JSON.stringify(pairs));
    const out = python(
      [
        'import json, os, sys, msgpack',
        'sys.path.insert(0, os.environ["STUB"])',
        'from tritium_stub.ipc import load_native',
        'native, why = load_native()',
        'assert native is not None, why',
        'pairs = json.load(open(os.environ["PAIRS"]))',
        'for g, h in pairs:',
        '    a = msgpack.unpackb(bytes.fromhex(g), raw=False)',
        '    b = msgpack.unpackb(bytes.fromhex(h), raw=False)',
        '    assert a == b, (a, b)',
        // Decoded natively, not left to msgpack: this is every exec the stub reads.
        '    for x in (g, h):',
        '        assert native.unpack(bytes.fromhex(x)) == a',
        'print("ok", len(pairs))',
      ].join('\n'),
      { PAIRS: file, STUB: path.join(ROOT, 'stub') },
    );
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
    expect(out.trim()).toBe(`ok ${SAMPLES.length}`);
  });
});
