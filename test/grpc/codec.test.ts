/**
 * Unit tests of the gRPC infer codec: ModelInferRequest → InferRequest (raw and typed tensors of
 * every datatype, BYTES, parameters, errors) and InferResponse → ModelInferResponse /
 * ModelStreamInferResponse bytes.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import type { Datatype } from '../../src/core/datatype.js';
import { DATATYPES } from '../../src/core/datatype.js';
import { ErrorCode, TritonError } from '../../src/core/errors.js';
import type { InferResponse } from '../../src/core/inference.js';
import { joinBytesElements } from '../../src/core/tensor.js';
import { decodeInferRequest, encodeInferResponse, encodeStreamError, encodeStreamResponse, type OutputPlan } from '../../src/frontends/grpc/infer-codec.js';
import { toInferParameter } from '../../src/frontends/grpc/params.js';
import { contentsFieldOf } from '../../src/frontends/grpc/typed-contents.js';
import {
  type InferTensorContentsSchema,
  ModelInferRequestSchema,
  ModelInferResponseSchema,
  ModelStreamInferResponseSchema,
} from '../../src/generated/grpc_service_pb.js';

type RequestInit = MessageInitShape<typeof ModelInferRequestSchema>;

/** Serialises and parses back, as the server sees a message off the wire. */
function wire(init: RequestInit) {
  const bytes = toBinary(ModelInferRequestSchema, create(ModelInferRequestSchema, init));
  return { bytes, msg: fromBinary(ModelInferRequestSchema, bytes) };
}

function decodeError(init: RequestInit): TritonError {
  try {
    decodeInferRequest(wire(init).msg);
  } catch (err) {
    expect(err).toBeInstanceOf(TritonError);
    return err as TritonError;
  }
  throw new Error('expected an error');
}

const input = (name: string, datatype: string, shape: number[], contents?: MessageInitShape<typeof InferTensorContentsSchema>) => ({
  name,
  datatype,
  shape: shape.map(BigInt),
  ...(contents ? { contents } : {}),
});

/** Three elements of each datatype, as raw little-endian bytes. */
function rawOf(dt: Datatype): Buffer {
  switch (dt) {
    case 'BOOL':
      return Buffer.from([1, 0, 1]);
    case 'UINT8':
      return Buffer.from([0, 7, 255]);
    case 'INT8':
      return Buffer.from(new Int8Array([-128, 0, 127]).buffer);
    case 'UINT16':
      return Buffer.from(new Uint16Array([0, 7, 65535]).buffer);
    case 'INT16':
    case 'FP16':
    case 'BF16':
      return Buffer.from(new Int16Array([-300, 0, 300]).buffer);
    case 'UINT32':
      return Buffer.from(new Uint32Array([0, 7, 2 ** 32 - 1]).buffer);
    case 'INT32':
      return Buffer.from(new Int32Array([-(2 ** 31), 0, 2 ** 31 - 1]).buffer);
    case 'UINT64':
      return Buffer.from(new BigUint64Array([0n, 7n, 2n ** 64n - 1n]).buffer);
    case 'INT64':
      return Buffer.from(new BigInt64Array([-(2n ** 63n), 0n, 2n ** 63n - 1n]).buffer);
    case 'FP32':
      return Buffer.from(new Float32Array([0.5, -1.25, 3]).buffer);
    case 'FP64':
      return Buffer.from(new Float64Array([0.1, -1e300, 3]).buffer);
    case 'BYTES':
      return joinBytesElements(['ab', '', 'xyz']);
  }
}

