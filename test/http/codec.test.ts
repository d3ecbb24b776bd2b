/**
 * Unit tests of the HTTP body codec: request JSON parsing, the three /infer body layouts,
 * JSON ↔ binary tensor data for every datatype, response encoding, compression helpers,
 * routing and the bigint-aware JSON writer. No sockets here.
 */
import { gzipSync, deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ErrorCode, TritonError } from '../../src/core/errors.js';
import type { InferResponse } from '../../src/core/inference.js';
import type { ModelHandle, TensorSpec } from '../../src/core/model-handle.js';
import { joinBytesElements, splitBytesElements } from '../../src/core/tensor.js';
import { decodeBody, requestEncoding } from '../../src/frontends/http/body.js';
import { BodyBudget } from '../../src/frontends/body-budget.js';
import { classify } from '../../src/frontends/classification.js';
import { responseEncoding } from '../../src/frontends/http/compression.js';
import { parseHeaderLength, parseInferRequest } from '../../src/frontends/http/infer-request.js';
import type { OutputPlan } from '../../src/frontends/http/infer-plan.js';
import { encodeInferResponse } from '../../src/frontends/http/infer-response.js';
import { parseJsonBuffer } from '../../src/frontends/http/json-parse.js';
import { stringifyJson } from '../../src/frontends/http/json.js';
import { allowedMethods, matchRoute } from '../../src/frontends/http/router.js';
import { dataToJsonText, encodeJsonData, JsonArrayText } from '../../src/frontends/http/tensor-json.js';

function model(inputs: TensorSpec[], maxBatchSize = 0): ModelHandle {
  return {
    name: 'm',
    version: '1',
    directory: '',
    maxBatchSize,
    decoupled: false,
    inputs,
    outputs: [],
    metadata: () => ({ name: 'm', versions: ['1'], platform: 'python', inputs: [], outputs: [] }),
    configJson: () => ({}),
    isReady: () => true,
  };
}
const ANY = model([]);

/** Parses a pure-JSON body. */
function parseJson(doc: unknown, m: ModelHandle = ANY) {
  const body = Buffer.from(typeof doc === 'string' ? doc : JSON.stringify(doc));
  return parseInferRequest(body, parseHeaderLength(undefined, body.length), m, 'm', '');
}

/** Builds a JSON+binary body the way tritonclient does. */
function binaryBody(doc: unknown, ...blobs: Buffer[]): { body: Buffer; header: string } {
  const json = Buffer.from(JSON.stringify(doc));
  return { body: Buffer.concat([json, ...blobs]), header: String(json.length) };
}

function expectError(fn: () => unknown, code: ErrorCode, message: string | RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(TritonError);
  const err = caught as TritonError;
  expect(err.code).toBe(code);
  if (typeof message === 'string') expect(err.message).toBe(message);
  else expect(err.message).toMatch(message);
}

const f32 = (...v: number[]) => Buffer.from(new Float32Array(v).buffer);

