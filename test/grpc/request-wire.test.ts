/**
 * The hand-written reader of ModelInferRequest (src/frontends/grpc/request-wire.ts) against
 * protobuf-es' reflective `fromBinary`: on every message it accepts it must produce the same
 * fields, and it must hand everything beyond the common shape back to `fromBinary`.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readSimpleInferRequest } from '../../src/frontends/grpc/request-wire.js';
import { ModelInferRequestSchema, type ModelInferRequest } from '../../src/generated/grpc_service_pb.js';

/** The fields the inference path reads, as plain data. */
function fields(m: ModelInferRequest) {
  return {
    modelName: m.modelName,
    modelVersion: m.modelVersion,
    id: m.id,
    parameters: m.parameters,
    inputs: m.inputs.map((i) => ({
      name: i.name,
      datatype: i.datatype,
      shape: i.shape,
      parameters: Object.keys(i.parameters),
      contents: i.contents !== undefined,
    })),
    outputs: m.outputs.map((o) => ({ name: o.name, parameters: Object.keys(o.parameters) })),
    raw: m.rawInputContents.map((r) => Buffer.from(r).toString('hex')),
  };
}

const text = fc.string({ unit: 'grapheme', maxLength: 12 });
const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const choice = fc.oneof(
  fc.record({ case: fc.constant('boolParam' as const), value: fc.boolean() }),
  fc.record({ case: fc.constant('int64Param' as const), value: int64 }),
  fc.record({ case: fc.constant('stringParam' as const), value: text }),
  fc.record({ case: fc.constant('doubleParam' as const), value: fc.double() }),
  fc.record({ case: fc.constant('uint64Param' as const), value: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }) }),
);
const parameters = fc.dictionary(
  text.filter((k) => k !== '__proto__'),
  choice.map((parameterChoice) => ({ parameterChoice })),
  { maxKeys: 3 },
);
const simple = fc.record({
  modelName: text,
  modelVersion: fc.oneof(fc.constant(''), fc.nat({ max: 99 }).map(String)),
  id: text,
  parameters,
  inputs: fc.array(fc.record({ name: text, datatype: fc.constantFrom('FP32', 'INT64', 'BYTES', 'BOOL'), shape: fc.array(int64, { maxLength: 4 }) }), {
    maxLength: 4,
  }),
  outputs: fc.array(fc.record({ name: text }), { maxLength: 3 }),
  rawInputContents: fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 4 }),
});