describe('decodeInferRequest: raw_input_contents', () => {
  it.each(DATATYPES.map((d) => [d]))('%s arrives byte-exact and uncopied', (dt) => {
    const data = rawOf(dt);
    const { bytes, msg } = wire({ modelName: 'm', id: 'x', inputs: [input('IN', dt, [3])], rawInputContents: [data] });
    const { request } = decodeInferRequest(msg);
    const t = request.inputs[0]!;
    expect(t).toMatchObject({ name: 'IN', datatype: dt, shape: [3] });
    expect(Buffer.compare(t.data, data)).toBe(0);
    // A view of the received message, not a copy.
    expect(t.data.buffer).toBe(bytes.buffer);
    expect(request).toMatchObject({ modelName: 'm', modelVersion: '', id: 'x', parameters: {} });
    expect(request.outputs).toBeUndefined();
  });

  it('keeps several inputs in order, including empty tensors', () => {
    const { msg } = wire({
      modelName: 'm',
      inputs: [input('A', 'FP32', [3]), input('B', 'INT32', [0, 4]), input('C', 'BYTES', [3])],
      rawInputContents: [rawOf('FP32'), new Uint8Array(0), rawOf('BYTES')],
    });
    const { request } = decodeInferRequest(msg);
    expect(request.inputs.map((t) => [t.name, t.shape, t.data.length])).toEqual([
      ['A', [3], 12],
      ['B', [0, 4], 0],
      ['C', [3], 17],
    ]);
  });

  it('refuses fewer raw entries than inputs with Triton’s text, and ignores extra ones as Triton does', () => {
    const e = decodeError({ modelName: 'm', inputs: [input('A', 'FP32', [3]), input('B', 'FP32', [3])], rawInputContents: [rawOf('FP32')] });
    expect(e.code).toBe(ErrorCode.INVALID_ARG);
    expect(e.message).toBe("unable to find data for input tensor 'B' for model 'm' in request.");
    const { request } = decodeInferRequest(wire({ modelName: 'm', inputs: [input('A', 'FP32', [3])], rawInputContents: [rawOf('FP32'), rawOf('FP32')] }).msg);
    expect(request.inputs.map((t) => t.data.length)).toEqual([12]);
  });

  it('counts raw entries over the inputs that are not in shared memory (tritonclient mixes them)', () => {
    const inShm = {
      ...input('A', 'FP32', [3]),
      parameters: {
        shared_memory_region: { parameterChoice: { case: 'stringParam' as const, value: 'r' } },
        shared_memory_byte_size: { parameterChoice: { case: 'int64Param' as const, value: 12n } },
      },
    };
    const { request } = decodeInferRequest(wire({ modelName: 'm', inputs: [inShm, input('B', 'FP32', [3])], rawInputContents: [rawOf('FP32')] }).msg);
    expect(request.inputs.map((t) => [t.name, t.shm?.region, t.data.length])).toEqual([
      ['A', 'r', 0],
      ['B', undefined, 12],
    ]);
  });

  it('refuses a raw size that does not match shape × datatype', () => {
    const e = decodeError({ modelName: 'm', inputs: [input('A', 'FP32', [4])], rawInputContents: [rawOf('FP32')] });
    expect(e.message).toBe("input byte size mismatch for input 'A' for model, expected 16 bytes, got 12 bytes");
  });

  it('refuses typed contents next to raw_input_contents', () => {
    const e = decodeError({
      modelName: 'm',
      inputs: [input('A', 'INT32', [1], { intContents: [1] })],
      rawInputContents: [new Uint8Array(4)],
    });
    expect(e.code).toBe(ErrorCode.INVALID_ARG);
    expect(e.message).toBe("contents field must not be specified when using raw_input_contents for 'A' for model 'm'");
  });

  it('refuses unknown datatypes and negative dims', () => {
    expect(decodeError({ modelName: 'm', inputs: [input('A', 'FP8', [1])], rawInputContents: [new Uint8Array(1)] }).message).toBe(
      "invalid datatype 'FP8' for input 'A'",
    );
    expect(decodeError({ modelName: 'm', inputs: [input('A', 'FP32', [-1])], rawInputContents: [new Uint8Array(0)] }).code).toBe(ErrorCode.INVALID_ARG);
  });

  it('reads client shared-memory references (the core resolves them) and checks their types', () => {
    const region = { parameterChoice: { case: 'stringParam' as const, value: 'r0' } };
    const size = { parameterChoice: { case: 'int64Param' as const, value: 4n } };
    const { request } = decodeInferRequest(
      wire({ modelName: 'm', inputs: [{ ...input('A', 'FP32', [1]), parameters: { shared_memory_region: region, shared_memory_byte_size: size } }] }).msg,
    );
    expect(request.inputs[0]).toMatchObject({ name: 'A', shm: { region: 'r0', offset: 0, byteSize: 4 } });
    const e = decodeError({
      modelName: 'm',
      inputs: [
        {
          ...input('A', 'FP32', [1]),
          parameters: { shared_memory_region: region, shared_memory_byte_size: { parameterChoice: { case: 'stringParam', value: '4' } } },
        },
      ],
    });
    expect(e.message).toBe("invalid value type for 'shared_memory_byte_size' parameter, expected int64_param.");
  });
});