describe('JSON data → binary, every datatype', () => {
  const cases: Array<[string, unknown[], Buffer]> = [
    ['BOOL', [true, false, true], Buffer.from([1, 0, 1])],
    ['UINT8', [0, 255, 7], Buffer.from([0, 255, 7])],
    ['UINT16', [1, 65535], Buffer.from(new Uint16Array([1, 65535]).buffer)],
    ['UINT32', [1, 4294967295], Buffer.from(new Uint32Array([1, 4294967295]).buffer)],
    ['UINT64', [1, 18446744073709551615n], Buffer.from(new BigUint64Array([1n, 18446744073709551615n]).buffer)],
    ['INT8', [-128, 127], Buffer.from(new Int8Array([-128, 127]).buffer)],
    ['INT16', [-32768, 32767], Buffer.from(new Int16Array([-32768, 32767]).buffer)],
    ['INT32', [-2147483648, 2147483647], Buffer.from(new Int32Array([-2147483648, 2147483647]).buffer)],
    ['INT64', [-9223372036854775808n, 9223372036854775807n], Buffer.from(new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n]).buffer)],
    ['FP32', [1.5, -2.25, 0.1], f32(1.5, -2.25, 0.1)],
    ['FP64', [1.5, 0.1], Buffer.from(new Float64Array([1.5, 0.1]).buffer)],
  ];
  for (const [dt, data, bytes] of cases) {
    it(`${dt} round-trips JSON → bytes → JSON`, () => {
      const enc = encodeJsonData('x', dt as never, data, data.length);
      expect(Buffer.compare(enc, bytes)).toBe(0);
      const text = dataToJsonText('x', dt as never, enc, data.length);
      const expected = dt === 'FP32' ? `[1.5,-2.25,${Math.fround(0.1)}]` : '[' + data.map(String).join(',') + ']';
      expect(text).toBe(expected);
    });
  }

  it('BYTES: UTF-8 strings become u32-LE length-prefixed elements and back', () => {
    const enc = encodeJsonData('x', 'BYTES', ['a', '', 'héllo'], 3);
    expect(splitBytesElements(enc).map((b) => b.toString())).toEqual(['a', '', 'héllo']);
    expect(enc.readUInt32LE(0)).toBe(1);
    expect(dataToJsonText('x', 'BYTES', enc, 3)).toBe('["a","","héllo"]');
  });

  it('accepts nested (row-major) and flat data alike', () => {
    const nested = encodeJsonData(
      'x',
      'INT32',
      [
        [1, 2, 3],
        [4, 5, 6],
      ],
      6,
    );
    const flat = encodeJsonData('x', 'INT32', [1, 2, 3, 4, 5, 6], 6);
    expect(Buffer.compare(nested, flat)).toBe(0);
    const bytes = encodeJsonData('x', 'BYTES', [['a'], ['b']], 2);
    expect(splitBytesElements(bytes).map(String)).toEqual(['a', 'b']);
  });

  it('refuses FP16/BF16 as JSON both ways', () => {
    expectError(
      () => encodeJsonData('in', 'FP16', [1], 1),
      ErrorCode.INVALID_ARG,
      'receiving FP16 data via JSON is not supported. Please use the binary data format for input in',
    );
    expectError(() => encodeJsonData('in', 'BF16', [1], 1), ErrorCode.INVALID_ARG, /receiving BF16 data via JSON/);
    expectError(() => dataToJsonText('o', 'FP16', Buffer.alloc(2), 1), ErrorCode.INVALID_ARG, /sending FP16 data via JSON/);
  });

  it('checks element count against the shape (too many, too few), with 500 as Triton 2.51', () => {
    const msg = "Unable to parse 'data': Shape does not match true shape of 'data' field";
    expectError(() => encodeJsonData('x', 'FP32', [1, 2, 3], 2), ErrorCode.INTERNAL, msg);
    expectError(() => encodeJsonData('x', 'FP32', [1], 2), ErrorCode.INTERNAL, msg);
  });

  it('leaves the number of BYTES elements to request validation, as Triton does', () => {
    expect(splitBytesElements(encodeJsonData('x', 'BYTES', ['a'], 2))).toEqual([Buffer.from('a')]);
  });

  it('checks element types', () => {
    expectError(() => encodeJsonData('x', 'BOOL', [1], 1), ErrorCode.INTERNAL, /non-boolean as boolean/);
    expectError(() => encodeJsonData('x', 'INT32', [1.5], 1), ErrorCode.INTERNAL, /non-signed-integer/);
    expectError(() => encodeJsonData('x', 'UINT8', [-1], 1), ErrorCode.INTERNAL, /non-unsigned-integer/);
    expectError(() => encodeJsonData('x', 'FP32', ['1'], 1), ErrorCode.INTERNAL, "Unable to parse 'data': attempt to access JSON non-number as double");
    expectError(
      () => encodeJsonData('x', 'BYTES', [1], 1),
      ErrorCode.INTERNAL,
      'Unable to parse JSON bytes array: attempt to access JSON non-string as string',
    );
  });

  it('prints 64-bit integers exactly, never through a double', () => {
    const buf = Buffer.from(new BigInt64Array([2n ** 53n + 1n, -(2n ** 63n)]).buffer);
    expect(dataToJsonText('o', 'INT64', buf, 2)).toBe('[9007199254740993,-9223372036854775808]');
    const ubuf = Buffer.from(new BigUint64Array([2n ** 64n - 1n]).buffer);
    expect(dataToJsonText('o', 'UINT64', ubuf, 1)).toBe('[18446744073709551615]');
  });

  it('reports an output whose bytes do not match its shape as INTERNAL', () => {
    expectError(() => dataToJsonText('o', 'FP32', Buffer.alloc(7), 2), ErrorCode.INTERNAL, "output tensor shape does not match size of output for 'o'");
    expectError(() => dataToJsonText('o', 'BYTES', Buffer.from([5, 0, 0, 0, 1]), 1), ErrorCode.INTERNAL, /does not match/);
  });
});

