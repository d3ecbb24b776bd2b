/**
 * The kept ModelInferRequest (src/frontends/grpc/repeated-request.ts): a message that repeats
 * its model's last but for its tensors' bytes is decoded from the kept decoding. Whatever the
 * route hands the handler must decode to exactly what `decodeInferRequest` makes of protobuf-es'
 * `fromBinary` of the same bytes, with fresh objects and the tensors views of the new message;
 * anything the memo cannot stand for goes the long way.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { elementSize } from '../../src/core/datatype.js';
import { DecodedInferRequest, decodeInferMessage, decodeInferRequest } from '../../src/frontends/grpc/infer-codec.js';
import { readInferMessage } from '../../src/frontends/grpc/repeated-request.js';
import { type InferParameter, ModelInferRequestSchema } from '../../src/generated/grpc_service_pb.js';

/** The fields these tests set, as protobuf-es' `create` takes them. */
interface Init {
  modelName?: string;
  modelVersion?: string;
  id?: string;
  parameters?: Record<string, { parameterChoice: InferParameter['parameterChoice'] }>;
  inputs?: { name: string; datatype: string; shape: bigint[] }[];
  outputs?: { name: string }[];
  rawInputContents?: Uint8Array[];
}

const encode = (init: Init): Buffer =>
  Buffer.from(toBinary(ModelInferRequestSchema, create(ModelInferRequestSchema, init as Parameters<typeof create<typeof ModelInferRequestSchema>>[1])));

/** What a handler gets from the route's decoding of `bytes`, as plain data. */
function decoded(bytes: Buffer) {
  const msg = readInferMessage(bytes) ?? fromBinary(ModelInferRequestSchema, bytes);
  return plain(decodeInferMessage(msg));
}

/** The reference: protobuf-es' message, then decodeInferRequest. */
function reference(bytes: Buffer) {
  return plain(decodeInferRequest(fromBinary(ModelInferRequestSchema, bytes)));
}

function plain(d: DecodedInferRequest) {
  const { request } = d;
  return {
    modelName: request.modelName,
    modelVersion: request.modelVersion,
    id: request.id,
    parameters: request.parameters,
    inputs: request.inputs.map((t) => ({ name: t.name, datatype: t.datatype, shape: t.shape, data: t.data.toString('hex'), shm: t.shm })),
    outputs: request.outputs?.map((o) => ({ name: o.name, parameters: o.parameters })),
    plan: { classification: d.plan.classification, labels: d.plan.labels },
    enableEmptyFinal: d.enableEmptyFinal,
  };
}

const ADD_SUB = (a: number, b: number): Init => ({
  modelName: 'add_sub',
  parameters: { triton_enable_empty_final_response: { parameterChoice: { case: 'boolParam', value: true } } },
  inputs: [
    { name: 'INPUT0', datatype: 'FP32', shape: [4n] },
    { name: 'INPUT1', datatype: 'FP32', shape: [4n] },
  ],
  outputs: [{ name: 'OUTPUT0' }, { name: 'OUTPUT1' }],
  rawInputContents: [new Uint8Array(new Float32Array(4).fill(a).buffer), new Uint8Array(new Float32Array(4).fill(b).buffer)],
});

/** Reads `bytes` until the memo answers (the third time at the latest); that answer. */
function kept(bytes: Buffer): DecodedInferRequest {
  readInferMessage(bytes);
  readInferMessage(bytes);
  const third = readInferMessage(bytes);
  expect(third).toBeInstanceOf(DecodedInferRequest);
  return third as DecodedInferRequest;
}

const name = fc.string({ unit: fc.constantFrom('a', 'b', 'Z', '_', '0', 'é'), minLength: 1, maxLength: 8 });
const datatype = fc.constantFrom('FP32', 'INT64', 'BOOL', 'UINT8', 'FP16', 'BYTES');
const input = fc.record({ name, datatype, shape: fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 3 }), seed: fc.nat({ max: 255 }) });
const message = fc.record({
  modelName: name,
  modelVersion: fc.constantFrom('', '1'),
  flag: fc.option(fc.boolean(), { nil: undefined }),
  custom: fc.option(fc.oneof(fc.integer(), name), { nil: undefined }),
  inputs: fc.array(input, { maxLength: 3 }),
  outputs: fc.array(name, { maxLength: 3 }),
});

