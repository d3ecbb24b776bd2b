/**
 * JSON tensor data and requested outputs as tritonserver 2.51 treats them (each answer below was
 * taken from it): an integer literal beyond 64 bits (1e20), or one written as a float (1.0,
 * 1e2), is not an integer and is refused with 500, a 64-bit integer beyond a narrower type wraps like a C cast, an output named twice is one
 * output (the first entry's choices stand), an undeclared output is refused, and a 0-d output
 * has shape []. Elements of the wrong JSON kind, `data` that is not an array and a number of
 * elements that disagrees with the shape are refused with 500 (400 for BYTES, whose count the
 * request validation checks), and an output the model returns without the config declaring it
 * is left out of the response.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, pythonResult, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['identity_all', 'scalar_output', 'undeclared_output'])] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

async function infer(model: string, body: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.http}/v2/models/${model}/infer`, { method: 'POST', body });
  return { status: res.status, body: await res.json() };
}

/** One JSON input of identity_all, its literal written as given (so that 1e20 stays 1e20). */
const one = (datatype: string, literal: string): string =>
  `{"inputs":[{"name":"IN_${datatype}","datatype":"${datatype}","shape":[1],"data":[${literal}]}],"outputs":[{"name":"OUT_${datatype}"}]}`;

describe('JSON tensor data', () => {
  it.each([
    ['INT32', '1e20', 'signed-integer'],
    ['INT32', '1.5', 'signed-integer'],
    ['INT64', '9223372036854775808', 'signed-integer'],
    ['INT64', '-9223372036854775809', 'signed-integer'],
    ['INT64', '1e20', 'signed-integer'],
    ['UINT64', '18446744073709551616', 'unsigned-integer'],
    ['UINT64', '-1', 'unsigned-integer'],
    ['UINT8', '-1', 'unsigned-integer'],
    ['BOOL', '1', 'boolean'],
    // rapidjson keeps a literal with a fraction or exponent as a double, whole or not
    ['INT32', '2147483647.0', 'signed-integer'],
    ['INT32', '1e2', 'signed-integer'],
    ['UINT8', '2e0', 'unsigned-integer'],
  ])('refuses %s %s as Triton does', async (datatype, literal, kind) => {
    const r = await infer('identity_all', one(datatype, literal));
    expect(r).toEqual({ status: 500, body: { error: `Unable to parse 'data': attempt to access JSON non-${kind} as ${kind}` } });
  });

  // Each element kind a client may get wrong, in each family of types (Triton calls a float a double).
  const wrongKinds = ['"a"', '{}', '{"a":1}', 'null', '[["x"]]'];
  it.each([
    ...wrongKinds.flatMap((w) => [
      ['FP32', w, 'number', 'double'],
      ['FP64', w, 'number', 'double'],
      ['INT32', w, 'signed-integer', 'signed-integer'],
      ['UINT64', w, 'unsigned-integer', 'unsigned-integer'],
      ['BOOL', w, 'boolean', 'boolean'],
    ]),
    ['FP32', 'true', 'number', 'double'],
    ['FP64', 'false', 'number', 'double'],
    ['INT8', 'true', 'signed-integer', 'signed-integer'],
  ])('refuses %s element %s with 500, as Triton does', async (datatype, literal, kind, as) => {
    const r = await infer('identity_all', one(datatype, literal));
    expect(r).toEqual({ status: 500, body: { error: `Unable to parse 'data': attempt to access JSON non-${kind} as ${as}` } });
  });

  it.each(['1', '1.5', 'true', 'null', '{}', '[null]'])('refuses BYTES element %s with 500, as Triton does', async (literal) => {
    const r = await infer('identity_all', one('STRING', literal).replace('"datatype":"STRING"', '"datatype":"BYTES"'));
    expect(r).toEqual({ status: 500, body: { error: 'Unable to parse JSON bytes array: attempt to access JSON non-string as string' } });
  });

  it.each([
    ['FP32', '"abc"'],
    ['INT32', '{}'],
    ['BOOL', 'null'],
    ['BYTES', '1'],
    ['FP16', '"x"'], // the JSON kind is looked at before the datatype
  ])('refuses %s data %s, not an array, with 500, as Triton does', async (datatype, data) => {
    const name = datatype === 'BYTES' ? 'IN_STRING' : `IN_${datatype}`;
    const r = await infer('identity_all', `{"inputs":[{"name":"${name}","datatype":"${datatype}","shape":[1],"data":${data}}]}`);
    expect(r).toEqual({ status: 500, body: { error: "Unable to parse 'data': attempt to access JSON non-array as array" } });
  });

  it.each([
    ['FP32', '[2]', '[1]'],
    ['FP32', '[2]', '[1,2,"x"]'], // the count is checked before the kind of the extra element
    ['INT32', '[1]', '[1,2]'],
    ['BOOL', '[1]', '[[]]'],
  ])('refuses %s shape %s with data %s with 500, as Triton does', async (datatype, shape, data) => {
    const r = await infer('identity_all', `{"inputs":[{"name":"IN_${datatype}","datatype":"${datatype}","shape":${shape},"data":${data}}]}`);
    expect(r).toEqual({ status: 500, body: { error: "Unable to parse 'data': Shape does not match true shape of 'data' field" } });
  });

  it.each([
    ['[2]', '["a"]', 2, 1],
    ['[2]', '["a","b","c"]', 2, 3],
    ['[1]', '[[]]', 1, 0],
  ])('refuses BYTES shape %s with data %s as a request of the wrong element count, 400', async (shape, data, expected, got) => {
    const r = await infer('identity_all', `{"inputs":[{"name":"IN_STRING","datatype":"BYTES","shape":${shape},"data":${data}}]}`);
    expect(r).toEqual({ status: 400, body: { error: `expected ${expected} string elements for inference input 'IN_STRING', got ${got}` } });
  });

  it.each([
    ['INT32', '1099511627776', 0], // 2^40
    ['INT32', '2147483648', -2147483648],
    ['UINT8', '256', 0],
    ['INT8', '-129', 127],
    ['UINT16', '70000', 4464],
  ])('wraps the 64-bit integer %s %s to the type as Triton does', async (datatype, literal, expected) => {
    const r = await infer('identity_all', one(datatype, literal));
    expect(r.status).toBe(200);
    expect(r.body.outputs[0].data).toEqual([expected]);
  });

  it('takes float literals for float tensors beside integer ones', async () => {
    const r = await infer(
      'identity_all',
      '{"inputs":[{"name":"IN_FP32","datatype":"FP32","shape":[2],"data":[1.0,2.5e0]},{"name":"IN_INT32","datatype":"INT32","shape":[1],"data":[3]}],"outputs":[{"name":"OUT_FP32"},{"name":"OUT_INT32"}]}',
    );
    expect(r.status).toBe(200);
    expect(r.body.outputs.map((o: { data: number[] }) => o.data)).toEqual([[1, 2.5], [3]]);
  });

  it('keeps the 64-bit extremes exact', async () => {
    const r = await fetch(`${server.http}/v2/models/identity_all/infer`, { method: 'POST', body: one('INT64', '9223372036854775807') });
    expect(await r.text()).toContain('"data":[9223372036854775807]');
    const u = await fetch(`${server.http}/v2/models/identity_all/infer`, { method: 'POST', body: one('UINT64', '18446744073709551615') });
    expect(await u.text()).toContain('"data":[18446744073709551615]');
  });
});