describe('JSON array text a slice at a time (large outputs)', () => {
  /** Every slice of `n` elements, joined: must be the one-string rendering exactly. */
  const sliced = (datatype: Parameters<typeof dataToJsonText>[1], data: Buffer, count: number, n: number): string => {
    const t = new JsonArrayText('o', datatype, data, count);
    let text = '';
    do text += t.next(n);
    while (!t.done);
    return text;
  };

  it('matches dataToJsonText for every slice size, datatype and count', () => {
    const i64 = Buffer.from(new BigInt64Array([2n ** 53n + 1n, -(2n ** 63n), 0n, 7n, -1n]).buffer);
    const f32 = Buffer.from(new Float32Array([0.5, -1, Number.NaN, Number.POSITIVE_INFINITY, 3.25]).buffer);
    const u8 = Buffer.from([0, 1, 255, 7, 9]);
    const bytes = joinBytesElements(['a', 'é"\\', '', 'x'.repeat(100), '\n'].map((s) => Buffer.from(s)));
    for (const [dt, data] of [
      ['INT64', i64],
      ['FP32', f32],
      ['UINT8', u8],
      ['BYTES', bytes],
    ] as const) {
      for (const count of [5, 1]) {
        const d = dt === 'BYTES' ? (count === 5 ? bytes : joinBytesElements([Buffer.from('a')])) : data.subarray(0, (data.length / 5) * count);
        const whole = dataToJsonText('o', dt, d, count);
        for (const n of [1, 2, 3, 5, 100]) expect(sliced(dt, d, count, n)).toBe(whole);
      }
    }
    expect(sliced('INT32', Buffer.alloc(0), 0, 4)).toBe('[]');
  });

  it('refuses what dataToJsonText refuses, before any text', () => {
    expect(() => new JsonArrayText('o', 'FP16', Buffer.alloc(2), 1)).toThrow(/sending FP16 data via JSON is not supported/);
    expect(() => new JsonArrayText('o', 'INT32', Buffer.alloc(3), 1)).toThrow(/does not match size of output for 'o'/);
  });
});

describe('request JSON parser', () => {
  it('keeps integers beyond 2^53 exact as bigint', () => {
    const doc = parseJsonBuffer(Buffer.from('{"a":9007199254740993,"b":-9223372036854775808,"c":1.25,"d":"12345678901234567890"}'));
    expect(doc).toEqual({ a: 9007199254740993n, b: -(2n ** 63n), c: 1.25, d: '12345678901234567890' });
  });
  it('accepts NaN and Infinity like rapidjson', () => {
    expect(parseJsonBuffer(Buffer.from('[NaN,Infinity,-Infinity]'))).toEqual([NaN, Infinity, -Infinity]);
  });
  it('enforces the depth limit of 100', () => {
    expect(() => parseJsonBuffer(Buffer.from('['.repeat(100) + ']'.repeat(100)))).not.toThrow();
    expectError(() => parseJsonBuffer(Buffer.from('['.repeat(101) + ']'.repeat(101))), ErrorCode.INVALID_ARG, /nesting depth/);
    // Brackets inside strings do not count.
    expect(() => parseJsonBuffer(Buffer.from(JSON.stringify({ s: '['.repeat(500) })))).not.toThrow();
  });
  it('reports malformed and empty documents', () => {
    expectError(() => parseJsonBuffer(Buffer.from('{"a":}')), ErrorCode.INVALID_ARG, /^failed to parse the request JSON buffer/);
    expectError(() => parseJsonBuffer(Buffer.alloc(0)), ErrorCode.INVALID_ARG, /document is empty/);
    expectError(() => parseJsonBuffer(Buffer.from('{"a":12345678901234567890,}')), ErrorCode.INVALID_ARG, /failed to parse/);
  });
  it('slow path decodes escapes and nested values', () => {
    const doc = parseJsonBuffer(Buffer.from('{"s":"a\\"b\\u00e9","n":[1,[2,{"x":null}]],"big":18446744073709551615,"t":true}'));
    expect(doc).toEqual({ s: 'a"bé', n: [1, [2, { x: null }]], big: 2n ** 64n - 1n, t: true });
  });
});