/** A valid message of the generated form, its tensors' bytes filled from `fill`. */
function build(m: typeof message extends fc.Arbitrary<infer T> ? T : never, fill: number): Init {
  const parameters: NonNullable<Init['parameters']> = {};
  if (m.flag !== undefined) parameters['triton_enable_empty_final_response'] = { parameterChoice: { case: 'boolParam', value: m.flag } };
  if (m.custom !== undefined)
    parameters['custom'] = {
      parameterChoice: typeof m.custom === 'number' ? { case: 'int64Param', value: BigInt(m.custom) } : { case: 'stringParam', value: m.custom },
    };
  return {
    modelName: m.modelName,
    modelVersion: m.modelVersion,
    parameters,
    inputs: m.inputs.map((i) => ({ name: i.name, datatype: i.datatype, shape: i.shape.map(BigInt) })),
    outputs: m.outputs.map((o) => ({ name: o })),
    rawInputContents: m.inputs.map((i) => {
      const n = i.shape.reduce((a, b) => a * b, 1) * (elementSize(i.datatype as 'FP32') || 1);
      return Uint8Array.from({ length: n }, (_, k) => (i.seed + fill + k) & 255);
    }),
  };
}

describe('the kept ModelInferRequest', () => {
  it('decodes every repeat of a message exactly as decodeInferRequest of fromBinary does', () => {
    fc.assert(
      fc.property(message, fc.nat({ max: 200 }), (m, fill) => {
        const first = encode(build(m, 0));
        // The form seen twice is kept; a repeat with other tensor bytes is built from it.
        expect(decoded(first)).toEqual(reference(first));
        expect(decoded(first)).toEqual(reference(first));
        const next = encode(build(m, fill + 1));
        const fromMemo = readInferMessage(next);
        expect(fromMemo).toBeInstanceOf(DecodedInferRequest);
        expect(plain(fromMemo as DecodedInferRequest)).toEqual(reference(next));
      }),
      { numRuns: 300 },
    );
  });

  it('gives the tensors as views of the new message and fresh objects every time', () => {
    const a = encode(ADD_SUB(1, 2));
    const one = kept(a);
    const b = encode(ADD_SUB(5, 7));
    const two = readInferMessage(b) as DecodedInferRequest;
    expect(two.request.inputs[0]!.data.buffer).toBe(b.buffer);
    expect(
      Array.from(
        new Float32Array(two.request.inputs[1]!.data.buffer.slice(two.request.inputs[1]!.data.byteOffset, two.request.inputs[1]!.data.byteOffset + 16)),
      ),
    ).toEqual([7, 7, 7, 7]);
    // What the core may change on one request is not the next one's.
    one.request.parameters['changed'] = 1;
    one.request.inputs[0]!.shape[0] = 99;
    one.request.outputs![0]!.parameters['binary_data'] = true;
    one.request.outputs!.pop();
    const three = readInferMessage(b) as DecodedInferRequest;
    expect(three).not.toBe(two);
    expect(plain(three)).toEqual(reference(b));
    expect(three.request).not.toBe(two.request);
    expect(three.request.inputs).not.toBe(two.request.inputs);
  });

  it('answers for the model, version and id of the message it stands for', () => {
    const d = kept(encode({ ...ADD_SUB(1, 1), modelVersion: '1' }));
    expect([d.modelName, d.modelVersion, d.id]).toEqual(['add_sub', '1', '']);
  });

  it('reads a message that differs in anything but its tensor bytes the long way', () => {
    const base = ADD_SUB(1, 2);
    kept(encode(base));
    const variants: Init[] = [
      { ...base, modelVersion: '2' },
      { ...base, inputs: [base.inputs![0]!, { name: 'INPUT1', datatype: 'FP32', shape: [2n, 2n] }] },
      { ...base, outputs: [{ name: 'OUTPUT1' }] },
      { ...base, parameters: {} },
      { ...base, id: 'r1' },
      { ...base, rawInputContents: [base.rawInputContents![0]!, new Uint8Array(8)] }, // refused: byte size
      { ...base, modelName: 'add_sum' },
    ];
    for (const v of variants) {
      const bytes = encode(v);
      let want: unknown;
      try {
        want = reference(bytes);
      } catch (err) {
        want = err;
      }
      for (let i = 0; i < 3; i++) {
        if (want instanceof Error) {
          // A refused message reaches the handler undecoded, which then refuses it in its order.
          const msg = readInferMessage(bytes)!;
          expect(msg).not.toBeInstanceOf(DecodedInferRequest);
          expect(() => decodeInferMessage(msg)).toThrow(want.message);
        } else {
          expect(decoded(bytes)).toEqual(want);
        }
      }
      // Back to the first form, which the variant seen three times may have replaced in the memo.
      for (let i = 0; i < 3; i++) expect(decoded(encode(base))).toEqual(reference(encode(base)));
    }
  });

  it('keeps nothing for a message with an id, and reads each one right', () => {
    for (let i = 0; i < 4; i++) {
      const bytes = encode({ ...ADD_SUB(i, i), id: 'same' });
      const msg = readInferMessage(bytes)!;
      expect(msg).not.toBeInstanceOf(DecodedInferRequest);
      expect(plain(decodeInferMessage(msg))).toEqual(reference(bytes));
    }
  });

  it('tells BYTES tensors of other lengths after the same fields apart', () => {
    const bytesOf = (s: string): Uint8Array => {
      const b = Buffer.alloc(4 + s.length);
      b.writeUInt32LE(s.length, 0);
      b.write(s, 4);
      return b;
    };
    const msg = (s: string): Buffer =>
      encode({ modelName: 'strings', inputs: [{ name: 'IN', datatype: 'BYTES', shape: [1n] }], outputs: [{ name: 'OUT' }], rawInputContents: [bytesOf(s)] });
    for (const s of ['abc', 'abc', 'abc', 'abcd', 'abcd', 'abcd', 'x', 'abc', 'abcd', '']) {
      expect(decoded(msg(s))).toEqual(reference(msg(s)));
    }
  });

  it('reads raw contents that do not come last, or lengths in a longer varint, the long way', () => {
    // Protobuf writers put fields in order; a message with an output after its raw contents is
    // still a valid message, only not one the memo stands for.
    const base = encode({ modelName: 'm', inputs: [{ name: 'x', datatype: 'UINT8', shape: [2n] }], rawInputContents: [Uint8Array.of(1, 2)] });
    const output = Buffer.from([0x32, 0x03, 0x0a, 0x01, 0x79]); // outputs { name: "y" }
    const late = Buffer.concat([base, output]);
    for (let i = 0; i < 3; i++) expect(decoded(late)).toEqual(reference(late));
    kept(base);
    // The same raw content with its length as a two-byte varint (0x82 0x00).
    const cut = base.length - 4;
    const long = Buffer.concat([base.subarray(0, cut), Buffer.from([0x3a, 0x82, 0x00, 1, 2])]);
    for (let i = 0; i < 3; i++) expect(decoded(long)).toEqual(reference(long));
  });

  it("keeps perf_analyzer's gRPC request", () => {
    // As captured from perf_analyzer 2.51 (-i grpc) on identity_fp32.
    const bytes = Buffer.from(
      '0a0d6964656e746974795f6670333222280a22747269746f6e5f656e61626c655f656d7074795f66696e616c5f726573706f6e7365120208012a110a06494e505554301204465033321a010132090a074f5554505554303a0467c66973',
      'hex',
    );
    expect(plain(kept(bytes))).toEqual(reference(bytes));
    expect(kept(bytes).enableEmptyFinal).toBe(true);
  });
});
