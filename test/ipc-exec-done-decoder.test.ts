/**
 * The hand-written `exec_done` reader (src/backends/python/ipc/exec-done-decoder.ts) against the
 * generic one (codec.ts, msgpackr), on bytes the stub's own msgpack (Python, `Packer(use_bin_type=True)`,
 * as stub/tritium_stub/ipc.py packs) wrote: the same value wherever the hand-written reader
 * answers, and no answer (the generic reader's turn) for other messages and unusual shapes.
 */
import { describe, expect, it } from 'vitest';
import { decode } from '../src/backends/python/ipc/codec.js';
import { decodeExecDone } from '../src/backends/python/ipc/exec-done-decoder.js';
import { python } from './helpers/server.js';

/** Python literals of messages, each packed by the stub's msgpack; `usual` ones must be read by hand. */
const USUAL = [
  `{"t": "exec_done", "id": 1, "resps": [{"outs": [["OUTPUT0", "FP32", [1, 4], "n0", 69632, 16], ["OUTPUT1", "FP32", [1, 4], "n0", 69696, 16]]}]}`,
  `{"t": "exec_done", "resps": [{"outs": [["OUTPUT1", "FP32", [1, 4], "n1", 69696, 16], ["OUTPUT0", "INT32", [1, 4], "n0", 69632, 16]]}], "id": 1}`,
  `{"t": "exec_done", "id": 2, "resps": [{"outs": [["OUTPUT0", "FP32", [1, 4], "n0", 69632, 16]]}, None, {"outs": [], "err": [13, "bad input"]}]}`,
  `{"t": "exec_done", "id": 3, "resps": [{"outs": [["OUT", "BYTES", [0], "s1", 2**32 + 8, 0]], "params": '{"k": 1}'}]}`,
  `{"t": "exec_done", "id": 4, "err": "Failed to process the request(s) for model 'm', message: boom", "resps": []}`,
  `{"t": "exec_done", "id": 5, "resps": [{}, {}], "resched": [0, 1]}`,
  `{"t": "exec_done", "id": 2**31 + 5, "resps": [{"outs": [["ÖUT", "FP32", [3, 2**16, 2**33], "n0", 2**53 - 1, 255]]}]}`,
  `{"t": "exec_done", "id": 6, "resps": [{"outs": [["x" * 40, "FP32", [-1, 1], "n" * 300, 128, 65536]]}]}`,
  `{"t": "exec_done", "id": 7, "resps": [{"outs": [["OUTPUT0", "FP32", [1], "n0", 0, 4]] * 20}] * 20}`,
  `{"t": "exec_done", "id": 8, "resps": [{"outs": [["OUTPUT0", "FP32", [1], "n0", 0, 4]]}], "err": "ünïcödé " * 10}`,
  `{"t": "exec_done", "id": 9}`,
  // Inline outputs (docs/ipc.md): bin8, bin16 and bin32 data, empty, mixed with block ones.
  `{"t": "exec_done", "id": 10, "resps": [{"outs": [["OUTPUT0", "FP32", [4], bytes(range(16))], ["OUTPUT1", "FP32", [1, 4], "n0", 64, 16]]}]}`,
  `{"t": "exec_done", "id": 11, "resps": [{"outs": [["E", "INT64", [0], b""], ["S", "BYTES", [1], b"\\x02\\x00\\x00\\x00xy"]]}, {"outs": [["B", "UINT8", [300], bytes(300)]]}]}`,
  `{"t": "exec_done", "id": 12, "resps": [{"outs": [["BIG", "UINT8", [70000], b"\\x07" * 70000]]}]}`,
  // The stub's own time (ns) after the responses, as runtime.py sends it: a fixint, a uint32, a uint64.
  `{"t": "exec_done", "id": 1, "resps": [{"outs": [["OUTPUT0", "FP32", [1, 4], "n0", 69632, 16]]}], "ns": 100}`,
  `{"t": "exec_done", "id": 1, "resps": [{"outs": [["OUTPUT0", "FP32", [1, 4], "n0", 69632, 16]]}], "ns": 18532}`,
  `{"t": "exec_done", "id": 1, "err": "boom", "resps": [], "ns": 2**33}`,
];
const OTHER = [
  `{"t": "send", "rid": 1, "flags": 0, "resp": None}`,
  `{"t": "log", "level": "INFO", "msg": "exec_done"}`,
  `{"id": 1, "t": "exec_done", "resps": []}`,
  `{"t": "exec_done", "id": 1, "resps": [], "later": True}`,
  `{"t": "exec_done", "id": 2**60, "resps": []}`,
  `{"t": "exec_done", "id": 1.5, "resps": []}`,
  `{"t": "exec_done", "id": 1, "resps": [{"outs": [["O", "FP32", [1], "n0", 0]]}]}`,
  `{"t": "exec_done", "id": 1, "resps": [{"outs": [["O", "FP32", [-2**40], "n0", 0, 4]]}]}`,
  `{"t": "exec_done", "resps": []}`,
  `{"t": "exec_done", "id": 1, "resps": [{"outs": [["O", "FP32", [1], "n0"]]}]}`,
];