describe('requested outputs', () => {
  it('answers an output named twice once, with the first entry’s choices', async () => {
    const r = await infer(
      'identity_all',
      '{"inputs":[{"name":"IN_INT32","datatype":"INT32","shape":[1],"data":[5]}],"outputs":[{"name":"OUT_INT32"},{"name":"OUT_INT32","parameters":{"binary_data":true}}]}',
    );
    expect(r).toEqual({
      status: 200,
      body: { model_name: 'identity_all', model_version: '1', outputs: [{ name: 'OUT_INT32', datatype: 'INT32', shape: [1], data: [5] }] },
    });
  });

  it('refuses an undeclared output', async () => {
    const r = await infer('identity_all', '{"inputs":[{"name":"IN_INT32","datatype":"INT32","shape":[1],"data":[5]}],"outputs":[{"name":"NOPE"}]}');
    expect(r).toEqual({ status: 400, body: { error: "unexpected inference output 'NOPE' for model 'identity_all'" } });
  });

  // tritonserver 2.51 answers 200 and leaves the tensor out, whether the client names outputs or not.
  it.each([
    ['no requested outputs', ''],
    ['OUTPUT0 requested', ',"outputs":[{"name":"OUTPUT0"}]'],
    ['OUTPUT0 requested as binary', ',"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]'],
  ])('leaves out an output the model returns but the config does not declare (%s)', async (_, outputs) => {
    const r = await infer('undeclared_output', `{"inputs":[{"name":"IN","datatype":"INT32","shape":[1],"data":[0]}]${outputs}}`);
    expect(r).toEqual({ status: 200, body: { model_name: 'undeclared_output', model_version: '1', outputs: [] } });
  });

  it('answers the declared outputs beside an undeclared one', async () => {
    const r = await infer('undeclared_output', '{"inputs":[{"name":"IN","datatype":"INT32","shape":[1],"data":[1]}]}');
    expect(r).toEqual({
      status: 200,
      body: { model_name: 'undeclared_output', model_version: '1', outputs: [{ name: 'OUTPUT0', datatype: 'INT32', shape: [1], data: [2] }] },
    });
  });

  it('leaves it out over gRPC as well (tritonclient)', async () => {
    const res = await pythonResult(
      `import json, numpy as np
import tritonclient.grpc as grpcclient
gc = grpcclient.InferenceServerClient('127.0.0.1:${server.grpcPort}')`,
      `for v in (0, 1):
    for names in ([], ['OUTPUT0']):
        i = grpcclient.InferInput('IN', [1], 'INT32'); i.set_data_from_numpy(np.array([v], dtype=np.int32))
        r = gc.infer('undeclared_output', [i], outputs=[grpcclient.InferRequestedOutput(n) for n in names] or None)
        res['%d %s' % (v, names)] = [[o.name for o in r.get_response().outputs], len(r.get_response().raw_output_contents), r.as_numpy('NOT_DECLARED') is None]`,
    );
    expect(res).toEqual({
      '0 []': [[], 0, true],
      "0 ['OUTPUT0']": [[], 0, true],
      '1 []': [['OUTPUT0'], 1, true],
      "1 ['OUTPUT0']": [['OUTPUT0'], 1, true],
    });
  }, 60_000);

  it('reports a 0-d output with shape []', async () => {
    const r = await infer('scalar_output', '{"inputs":[{"name":"IN","datatype":"INT32","shape":[1],"data":[5]}]}');
    expect(r).toEqual({
      status: 200,
      body: { model_name: 'scalar_output', model_version: '1', outputs: [{ name: 'OUT', datatype: 'INT32', shape: [], data: [7] }] },
    });
  });
});