describe('decodeInferRequest: typed contents', () => {
  const typed: Array<[Datatype, MessageInitShape<typeof InferTensorContentsSchema>]> = [
    ['BOOL', { boolContents: [true, false, true] }],
    ['UINT8', { uintContents: [0, 7, 255] }],
    ['INT8', { intContents: [-128, 0, 127] }],
    ['UINT16', { uintContents: [0, 7, 65535] }],
    ['INT16', { intContents: [-300, 0, 300] }],
    ['UINT32', { uintContents: [0, 7, 2 ** 32 - 1] }],
    ['INT32', { intContents: [-(2 ** 31), 0, 2 ** 31 - 1] }],
    ['UINT64', { uint64Contents: [0n, 7n, 2n ** 64n - 1n] }],
    ['INT64', { int64Contents: [-(2n ** 63n), 0n, 2n ** 63n - 1n] }],
    ['FP32', { fp32Contents: [0.5, -1.25, 3] }],
    ['FP64', { fp64Contents: [0.1, -1e300, 3] }],
    ['BYTES', { bytesContents: [Buffer.from('ab'), new Uint8Array(0), Buffer.from('xyz')] }],
  ];

  it.each(typed)('%s encodes to the same bytes as raw', (dt, contents) => {
    const { request } = decodeInferRequest(wire({ modelName: 'm', inputs: [input('IN', dt, [3], contents)] }).msg);
    expect(request.inputs[0]!.data.toString('hex')).toBe(rawOf(dt).toString('hex'));
  });

  it('covers every datatype that has a typed field', () => {
    const withField = DATATYPES.filter((d) => contentsFieldOf(d) !== undefined);
    expect(withField.sort()).toEqual(typed.map(([d]) => d).sort());
  });

  it.each([['FP16'], ['BF16']])('%s has no typed form', (dt) => {
    const e = decodeError({ modelName: 'm', inputs: [input('IN', dt, [1], { fp32Contents: [1] })] });
    expect(e.code).toBe(ErrorCode.INVALID_ARG);
    expect(e.message).toContain('raw_input_contents');
  });

  it('refuses data in the wrong field and a wrong element count', () => {
    expect(decodeError({ modelName: 'm', inputs: [input('IN', 'INT32', [1], { fp32Contents: [1] })] }).message).toBe(
      "unexpected fp32_contents for input 'IN' with datatype INT32, expected data in int_contents",
    );
    expect(decodeError({ modelName: 'm', inputs: [input('IN', 'INT32', [3], { intContents: [1, 2] })] }).message).toBe(
      "unexpected number of elements for input 'IN' in int_contents: expected 3, got 2",
    );
  });

  it('passes an input with no data on (the core reports the size)', () => {
    const { request } = decodeInferRequest(wire({ modelName: 'm', inputs: [input('IN', 'INT32', [2])] }).msg);
    expect(request.inputs[0]!.data.length).toBe(0);
  });
});