describe('hand-written ModelInferRequest reader', () => {
  it('reads every message of the common shape exactly as fromBinary does', () => {
    fc.assert(
      fc.property(simple, (init) => {
        const bytes = Buffer.from(toBinary(ModelInferRequestSchema, create(ModelInferRequestSchema, init)));
        const fast = readSimpleInferRequest(bytes);
        expect(fast).toBeDefined();
        expect(fields(fast!)).toEqual(fields(fromBinary(ModelInferRequestSchema, bytes)));
      }),
      { numRuns: 500 },
    );
  });

  it('reads a message with more items than its lists keep room for, and the usual ones after it', () => {
    // The reader gathers each list before copying it out (Gathered): one much longer than any
    // usual request, then short ones again, must each come out whole and alone.
    const many = {
      modelName: 'm',
      inputs: Array.from({ length: 300 }, (_, i) => ({ name: `in${i}`, datatype: 'FP32', shape: Array.from({ length: 80 }, (_, d) => BigInt(d)) })),
      outputs: Array.from({ length: 200 }, (_, i) => ({ name: `out${i}` })),
      rawInputContents: Array.from({ length: 300 }, (_, i) => Uint8Array.of(i & 255)),
    };
    const few = { modelName: 'm', inputs: [{ name: 'a', datatype: 'FP32', shape: [2n] }], outputs: [{ name: 'b' }], rawInputContents: [new Uint8Array(8)] };
    for (const init of [few, many, few, many, few]) {
      const bytes = Buffer.from(toBinary(ModelInferRequestSchema, create(ModelInferRequestSchema, init)));
      const fast = readSimpleInferRequest(bytes);
      expect(fast).toBeDefined();
      expect(fields(fast!)).toEqual(fields(fromBinary(ModelInferRequestSchema, bytes)));
    }
  });

  it('reads names that repeat, change and come back at the same places of the message', () => {
    // The reader keeps the last string read at each place; a message that changes one must
    // not get the previous one back, in any order, whatever the lengths.
    const message = (model: string, input: string, datatype: string, output: string) =>
      Buffer.from(
        toBinary(
          ModelInferRequestSchema,
          create(ModelInferRequestSchema, {
            modelName: model,
            inputs: [
              { name: 'FIRST', datatype: 'FP32', shape: [1n] },
              { name: input, datatype, shape: [2n, 3n] },
            ],
            outputs: [{ name: output }],
          }),
        ),
      );
    const cases = [
      ['add_sub', 'INPUT1', 'FP32', 'OUTPUT0'],
      ['add_sub', 'INPUT1', 'FP32', 'OUTPUT0'],
      ['add_sum', 'INPUT2', 'FP16', 'OUTPUT1'],
      ['add', 'INPUT', 'INT8', 'OUT'],
      ['add_sub_longer', 'INPUT1_LONGER', 'BYTES', 'OUTPUT0_LONGER'],
      ['add_sub', 'INPUT1', 'FP32', 'OUTPUT0'],
      ['', 'ü', 'FP32', ''],
    ] as const;
    for (const [model, input, datatype, output] of cases) {
      const bytes = message(model, input, datatype, output);
      const fast = readSimpleInferRequest(bytes)!;
      expect(fields(fast)).toEqual(fields(fromBinary(ModelInferRequestSchema, bytes)));
      expect([fast.modelName, fast.inputs[1]!.name, fast.inputs[1]!.datatype, fast.outputs[0]!.name]).toEqual([model, input, datatype, output]);
    }
  });

  it('gives raw_input_contents as views of the message, not copies', () => {
    const bytes = Buffer.from(
      toBinary(ModelInferRequestSchema, create(ModelInferRequestSchema, { modelName: 'm', rawInputContents: [new Uint8Array([1, 2, 3])] })),
    );
    const raw = readSimpleInferRequest(bytes)!.rawInputContents[0]!;
    expect(raw.buffer).toBe(bytes.buffer);
  });

  it("reads perf_analyzer's gRPC request, whose parameters it sets on every call", () => {
    // As captured from perf_analyzer 2.51 (-i grpc) on identity_fp32.
    const bytes = Buffer.from(
      '0a0d6964656e746974795f6670333222280a22747269746f6e5f656e61626c655f656d7074795f66696e616c5f726573706f6e7365120208012a110a06494e505554301204465033321a010132090a074f5554505554303a0467c66973',
      'hex',
    );
    const fast = readSimpleInferRequest(bytes);
    expect(fast).toBeDefined();
    expect(fast!.parameters['triton_enable_empty_final_response']?.parameterChoice).toEqual({ case: 'boolParam', value: true });
    expect(fields(fast!)).toEqual(fields(fromBinary(ModelInferRequestSchema, bytes)));
  });

  it('leaves parameter entries of unusual form to fromBinary', () => {
    const entry = (body: number[]) => Buffer.from([0x22, body.length, ...body]);
    const key = [0x0a, 0x01, 0x6b]; // key "k"
    const unusual = [
      entry([...key]), // no value
      entry([0x12, 0x02, 0x08, 0x01]), // no key
      entry([...key, 0x12, 0x00]), // a value with no choice
      entry([...key, 0x12, 0x04, 0x08, 0x01, 0x10, 0x02]), // two choices
      entry([...key, 0x12, 0x03, 0x08, 0x82, 0x00]), // a bool in a long varint
      entry([...key, 0x12, 0x02, 0x08, 0x02]), // a bool of 2
      entry([...key, 0x12, 0x02, 0x30, 0x01]), // an unknown choice
      entry([0x0a, 0x09, ...Buffer.from('__proto__'), 0x12, 0x02, 0x08, 0x01]),
    ];
    for (const bytes of unusual) {
      expect(readSimpleInferRequest(bytes), bytes.toString('hex')).toBeUndefined();
      fromBinary(ModelInferRequestSchema, bytes); // still a valid message for the slow path
    }
  });

  it('leaves input and output parameters, typed contents and unpacked shapes to fromBinary or reads them the same', () => {
    const withInputParams = create(ModelInferRequestSchema, {
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1n], parameters: { shared_memory_region: { parameterChoice: { case: 'stringParam', value: 'r' } } } }],
    });
    expect(readSimpleInferRequest(Buffer.from(toBinary(ModelInferRequestSchema, withInputParams)))).toBeUndefined();
    const withContents = create(ModelInferRequestSchema, {
      modelName: 'm',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1n], contents: { fp32Contents: [1] } }],
    });
    expect(readSimpleInferRequest(Buffer.from(toBinary(ModelInferRequestSchema, withContents)))).toBeUndefined();
    const withOutputParams = create(ModelInferRequestSchema, {
      outputs: [{ name: 'y', parameters: { classification: { parameterChoice: { case: 'int64Param', value: 2n } } } }],
    });
    expect(readSimpleInferRequest(Buffer.from(toBinary(ModelInferRequestSchema, withOutputParams)))).toBeUndefined();
    // shape as separate (unpacked) int64 fields: 0x18 = field 3, varint.
    const input = Buffer.from([0x0a, 0x01, 0x78, 0x18, 0x02, 0x18, 0x7f]);
    const unpacked = Buffer.concat([Buffer.from([0x2a, input.length]), input]);
    expect(fields(readSimpleInferRequest(unpacked)!)).toEqual(fields(fromBinary(ModelInferRequestSchema, unpacked)));
  });

  it('never accepts bytes that fromBinary rejects, and agrees with it on the rest', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (raw) => {
        const bytes = Buffer.from(raw);
        const fast = readSimpleInferRequest(bytes);
        if (fast === undefined) return;
        expect(fields(fast)).toEqual(fields(fromBinary(ModelInferRequestSchema, bytes)));
      }),
      { numRuns: 2000 },
    );
  });

  it('hands a string that is not UTF-8 to fromBinary', () => {
    const bad = Buffer.from([0x0a, 0x02, 0xc3, 0x28]);
    expect(readSimpleInferRequest(bad)).toBeUndefined();
  });
});