describe('pure JSON body', () => {
  it('builds the InferRequest: id, parameters, inputs, outputs', () => {
    const { request, plan } = parseJson({
      id: 'r1',
      parameters: { priority: 2, timeout: 100, sequence_id: 'abc', sequence_start: true, custom: 'v', n: 1.5, binary_data_output: true },
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2], data: [[1, 2]] }],
      outputs: [
        { name: 'OUTPUT0', parameters: { binary_data: false } },
        { name: 'OUTPUT1', parameters: { classification: 2 } },
      ],
    });
    expect(request.id).toBe('r1');
    expect(request.modelName).toBe('m');
    expect(request.parameters).toEqual({ priority: 2, timeout: 100, sequence_id: 'abc', sequence_start: true, custom: 'v', n: 1.5, binary_data_output: true });
    expect(request.inputs[0]).toMatchObject({ name: 'INPUT0', datatype: 'FP32', shape: [1, 2] });
    expect(Buffer.compare(request.inputs[0]!.data, f32(1, 2))).toBe(0);
    expect(request.outputs).toEqual([
      { name: 'OUTPUT0', parameters: { binary_data: false } },
      { name: 'OUTPUT1', parameters: { classification: 2 } },
    ]);
    expect(plan.defaultBinary).toBe(true);
    expect(plan.requested?.get('OUTPUT0')).toEqual({ binary: false, classification: 0 });
    expect(plan.requested?.get('OUTPUT1')).toEqual({ binary: false, classification: 2 });
  });

  it('keeps a 64-bit sequence_id exact', () => {
    const { request } = parseJson('{"parameters":{"sequence_id":18446744073709551615},"inputs":[]}');
    expect(request.parameters.sequence_id).toBe(2n ** 64n - 1n);
  });

  it('INT64 input data beyond 2^53 survives', () => {
    const { request } = parseJson('{"inputs":[{"name":"I","datatype":"INT64","shape":[1],"data":[9007199254740993]}]}');
    expect(request.inputs[0]!.data.readBigInt64LE(0)).toBe(2n ** 53n + 1n);
  });

  it('an empty tensor ignores data', () => {
    const { request } = parseJson({ inputs: [{ name: 'I', datatype: 'FP32', shape: [0, 3], data: [] }] });
    expect(request.inputs[0]!.data.length).toBe(0);
  });

  it('requires exactly one of data / binary_data_size / shared_memory_region', () => {
    const base = "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But";
    expectError(() => parseJson({ inputs: [{ name: 'I', datatype: 'FP32', shape: [1] }] }), ErrorCode.INVALID_ARG, `${base} no field is set`);
    expectError(
      () => parseJson({ inputs: [{ name: 'I', datatype: 'FP32', shape: [1], data: [1], parameters: { binary_data_size: 4 } }] }),
      ErrorCode.INVALID_ARG,
      `${base} set 'data' 'binary_data_size'`,
    );
  });

  it('reads shared-memory references (the core resolves them) and refuses bad combinations', () => {
    const { request } = parseJson({
      inputs: [{ name: 'I', datatype: 'FP32', shape: [1], parameters: { shared_memory_region: 'r', shared_memory_byte_size: 4, shared_memory_offset: 8 } }],
    });
    expect(request.inputs[0]).toMatchObject({ name: 'I', shm: { region: 'r', offset: 8, byteSize: 4 } });
    expect(request.inputs[0]!.data.length).toBe(0);
    expectError(
      () => parseJson({ inputs: [{ name: 'I', datatype: 'FP32', shape: [1], parameters: { shared_memory_region: 'r', shared_memory_byte_size: -4 } }] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'shared_memory_byte_size': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    expectError(
      () => parseJson({ inputs: [], outputs: [{ name: 'O', parameters: { shared_memory_region: 'r', classification: 1 } }] }),
      ErrorCode.INVALID_ARG,
      "Output can't set both 'shared_memory_region' and 'classification'",
    );
    expectError(
      () => parseJson({ inputs: [], outputs: [{ name: 'O', parameters: { shared_memory_region: 'r', binary_data: true } }] }),
      ErrorCode.INVALID_ARG,
      "Output can't set both 'shared_memory_region' and 'binary_data'",
    );
  });

  it('refuses triton_ parameters and wrong parameter types', () => {
    expectError(() => parseJson({ parameters: { triton_x: 1 }, inputs: [] }), ErrorCode.INVALID_ARG, /reserved for Triton usage/);
    expectError(
      () => parseJson({ parameters: { priority: -1 }, inputs: [] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'priority': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    expectError(
      () => parseJson({ parameters: { timeout: 'x' }, inputs: [] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'timeout': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    expectError(
      () => parseJson({ parameters: { sequence_start: 1 }, inputs: [] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'sequence_start': attempt to access JSON non-boolean as boolean",
    );
    expectError(
      () => parseJson({ parameters: { sequence_id: -3 }, inputs: [] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'sequence_id': attempt to access JSON non-string as string",
    );
    expectError(
      () => parseJson({ parameters: { binary_data_output: 'yes' }, inputs: [] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'binary_data_output': attempt to access JSON non-boolean as boolean",
    );
    expectError(() => parseJson({ parameters: { obj: { a: 1 } }, inputs: [] }), ErrorCode.INVALID_ARG, /has invalid type/);
  });

  it('refuses non-object bodies and wrong field types', () => {
    // Triton 2.51's answers (500, TritonJson's texts), compared on its server (docs/protocol-notes.md).
    expectError(() => parseJson('[1,2]'), ErrorCode.INTERNAL, "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'");
    expectError(() => parseJson('"x"'), ErrorCode.INTERNAL, "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'");
    expectError(() => parseJson({}), ErrorCode.INTERNAL, "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'");
    expectError(() => parseJson({ inputs: {} }), ErrorCode.INTERNAL, "Unable to parse 'inputs': attempt to access JSON non-array as array");
    expectError(() => parseJson({ id: 5, inputs: [] }), ErrorCode.INTERNAL, "Unable to parse 'id': attempt to access JSON non-string as string");
    expectError(
      () => parseJson({ inputs: [{ name: 1, datatype: 'FP32', shape: [1], data: [1] }] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'name': attempt to access JSON non-string as string",
    );
    expectError(
      () => parseJson({ inputs: [{ name: 'I', shape: [1], data: [1] }] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'datatype': attempt to access non-existing object member 'datatype'",
    );
    expectError(
      () => parseJson({ inputs: [{ name: 'I', datatype: 7, shape: [1], data: [1] }] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'datatype': attempt to access JSON non-string as string",
    );
    expectError(() => parseJson({ inputs: [{ name: 'I', datatype: 'FP8', shape: [1], data: [1] }] }), ErrorCode.INVALID_ARG, /invalid datatype/);
    expectError(
      () => parseJson({ inputs: [{ name: 'I', datatype: 'FP32', shape: [-1], data: [1] }] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
    expectError(
      () => parseJson({ inputs: [{ name: 'I', datatype: 'FP32', shape: 1, data: [1] }] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'shape': attempt to access JSON non-array as array",
    );
    expectError(
      () => parseJson({ inputs: [{ name: 'I', datatype: 'FP32', shape: [1], data: 1 }] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'data': attempt to access JSON non-array as array",
    );
    expectError(() => parseJson({ inputs: [], outputs: {} }), ErrorCode.INTERNAL, "Unable to parse 'outputs': attempt to access JSON non-array as array");
    expectError(
      () => parseJson({ inputs: [], outputs: [{}] }),
      ErrorCode.INTERNAL,
      "Unable to parse 'name': attempt to access non-existing object member 'name'",
    );
    expectError(
      () => parseJson({ inputs: [], outputs: [{ name: 'O', parameters: { binary_data: 1 } }] }),
      ErrorCode.INVALID_ARG,
      "Unable to set 'binary_data'",
    );
    expectError(
      () => parseJson({ inputs: [], outputs: [{ name: 'O', parameters: { classification: -1 } }] }),
      ErrorCode.INVALID_ARG,
      "Unable to set 'classification'",
    );
  });

  it('a huge declared shape with little data is a shape error, not an allocation', () => {
    expectError(() => parseJson({ inputs: [{ name: 'I', datatype: 'FP64', shape: [1e12], data: [1] }] }), ErrorCode.INTERNAL, /Shape does not match/);
  });

  it('depth limit applies to data', () => {
    let data: unknown = [1];
    for (let i = 0; i < 100; i++) data = [data];
    expectError(() => parseJson({ inputs: [{ name: 'I', datatype: 'FP32', shape: [1], data }] }), ErrorCode.INVALID_ARG, /nesting depth/);
  });
});

describe('JSON + binary body', () => {
  it('slices binary inputs in inputs order without copying', () => {
    const a = f32(1, 2);
    const b = joinBytesElements(['x', 'yz']);
    const { body, header } = binaryBody(
      {
        inputs: [
          { name: 'A', datatype: 'FP32', shape: [2], parameters: { binary_data_size: a.length } },
          { name: 'J', datatype: 'INT32', shape: [1], data: [5] },
          { name: 'B', datatype: 'BYTES', shape: [2], parameters: { binary_data_size: b.length } },
          { name: 'E', datatype: 'FP32', shape: [0], parameters: { binary_data_size: 0 } },
        ],
      },
      a,
      b,
    );
    const { request } = parseInferRequest(body, parseHeaderLength(header, body.length), ANY, 'm', '2');
    expect(request.modelVersion).toBe('2');
    const [ia, ij, ib, ie] = request.inputs;
    expect(Buffer.compare(ia!.data, a)).toBe(0);
    expect(ia!.data.buffer).toBe(body.buffer); // a view of the body
    expect(ij!.data.readInt32LE(0)).toBe(5);
    expect(splitBytesElements(ib!.data).map(String)).toEqual(['x', 'yz']);
    expect(ie!.data.length).toBe(0);
  });

  it('leftover bytes and short bodies are errors', () => {
    const input = { name: 'A', datatype: 'FP32', shape: [2], parameters: { binary_data_size: 8 } };
    const extra = binaryBody({ inputs: [input] }, f32(1, 2), Buffer.from([9]));
    expectError(
      () => parseInferRequest(extra.body, Number(extra.header), ANY, 'm', ''),
      ErrorCode.INVALID_ARG,
      "unexpected additional input data for model 'm'",
    );
    const short = binaryBody({ inputs: [input] }, f32(1));
    expectError(
      () => parseInferRequest(short.body, Number(short.header), ANY, 'm', ''),
      ErrorCode.INVALID_ARG,
      "unexpected size for input 'A', expecting 4 additional bytes for model 'm'",
    );
  });

  it('binary_data_size must be an unsigned integer', () => {
    const bad = binaryBody({ inputs: [{ name: 'A', datatype: 'FP32', shape: [1], parameters: { binary_data_size: -4 } }] });
    expectError(
      () => parseInferRequest(bad.body, Number(bad.header), ANY, 'm', ''),
      ErrorCode.INTERNAL,
      "Unable to parse 'binary_data_size': attempt to access JSON non-unsigned-integer as unsigned-integer",
    );
  });

  it('validates Inference-Header-Content-Length', () => {
    expect(parseHeaderLength(undefined, 10)).toBe(10);
    expect(parseHeaderLength('4', 10)).toBe(4);
    expectError(() => parseHeaderLength('11', 10), ErrorCode.INVALID_ARG, 'inference header size should be in range (0, 10), got: 11');
    expectError(() => parseHeaderLength('-1', 10), ErrorCode.INVALID_ARG, /Unable to parse Inference-Header-Content-Length/);
    expectError(() => parseHeaderLength('abc', 10), ErrorCode.INVALID_ARG, /Unable to parse Inference-Header-Content-Length/);
  });
});

describe('raw binary body (header 0)', () => {
  it('feeds the whole body to the only input, shape from the byte size', () => {
    const m = model([{ name: 'IN', datatype: 'FP32', dims: [-1], optional: false }]);
    const body = f32(1, 2, 3);
    const { request, plan } = parseInferRequest(body, 0, m, 'm', '');
    expect(request.inputs).toHaveLength(1);
    expect(request.inputs[0]).toMatchObject({ name: 'IN', datatype: 'FP32', shape: [3] });
    expect(request.inputs[0]!.data).toBe(body);
    expect(plan.defaultBinary).toBe(true);
  });
  it('batching models get batch 1; BYTES needs dims [1]', () => {
    const b = model([{ name: 'IN', datatype: 'INT32', dims: [2, -1], optional: false }], 4);
    expect(parseInferRequest(Buffer.alloc(16), 0, b, 'm', '').request.inputs[0]!.shape).toEqual([1, 2, 2]);
    const s = model([{ name: 'S', datatype: 'BYTES', dims: [1], optional: false }]);
    expect(parseInferRequest(joinBytesElements(['hi']), 0, s, 'm', '').request.inputs[0]!.shape).toEqual([1]);
    const s2 = model([{ name: 'S', datatype: 'BYTES', dims: [2], optional: false }]);
    expectError(() => parseInferRequest(Buffer.alloc(4), 0, s2, 'm', ''), ErrorCode.INVALID_ARG, /requires dims \[1\]/);
  });
  it('refuses models with several inputs or several variable dims', () => {
    const two = model([
      { name: 'A', datatype: 'FP32', dims: [1], optional: false },
      { name: 'B', datatype: 'FP32', dims: [1], optional: false },
    ]);
    expectError(() => parseInferRequest(Buffer.alloc(4), 0, two, 'm', ''), ErrorCode.INVALID_ARG, /exactly 1 input/);
    const vv = model([{ name: 'A', datatype: 'FP32', dims: [-1, -1], optional: false }]);
    expectError(() => parseInferRequest(Buffer.alloc(4), 0, vv, 'm', ''), ErrorCode.INVALID_ARG, /at most one variable-size/);
    const odd = model([{ name: 'A', datatype: 'FP32', dims: [-1], optional: false }]);
    expectError(() => parseInferRequest(Buffer.alloc(5), 0, odd, 'm', ''), ErrorCode.INVALID_ARG, /byte size mismatch/);
  });
});

describe('response encoding', () => {
  const response = (outputs: InferResponse['outputs'], extra: Partial<InferResponse> = {}): InferResponse => ({
    modelName: 'm',
    modelVersion: '3',
    id: '',
    outputs,
    final: true,
    ...extra,
  });
  const out0 = { name: 'O0', datatype: 'FP32' as const, shape: [2], data: f32(1, 2) };
  const out1 = { name: 'O1', datatype: 'INT64' as const, shape: [1], data: Buffer.from(new BigInt64Array([2n ** 62n]).buffer) };
  const empty = { name: 'E', datatype: 'FP32' as const, shape: [0], data: Buffer.alloc(0) };

  it('JSON outputs: flat data, no id when empty, parameters when set', () => {
    const enc = encodeInferResponse(response([out0, out1], { parameters: { p: 1n, q: 'x' } }), { defaultBinary: false }, false);
    expect(JSON.parse(enc.json)).toEqual({
      model_name: 'm',
      model_version: '3',
      parameters: { p: 1, q: 'x' },
      outputs: [
        { name: 'O0', datatype: 'FP32', shape: [2], data: [1, 2] },
        { name: 'O1', datatype: 'INT64', shape: [1], data: [2 ** 62] },
      ],
    });
    expect(enc.json).toContain('"data":[4611686018427387904]');
    expect(enc.blobs).toHaveLength(0);
    expect(enc.jsonBytes).toBe(Buffer.byteLength(enc.json));
  });

  it('binary outputs follow the JSON in output order; empty ones add no bytes', () => {
    const enc = encodeInferResponse(response([out1, empty, out0], { id: 'req' }), { defaultBinary: true }, false);
    const j = JSON.parse(enc.json);
    expect(j.id).toBe('req');
    expect(j.outputs.map((o: { parameters: { binary_data_size: number } }) => o.parameters.binary_data_size)).toEqual([8, 0, 8]);
    expect(enc.blobs).toEqual([out1.data, out0.data]);
    expect(enc.blobs[0]).toBe(out1.data); // no copies
    expect(enc.blobBytes).toBe(16);
  });

  it('per-output binary_data overrides binary_data_output; unlisted outputs use the default', () => {
    const requested = new Map([
      ['O0', { binary: true, classification: 0 }],
      ['O1', { binary: false, classification: 0 }],
    ]);
    const enc = encodeInferResponse(response([out0, out1, empty]), { defaultBinary: true, requested }, false);
    const j = JSON.parse(enc.json);
    expect(j.outputs[0].parameters).toEqual({ binary_data_size: 8 });
    expect(j.outputs[1].data).toBeDefined();
    expect(j.outputs[2].parameters).toEqual({ binary_data_size: 0 });
  });

  it("a repeated header's plan reuses the last JSON header only for a response of the same form", () => {
    const requested = new Map([['O0', { binary: true, classification: 0 }]]);
    const shared: OutputPlan = { defaultBinary: true, requested, repeated: true };
    // Each encoding through the shared plan equals the one a plan of its own gives.
    const same = (r: InferResponse) => {
      const enc = encodeInferResponse(r, shared, false);
      expect(enc).toEqual(encodeInferResponse(r, { defaultBinary: true, requested: new Map(requested) }, false));
      return enc;
    };
    same(response([out0, out1]));
    const kept = shared.lastResponse;
    expect(kept).toBeDefined();
    // Same form, other bytes: the kept header answers, and the blobs are this response's.
    const other = { ...out0, data: f32(5, 6) };
    const enc = same(response([other, out1]));
    expect(shared.lastResponse).toBe(kept);
    expect(enc.blobs[0]).toBe(other.data);
    // Any part of the form changed: encoded afresh, and then kept in its place.
    const variants: InferResponse[] = [
      response([{ ...out0, shape: [1, 2] }, out1]),
      response([{ ...out0, data: f32(1, 2, 3), shape: [3] }, out1]),
      response([{ ...out0, name: 'O2' }, out1]),
      response([{ ...out0, datatype: 'INT32' }, out1]),
      response([out0]),
      response([out0, out1], { modelVersion: '4' }),
      response([out0, out1], { modelName: 'n' }),
    ];
    for (const v of variants) {
      same(v);
      expect(shared.lastResponse).not.toBe(kept);
      same(response([out0, out1]));
    }
    // Forms that are never kept: an id, parameters, an output sent as JSON, one in shared memory.
    const unkept: InferResponse[] = [
      response([out0, out1], { id: 'r1' }),
      response([out0, out1], { parameters: { p: 1n } }),
      response([out0, { ...out1, shm: { region: 'r', offset: 0, byteSize: 8 } }]),
    ];
    for (const v of unkept) {
      same(v);
      expect(shared.lastResponse).toBeUndefined();
      same(response([out0, out1]));
      expect(shared.lastResponse).toBeDefined();
    }
    const json: OutputPlan = { defaultBinary: false, requested: new Map(requested), repeated: true };
    const a = encodeInferResponse(response([out0, out1]), json, false);
    expect(json.lastResponse).toBeUndefined();
    expect(JSON.parse(a.json).outputs[1].data).toEqual([2 ** 62]);
  });

  it('FP16 as JSON is refused', () => {
    const h = { name: 'H', datatype: 'FP16' as const, shape: [1], data: Buffer.alloc(2) };
    expectError(() => encodeInferResponse(response([h]), { defaultBinary: false }, false), ErrorCode.INVALID_ARG, /sending FP16 data via JSON/);
  });

  it('classification: top-K "value:index" strings per batch item', () => {
    const t = { name: 'P', datatype: 'FP32' as const, shape: [2, 3], data: f32(0.1, 0.7, 0.2, 3.3, 1, 2) };
    const c = classify(t, 2, true);
    expect(c.shape).toEqual([2, 2]);
    expect(splitBytesElements(c.data).map(String)).toEqual(['0.700000:1', '0.200000:2', '3.300000:0', '2.000000:2']);
    const nb = classify({ ...t, shape: [6] }, 10, false);
    expect(nb.shape).toEqual([6]);
    expect(() => classify({ ...t, datatype: 'BOOL' }, 1, false)).toThrow(TritonError);
  });
});

describe('compression', () => {
  it('request Content-Encoding', () => {
    expect(requestEncoding(undefined)).toBe('identity');
    expect(requestEncoding('gzip')).toBe('gzip');
    expect(requestEncoding('deflate')).toBe('deflate');
    expect(requestEncoding('identity')).toBe('identity');
    expect(requestEncoding('br')).toBeUndefined();
  });
  it('inflates gzip and deflate (zlib) bodies, within the limit', async () => {
    const raw = Buffer.from('{"inputs":[]}'.repeat(10));
    const budget = new BodyBudget(1 << 20);
    const body = (data: Buffer) => {
      budget.take(data.length);
      return { data, release: () => budget.give(data.length) };
    };
    const gz = await decodeBody(body(gzipSync(raw)), 'gzip', 1000, budget);
    expect(gz.data.toString()).toBe(raw.toString());
    // The compressed body was given back; the inflated one is held until released.
    expect(budget.inUse).toBe(raw.length);
    gz.release();
    expect(budget.inUse).toBe(0);
    expect((await decodeBody(body(deflateSync(raw)), 'deflate', 1000, budget)).data.toString()).toBe(raw.toString());
    await expect(decodeBody(body(gzipSync(Buffer.alloc(5000))), 'gzip', 1000, budget)).rejects.toThrow(/--http-max-input-size/);
    await expect(decodeBody(body(Buffer.from('not gzip')), 'gzip', 1000, budget)).rejects.toThrow(/failed to decompress/);
  });
  it('Accept-Encoding negotiation honours q-values', () => {
    expect(responseEncoding(undefined)).toBe('identity');
    expect(responseEncoding('gzip')).toBe('gzip');
    expect(responseEncoding('deflate;q=0.5, gzip;q=0.8')).toBe('gzip');
    expect(responseEncoding('gzip;q=0.2, deflate;q=0.9')).toBe('deflate');
    expect(responseEncoding('br, identity')).toBe('identity');
    expect(responseEncoding('gzip;q=0')).toBe('identity');
    expect(responseEncoding('br')).toBe('identity');
  });
});

describe('routing', () => {
  it('matches Triton paths and ignores the query string', () => {
    expect(matchRoute('/v2')).toEqual({ kind: 'server-metadata' });
    expect(matchRoute('/v2/health/live?x=1')).toEqual({ kind: 'health', probe: 'live' });
    expect(matchRoute('/v2/models/stats')).toEqual({ kind: 'all-stats' });
    expect(matchRoute('/v2/models/a%20b/versions/3/infer')).toEqual({ kind: 'model', model: 'a b', version: '3', action: 'infer' });
    expect(matchRoute('/v2/models/m/trace/setting')).toEqual({ kind: 'model', model: 'm', version: '', action: 'trace/setting' });
    expect(matchRoute('/v2/repository/index')).toEqual({ kind: 'repository-index', repository: '' });
    expect(matchRoute('/v2/repository/models/m/load')).toEqual({ kind: 'repository-control', repository: '', model: 'm', action: 'load' });
    expect(matchRoute('/v2/systemsharedmemory/region/r/register')).toEqual({ kind: 'shared-memory', memory: 'system', region: 'r', action: 'register' });
    expect(matchRoute('/v2/cudasharedmemory/unregister')).toEqual({ kind: 'shared-memory', memory: 'cuda', region: '', action: 'unregister' });
  });
  it('whole-path matching: versions are digits, no trailing parts', () => {
    expect(matchRoute('/v2/models/m/versions/x/infer')).toBeUndefined();
    expect(matchRoute('/v2/models/m/infer/')).toBeUndefined();
    expect(matchRoute('/v2/health')).toBeUndefined();
    expect(matchRoute('/v1/models')).toBeUndefined();
  });
  it('methods', () => {
    expect(allowedMethods({ kind: 'model', model: 'm', version: '', action: 'infer' })).toEqual(['POST']);
    expect(allowedMethods({ kind: 'model', model: 'm', version: '', action: 'config' })).toEqual(['GET']);
    expect(allowedMethods({ kind: 'logging' })).toEqual(['GET', 'POST']);
    expect(allowedMethods({ kind: 'shared-memory', memory: 'system', region: '', action: 'status' })).toEqual(['GET']);
  });
});

describe('JSON writer', () => {
  it('writes bigints as integers and skips undefined', () => {
    expect(stringifyJson({ a: 2n ** 64n - 1n, b: [1, 'x', true, null], c: undefined, d: 1e21, e: 0.5 })).toBe(
      '{"a":18446744073709551615,"b":[1,"x",true,null],"d":1000000000000000000000,"e":0.5}',
    );
  });
});