describe('decodeInferRequest: parameters and outputs', () => {
  const p = (value: ReturnType<typeof toInferParameter>['parameterChoice']) => ({ parameterChoice: value });

  it('reads the parameters the server interprets, tritonclient style', () => {
    const { request, enableEmptyFinal } = decodeInferRequest(
      wire({
        modelName: 'm',
        parameters: {
          priority: p({ case: 'uint64Param', value: 3n }),
          timeout: p({ case: 'int64Param', value: 1000n }),
          sequence_id: p({ case: 'int64Param', value: 2n ** 62n }),
          sequence_start: p({ case: 'boolParam', value: true }),
          sequence_end: p({ case: 'boolParam', value: false }),
          triton_enable_empty_final_response: p({ case: 'boolParam', value: true }),
          custom_s: p({ case: 'stringParam', value: 'v' }),
          custom_i: p({ case: 'int64Param', value: -5n }),
          custom_d: p({ case: 'doubleParam', value: 0.25 }),
          custom_b: p({ case: 'boolParam', value: false }),
        },
      }).msg,
    );
    expect(enableEmptyFinal).toBe(true);
    expect(request.parameters).toEqual({
      priority: 3,
      timeout: 1000,
      sequence_id: 2n ** 62n,
      sequence_start: true,
      sequence_end: false,
      triton_enable_empty_final_response: true,
      custom_s: 'v',
      custom_i: -5,
      custom_d: 0.25,
      custom_b: false,
    });
  });

  it('reads a negative int64 sequence_id as its uint64 bits, as Triton 2.51 does', () => {
    const { request } = decodeInferRequest(wire({ modelName: 'm', parameters: { sequence_id: p({ case: 'int64Param', value: -5n }) } }).msg);
    expect(request.parameters).toEqual({ sequence_id: 2n ** 64n - 5n });
  });

  it('accepts priority as int64 and sequence_id as a string', () => {
    const { request, enableEmptyFinal } = decodeInferRequest(
      wire({
        modelName: 'm',
        parameters: { priority: p({ case: 'int64Param', value: 1n }), sequence_id: p({ case: 'stringParam', value: 'abc' }) },
      }).msg,
    );
    expect(enableEmptyFinal).toBe(false);
    expect(request.parameters).toEqual({ priority: 1, sequence_id: 'abc' });
  });

  it.each([
    ['priority', p({ case: 'stringParam', value: '1' }), "invalid value type for 'priority' parameter, expected int64_param or uint64_param."],
    // The next three as tritonserver 2.51 answers them (compared on its server).
    ['priority', p({ case: 'int64Param', value: -1n }), "invalid value for 'priority', expected value >= 0."],
    ['sequence_id', p({ case: 'uint64Param', value: 5n }), "invalid value type for 'sequence_id' parameter, expected int64_param or string_param."],
    ['sequence_id', p({ case: 'doubleParam', value: 1.5 }), "invalid value type for 'sequence_id' parameter, expected int64_param or string_param."],
    ['timeout', p({ case: 'uint64Param', value: 1n }), "invalid value type for 'timeout' parameter, expected int64_param."],
    ['sequence_id', p({ case: 'boolParam', value: true }), "invalid value type for 'sequence_id' parameter, expected int64_param or string_param."],
    ['sequence_start', p({ case: 'int64Param', value: 1n }), "invalid value type for 'sequence_start' parameter, expected bool_param."],
    [
      'triton_enable_empty_final_response',
      p({ case: 'stringParam', value: 'true' }),
      "invalid value type for 'triton_enable_empty_final_response' parameter, expected bool_param.",
    ],
    [
      'triton_other',
      p({ case: 'boolParam', value: true }),
      "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified, got 'triton_other'",
    ],
    ['custom', p({ case: 'uint64Param', value: 1n }), "unsupported value type for parameter 'custom': uint64_param is not allowed for custom parameters"],
    ['custom', p({ case: undefined }), "parameter 'custom' has no value set"],
  ])('refuses %s = %o', (key, value, message) => {
    const e = decodeError({ modelName: 'm', parameters: { [key]: value } });
    expect(e.code).toBe(ErrorCode.INVALID_ARG);
    expect(e.message).toBe(message);
  });

  it('reads requested outputs and their classification', () => {
    const { request, plan } = decodeInferRequest(
      wire({
        modelName: 'm',
        outputs: [
          { name: 'B', parameters: { classification: p({ case: 'int64Param', value: 2n }) } },
          { name: 'A', parameters: { binary_data: p({ case: 'boolParam', value: true }) } },
        ],
      }).msg,
    );
    expect(request.outputs).toEqual([
      { name: 'B', parameters: { classification: 2 } },
      { name: 'A', parameters: { binary_data: true } },
    ]);
    expect(plan.classification).toEqual(new Map([['B', 2]]));
  });

  it('passes shared-memory outputs to the core and refuses a non-string region', () => {
    const { request } = decodeInferRequest(
      wire({ modelName: 'm', outputs: [{ name: 'A', parameters: { shared_memory_region: p({ case: 'stringParam', value: 'out' }) } }] }).msg,
    );
    expect(request.outputs?.[0]?.parameters).toEqual({ shared_memory_region: 'out' });
    const e = decodeError({
      modelName: 'm',
      outputs: [{ name: 'A', parameters: { shared_memory_region: p({ case: 'int64Param', value: 1n }) } }],
    });
    expect(e.message).toBe("invalid value type for 'shared_memory_region' parameter, expected string_param.");
  });
});

