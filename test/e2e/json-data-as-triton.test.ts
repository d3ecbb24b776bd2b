/**
 * JSON tensor data and requested outputs as tritonserver 2.51 treats them (each answer below was
 * taken from it): an integer literal beyond 64 bits (1e20), or one written as a float (1.0,
 * 1e2), is not an integer and is refused with 500, a 64-bit integer beyond a narrower type wraps like a C cast, an output named twice is one
 * output (the first entry's choices stand), an undeclared output is refused, and a 0-d output
 * has shape [].
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['identity_all', 'scalar_output'])] });
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

  it('reports a 0-d output with shape []', async () => {
    const r = await infer('scalar_output', '{"inputs":[{"name":"IN","datatype":"INT32","shape":[1],"data":[5]}]}');
    expect(r).toEqual({
      status: 200,
      body: { model_name: 'scalar_output', model_version: '1', outputs: [{ name: 'OUT', datatype: 'INT32', shape: [], data: [7] }] },
    });
  });
});