function packed(literals: string[]): Buffer[] {
  const out = python(`
import msgpack, sys
packer = msgpack.Packer(use_bin_type=True)
for m in [${literals.join(',\n')}]:
    print(packer.pack(m).hex())
`);
  return out
    .trim()
    .split('\n')
    .map((h) => Buffer.from(h, 'hex'));
}

describe('exec_done read by hand', () => {
  it('reads what the stub writes as msgpackr does', () => {
    const all = packed(USUAL);
    expect(all).toHaveLength(USUAL.length);
    // Twice: the second pass reads names that equal the last ones at their places.
    for (let pass = 0; pass < 2; pass++) {
      all.forEach((bytes, i) => {
        const mine = decodeExecDone(bytes, bytes.length);
        expect(mine, USUAL[i]).toBeDefined();
        expect(mine).toEqual(decode(bytes));
      });
    }
  });

  it('reads only its bytes when the buffer holds more (the ring scratch buffer is reused)', () => {
    const [a, b] = packed([USUAL[0]!, USUAL[5]!]);
    const scratch = Buffer.alloc(4096, 0xee);
    b!.copy(scratch);
    expect(decodeExecDone(scratch, b!.length)).toEqual(decode(b!));
    a!.copy(scratch);
    expect(decodeExecDone(scratch, a!.length)).toEqual(decode(a!));
    // Cut short: not an exec_done this reader answers for.
    expect(decodeExecDone(scratch, a!.length - 3)).toBeUndefined();
  });

  it("copies inline outputs out of the ring's bytes", () => {
    const [m] = packed([USUAL[11]!]);
    const scratch = Buffer.from(m!);
    const read = decodeExecDone(scratch, scratch.length);
    const data = read?.resps?.[0]?.outs?.[0]?.[3];
    expect(Buffer.isBuffer(data)).toBe(true);
    expect(data).toEqual(Buffer.from(Array.from({ length: 16 }, (_, i) => i)));
    scratch.fill(0xee); // the ring reuses its bytes once the message is read
    expect(data).toEqual(Buffer.from(Array.from({ length: 16 }, (_, i) => i)));
  });

  it('leaves other messages and unusual shapes to the generic reader', () => {
    const all = packed(OTHER);
    expect(all).toHaveLength(OTHER.length);
    all.forEach((bytes, i) => {
      expect(decodeExecDone(bytes, bytes.length), OTHER[i]).toBeUndefined();
      expect(() => decode(bytes)).not.toThrow();
    });
  });

  it('refuses a list longer than the bytes that follow it before making an array of that length', () => {
    // {t: 'exec_done', id: 1, resps: <array32 of 2^32 - 1 items>} with nothing after the count.
    const head = Buffer.from([0x83, 0xa1, 0x74, 0xa9, ...Buffer.from('exec_done'), 0xa2, 0x69, 0x64, 0x01, 0xa5, ...Buffer.from('resps')]);
    const huge = Buffer.concat([head, Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff])]);
    expect(decodeExecDone(huge, huge.length)).toBeUndefined();
    // The same message with the one response it announces is read.
    const one = Buffer.concat([head, Buffer.from([0x91, 0xc0])]);
    expect(decodeExecDone(one, one.length)).toEqual({ t: 'exec_done', id: 1, resps: [null] });
  });
});