describe('encodeInferResponse / encodeStreamResponse', () => {
  const response = (): InferResponse => ({
    modelName: 'm',
    modelVersion: '3',
    id: 'req-1',
    parameters: { a: 'x', big: 2n ** 63n, n: 5, d: 0.5, b: true },
    outputs: [
      { name: 'O0', datatype: 'FP32', shape: [1, 3], data: rawOf('FP32') },
      { name: 'O1', datatype: 'INT32', shape: [0], data: Buffer.alloc(0) },
      { name: 'O2', datatype: 'BYTES', shape: [3], data: rawOf('BYTES') },
    ],
    final: true,
  });

  it('writes one raw_output_contents entry per output, parallel to outputs', () => {
    const msg = fromBinary(ModelInferResponseSchema, encodeInferResponse(response(), {}, false));
    expect(msg.modelName).toBe('m');
    expect(msg.modelVersion).toBe('3');
    expect(msg.id).toBe('req-1');
    expect(msg.outputs.map((o) => [o.name, o.datatype, o.shape])).toEqual([
      ['O0', 'FP32', [1n, 3n]],
      ['O1', 'INT32', [0n]],
      ['O2', 'BYTES', [3n]],
    ]);
    expect(msg.outputs.every((o) => o.contents === undefined)).toBe(true);
    expect(msg.rawOutputContents.map((r) => Buffer.from(r).toString('hex'))).toEqual([rawOf('FP32').toString('hex'), '', rawOf('BYTES').toString('hex')]);
    expect(msg.parameters['a']!.parameterChoice).toEqual({ case: 'stringParam', value: 'x' });
    expect(msg.parameters['big']!.parameterChoice).toEqual({ case: 'uint64Param', value: 2n ** 63n });
    expect(msg.parameters['n']!.parameterChoice).toEqual({ case: 'int64Param', value: 5n });
    expect(msg.parameters['d']!.parameterChoice).toEqual({ case: 'doubleParam', value: 0.5 });
    expect(msg.parameters['b']!.parameterChoice).toEqual({ case: 'boolParam', value: true });
  });

  it('handles outputs large enough for multi-byte length prefixes', () => {
    const big = Buffer.alloc(300_000, 7);
    const r: InferResponse = {
      modelName: 'm',
      modelVersion: '1',
      id: '',
      outputs: [{ name: 'O', datatype: 'UINT8', shape: [big.length], data: big }],
      final: true,
    };
    const msg = fromBinary(ModelInferResponseSchema, encodeInferResponse(r, {}, false));
    expect(Buffer.compare(Buffer.from(msg.rawOutputContents[0]!), big)).toBe(0);
  });

  it('applies classification to requested outputs', () => {
    const msg = fromBinary(ModelInferResponseSchema, encodeInferResponse(response(), { classification: new Map([['O0', 1]]) }, true));
    expect(msg.outputs[0]).toMatchObject({ name: 'O0', datatype: 'BYTES', shape: [1n, 1n] });
    expect(Buffer.from(msg.rawOutputContents[0]!).subarray(4).toString()).toBe('3.000000:2');
  });

  it('wraps a stream response with triton_final_response', () => {
    for (const final of [true, false]) {
      const msg = fromBinary(ModelStreamInferResponseSchema, encodeStreamResponse(response(), {}, false, final));
      expect(msg.errorMessage).toBe('');
      expect(msg.inferResponse!.id).toBe('req-1');
      expect(msg.inferResponse!.rawOutputContents).toHaveLength(3);
      expect(msg.inferResponse!.parameters['triton_final_response']!.parameterChoice).toEqual({ case: 'boolParam', value: final });
      expect(msg.inferResponse!.parameters['a']!.parameterChoice).toEqual({ case: 'stringParam', value: 'x' });
    }
  });

  it('encodes an in-band stream error with the request identity', () => {
    const msg = fromBinary(ModelStreamInferResponseSchema, encodeStreamError('boom', { id: 'r', modelName: 'm', modelVersion: '' }, true));
    expect(msg.errorMessage).toBe('boom');
    expect(msg.inferResponse).toMatchObject({ id: 'r', modelName: 'm', modelVersion: '' });
    expect(msg.inferResponse!.parameters['triton_final_response']!.parameterChoice).toEqual({ case: 'boolParam', value: true });
  });

  it('serialises empty final responses', () => {
    const r: InferResponse = { modelName: 'm', modelVersion: '1', id: 'x', outputs: [], final: true };
    const msg = fromBinary(ModelStreamInferResponseSchema, encodeStreamResponse(r, {}, false, true));
    expect(msg.inferResponse!.outputs).toHaveLength(0);
    expect(msg.inferResponse!.rawOutputContents).toHaveLength(0);
  });
});