describe('members of the request JSON of the wrong type, or missing', () => {
  const IN = '{"name":"IN_FP32","datatype":"FP32","shape":[1],"data":[1]}';
  it.each([
    [
      'a fractional sequence_id',
      `{"parameters":{"sequence_id":1.5},"inputs":[${IN}]}`,
      "Unable to parse 'sequence_id': attempt to access JSON non-string as string",
    ],
    [
      'a string sequence_start',
      `{"parameters":{"sequence_start":"yes"},"inputs":[${IN}]}`,
      "Unable to parse 'sequence_start': attempt to access JSON non-boolean as boolean",
    ],
    [
      'a negative priority',
      `{"parameters":{"priority":-1},"inputs":[${IN}]}`,
      "Unable to parse 'priority': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
    ['a numeric id', `{"id":5,"inputs":[${IN}]}`, "Unable to parse 'id': attempt to access JSON non-string as string"],
    ['inputs that are not an array', '{"inputs":{}}', "Unable to parse 'inputs': attempt to access JSON non-array as array"],
    ['no inputs', '{"outputs":[]}', "Unable to parse 'inputs': attempt to access non-existing object member 'inputs'"],
    ['an output without a name', `{"inputs":[${IN}],"outputs":[{}]}`, "Unable to parse 'name': attempt to access non-existing object member 'name'"],
    [
      'a shape of -1',
      '{"inputs":[{"name":"IN_FP32","datatype":"FP32","shape":[-1],"data":[1]}]}',
      "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer",
    ],
  ])("answers %s with 500 and TritonJson's text, as Triton 2.51", async (_what, body, error) => {
    expect(await infer('identity_all', body)).toEqual({ status: 500, body: { error } });
  });

  it('answers request parameters that are not an object, and inputs and outputs that are not objects, as Triton 2.51', async () => {
    for (const params of ['5', '[]']) {
      expect(await infer('identity_all', `{"parameters":${params},"inputs":[${IN}]}`)).toEqual({
        status: 500,
        body: { error: 'failed to get request params.: attempt to get members for non-object' },
      });
    }
    expect(await infer('identity_all', `{"inputs":[${IN}],"outputs":[5]}`)).toEqual({
      status: 500,
      body: { error: "Unable to parse 'name': attempt to access non-existing object member 'name'" },
    });
    expect(await infer('identity_all', `{"inputs":[5]}`)).toEqual({
      status: 400,
      body: {
        error:
          "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But no field is set",
      },
    });
  });
});