describe('hand-written ModelInferResponse encoder', () => {
  it('parses back identically to what protobuf-es would have encoded', () => {
    const r: InferResponse = {
      modelName: 'mödel-ünicode',
      modelVersion: '12',
      id: '',
      parameters: {
        neg: -5,
        negBig: -(2n ** 63n),
        maxI64: 2n ** 63n - 1n,
        u64: 2n ** 64n - 1n,
        zero: 0,
        big: 2 ** 52,
        dbl: -1.5e-300,
        nan: Number.NaN,
        s: '日本',
        empty: '',
        f: false,
      },
      outputs: [
        { name: '', datatype: 'UINT8', shape: [], data: Buffer.from([9]) },
        { name: 'x', datatype: 'INT64', shape: [2 ** 40, 0, 127, 128], data: Buffer.alloc(0) },
      ],
      final: true,
    };
    const got = fromBinary(ModelInferResponseSchema, encodeInferResponse(r, {}, false));
    const expected = create(ModelInferResponseSchema, {
      modelName: r.modelName,
      modelVersion: '12',
      parameters: Object.fromEntries(Object.entries(r.parameters!).map(([k, v]) => [k, toInferParameter(v)])),
      outputs: [
        { name: '', datatype: 'UINT8', shape: [] },
        { name: 'x', datatype: 'INT64', shape: [2n ** 40n, 0n, 127n, 128n] },
      ],
      rawOutputContents: [new Uint8Array([9]), new Uint8Array(0)],
    });
    expect(got.parameters['nan']!.parameterChoice.value).toBeNaN();
    delete got.parameters['nan'];
    delete expected.parameters['nan'];
    got.rawOutputContents = got.rawOutputContents.map((b) => new Uint8Array(b));
    expect(got).toEqual(expected);
    expect(got.parameters['negBig']!.parameterChoice).toEqual({ case: 'int64Param', value: -(2n ** 63n) });
    expect(got.parameters['u64']!.parameterChoice).toEqual({ case: 'uint64Param', value: 2n ** 64n - 1n });
    expect(got.parameters['neg']!.parameterChoice).toEqual({ case: 'int64Param', value: -5n });
  });

  it('refuses an output with a negative dimension (a backend bug) as INTERNAL', () => {
    const r: InferResponse = {
      modelName: 'm',
      modelVersion: '1',
      id: '',
      outputs: [{ name: 'o', datatype: 'FP32', shape: [-1], data: Buffer.alloc(0) }],
      final: true,
    };
    expect(() => encodeInferResponse(r, {}, false)).toThrow(TritonError);
  });

  it("encodes every response with a kept request form's plan exactly as with a plan of its own", () => {
    // The plan of a kept request form keeps its last response's head (RepeatedResponseHead) for
    // the next response of that form; whatever changes from one response to the next, the bytes
    // must be those a plan that keeps nothing gives.
    const base = (): InferResponse => ({
      modelName: 'add_sub',
      modelVersion: '1',
      id: '',
      outputs: [
        { name: 'OUTPUT0', datatype: 'FP32', shape: [4], data: Buffer.from(new Float32Array([1, 2, 3, 4]).buffer) },
        { name: 'OUTPUT1', datatype: 'FP32', shape: [4], data: Buffer.from(new Float32Array([5, 6, 7, 8]).buffer) },
      ],
      final: true,
    });
    const variants: Array<(r: InferResponse) => void> = [
      () => {},
      (r) => r.outputs[0]!.data.fill(9),
      (r) => (r.modelVersion = '2'),
      (r) => (r.modelName = 'add_sum'),
      (r) => (r.id = 'with-id'),
      (r) => (r.parameters = {}),
      (r) => (r.parameters = { p: 1 }),
      (r) => (r.outputs[1]!.name = 'OUTPUT2'),
      (r) => (r.outputs[1]!.datatype = 'INT32'),
      (r) => (r.outputs[1]!.shape = [2, 2]),
      (r) => (r.outputs[1]!.shape = [4, 1]),
      (r) => r.outputs.pop(),
      (r) => r.outputs.push({ name: 'OUTPUT2', datatype: 'BYTES', shape: [1], data: Buffer.from([3, 0, 0, 0, 97, 98, 99]) }),
      (r) => (r.outputs = [{ name: 'S', datatype: 'BYTES', shape: [1], data: Buffer.from([1, 0, 0, 0, 120]) }]),
      (r) => (r.outputs = [{ name: 'S', datatype: 'BYTES', shape: [1], data: Buffer.from([4, 0, 0, 0, 119, 120, 121, 122]) }]),
      (r) => (r.outputs = []),
    ];
    const kept = { keepsResponse: true };
    // Each variant twice in a row (the second from the kept head), then back to the base form.
    for (const change of [...variants, ...variants.reverse()]) {
      for (let i = 0; i < 2; i++) {
        const r = base();
        change(r);
        const expected = encodeInferResponse(r, {}, false);
        expect(encodeInferResponse(r, kept, false).equals(expected)).toBe(true);
      }
      const r = base();
      expect(encodeInferResponse(r, kept, false).equals(encodeInferResponse(r, {}, false))).toBe(true);
    }
    // A plan that is not a kept form's keeps nothing.
    const own: OutputPlan = {};
    encodeInferResponse(base(), own, false);
    expect(own.lastResponse).toBeUndefined();
  });
});
