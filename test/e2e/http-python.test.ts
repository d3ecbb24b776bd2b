/**
 * End-to-end: the real CLI serving Python models through real stub processes and shared
 * memory, driven over HTTP on loopback. Covers every endpoint of the KServe v2 HTTP protocol
 * tritium implements, inference with every datatype (JSON and binary), the execute()
 * return-value and exception texts of Triton's Python backend, and start-up failures.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_MODELS, makeRepo, shmFilesOf, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let server: Tritium;

async function infer(model: string, body: unknown, init: RequestInit = {}) {
  const res = await fetch(`${server.http}/v2/models/${model}/infer`, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

const mode = (m: string) => ({ inputs: [{ name: 'MODE', shape: [1], datatype: 'BYTES', data: [m] }] });

beforeAll(async () => {
  const repo = makeRepo(['add_sub', 'identity_all', 'misbehave', 'init_args', 'auto_complete', 'multi_file', 'string_identity']);
  server = await startTritium({ repos: [repo] });
}, 120_000);

afterAll(() => stopAndExpectNoShm(server));

describe('health and metadata', () => {
  it('answers live and ready with 200 and an empty body', async () => {
    for (const p of ['/v2/health/live', '/v2/health/ready']) {
      const res = await fetch(server.http + p);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('');
    }
  });

  it('reports server metadata with the statistics extension', async () => {
    const md = await (await fetch(`${server.http}/v2`)).json();
    expect(md.name).toBe('triton');
    expect(typeof md.version).toBe('string');
    expect(md.extensions).toContain('statistics');
    expect(md.extensions).toContain('binary_tensor_data');
  });

  it('reports model metadata in config order with the python platform', async () => {
    const md = await (await fetch(`${server.http}/v2/models/add_sub`)).json();
    expect(md).toMatchObject({ name: 'add_sub', versions: ['1'], platform: 'python' });
    expect(md.inputs.map((i: { name: string }) => i.name)).toEqual(['INPUT0', 'INPUT1']);
    expect(md.inputs[0]).toEqual({ name: 'INPUT0', datatype: 'FP32', shape: [4] });
    const v = await (await fetch(`${server.http}/v2/models/add_sub/versions/1`)).json();
    expect(v.versions).toEqual(['1']);
  });

  it('answers model readiness and lookup errors with Triton texts and codes', async () => {
    expect((await fetch(`${server.http}/v2/models/add_sub/ready`)).status).toBe(200);
    const unknown = await fetch(`${server.http}/v2/models/nope/ready`);
    expect(unknown.status).toBe(404);
    const missingVersion = await fetch(`${server.http}/v2/models/add_sub/versions/7`);
    expect(missingVersion.status).toBe(404);
    expect((await missingVersion.json()).error).toBe("Request for unknown model: 'add_sub' version 7 is not found");
    const meta = await fetch(`${server.http}/v2/models/nope`);
    expect(meta.status).toBe(404);
    expect((await meta.json()).error).toBe("Request for unknown model: 'nope' is not found");
  });

  it('renders the normalised config as Triton does', async () => {
    const cfg = await (await fetch(`${server.http}/v2/models/add_sub/config`)).json();
    expect(cfg).toMatchObject({
      name: 'add_sub',
      platform: '',
      backend: 'python',
      max_batch_size: 0,
      default_model_filename: 'model.py',
      version_policy: { latest: { num_versions: 1 } },
    });
    expect(cfg.input[0]).toMatchObject({ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [4], optional: false });
    expect(cfg.instance_group[0]).toMatchObject({ kind: 'KIND_CPU', count: 1 });
  });

  it('completes a config without config.pbtxt through auto_complete_config', async () => {
    const cfg = await (await fetch(`${server.http}/v2/models/auto_complete/config`)).json();
    expect(cfg.backend).toBe('python');
    expect(cfg.input.length).toBeGreaterThan(0);
    expect(cfg.output.length).toBeGreaterThan(0);
  });

  it('answers unknown paths and wrong methods like Triton', async () => {
    const nf = await fetch(`${server.http}/v3/whatever`);
    expect(nf.status).toBe(404);
    expect(await nf.json()).toEqual({ error: 'Not Found' });
    const wrong = await fetch(`${server.http}/v2/models/add_sub/infer`);
    expect(wrong.status).toBe(405);
    expect(await wrong.json()).toEqual({ error: 'Method Not Allowed' });
  });
});

describe('inference', () => {
  it('adds and subtracts with JSON tensors', async () => {
    const r = await infer('add_sub', {
      id: 'req-1',
      inputs: [
        { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
        {
          name: 'INPUT1',
          shape: [4],
          datatype: 'FP32',
          data: [
            [0.5, 0.5],
            [1, 1],
          ],
        },
      ],
    });
    expect(r.status).toBe(200);
    expect(r.body.id).toBe('req-1');
    expect(r.body.model_name).toBe('add_sub');
    expect(r.body.model_version).toBe('1');
    const out = Object.fromEntries(r.body.outputs.map((o: { name: string; data: number[] }) => [o.name, o.data]));
    expect(out.OUTPUT0).toEqual([1.5, 2.5, 4, 5]);
    expect(out.OUTPUT1).toEqual([0.5, 1.5, 2, 3]);
  });

  it('round-trips every JSON datatype through a stub', async () => {
    const cases: Array<[string, unknown[]]> = [
      ['BOOL', [true, false, true]],
      ['UINT8', [0, 255]],
      ['UINT16', [0, 65535]],
      ['UINT32', [0, 4294967295]],
      ['UINT64', [0, 9007199254740991]],
      ['INT8', [-128, 127]],
      ['INT16', [-32768, 32767]],
      ['INT32', [-2147483648, 2147483647]],
      ['INT64', [-9007199254740991, 9007199254740991]],
      ['FP32', [1.5, -2.25]],
      ['FP64', [1e300, -1e-300]],
      ['BYTES', ['hello', '', 'wörld']],
    ];
    for (const [dt, data] of cases) {
      const name = dt === 'BYTES' ? 'STRING' : dt;
      const r = await infer('identity_all', { inputs: [{ name: `IN_${name}`, shape: [data.length], datatype: dt, data }] });
      expect(r.status, `${dt}: ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.body.outputs).toEqual([{ name: `OUT_${name}`, datatype: dt, shape: [data.length], data }]);
    }
  });

  it('round-trips every datatype as binary tensors, FP16 included', async () => {
    const cases: Array<[string, Buffer, number]> = [
      ['BOOL', Buffer.from([1, 0, 1]), 3],
      ['UINT8', Buffer.from([0, 7, 255]), 3],
      ['UINT16', Buffer.from(new Uint16Array([1, 65535]).buffer), 2],
      ['UINT32', Buffer.from(new Uint32Array([1, 4294967295]).buffer), 2],
      ['UINT64', Buffer.from(new BigUint64Array([1n, 18446744073709551615n]).buffer), 2],
      ['INT8', Buffer.from(new Int8Array([-1, 5]).buffer), 2],
      ['INT16', Buffer.from(new Int16Array([-1, 5]).buffer), 2],
      ['INT32', Buffer.from(new Int32Array([-1, 5]).buffer), 2],
      ['INT64', Buffer.from(new BigInt64Array([-9223372036854775808n, 9223372036854775807n]).buffer), 2],
      ['FP16', Buffer.from([0x00, 0x3c, 0x00, 0xc0]), 2],
      ['FP32', Buffer.from(new Float32Array([1.5, -3]).buffer), 2],
      ['FP64', Buffer.from(new Float64Array([1.5, -3]).buffer), 2],
      ['BYTES', Buffer.concat([Buffer.from([2, 0, 0, 0]), Buffer.from('hi'), Buffer.from([0, 0, 0, 0])]), 2],
    ];
    for (const [dt, data, n] of cases) {
      const name = dt === 'BYTES' ? 'STRING' : dt;
      const header = Buffer.from(
        JSON.stringify({
          inputs: [{ name: `IN_${name}`, shape: [n], datatype: dt, parameters: { binary_data_size: data.length } }],
          outputs: [{ name: `OUT_${name}`, parameters: { binary_data: true } }],
        }),
      );
      const res = await fetch(`${server.http}/v2/models/identity_all/infer`, {
        method: 'POST',
        headers: { 'Inference-Header-Content-Length': String(header.length), 'Content-Type': 'application/octet-stream' },
        body: Buffer.concat([header, data]),
      });
      expect(res.status, dt).toBe(200);
      const body = Buffer.from(await res.arrayBuffer());
      const jsonLen = Number(res.headers.get('inference-header-content-length'));
      const json = JSON.parse(body.subarray(0, jsonLen).toString());
      expect(json.outputs[0]).toEqual({ name: `OUT_${name}`, datatype: dt, shape: [n], parameters: { binary_data_size: data.length } });
      expect(body.subarray(jsonLen).equals(data), dt).toBe(true);
    }
  });

  it("refuses BF16 as numpy inside the model with Triton's text", async () => {
    const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'IN_BF16', shape: [1], datatype: 'BF16', parameters: { binary_data_size: 2 } }] }));
    const res = await fetch(`${server.http}/v2/models/identity_all/infer`, {
      method: 'POST',
      headers: { 'Inference-Header-Content-Length': String(header.length) },
      body: Buffer.concat([header, Buffer.from([0x80, 0x3f])]),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toContain('Tensor dtype is BF16 and cannot be converted to NumPy');
  });

  it('serves BYTES tensors and sibling-file imports', async () => {
    const s = await infer('string_identity', { inputs: [{ name: 'INPUT0', shape: [1, 2], datatype: 'BYTES', data: ['a', 'bc'] }] });
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    expect(s.body.outputs[0].datatype).toBe('BYTES');
    const cfg = await (await fetch(`${server.http}/v2/models/multi_file/config`)).json();
    const inputs = cfg.input.map((i: { name: string; data_type: string; dims: number[] }) => ({
      name: i.name,
      shape: i.dims.map((d: number) => (d < 0 ? 1 : d)),
      datatype: i.data_type === 'TYPE_STRING' ? 'BYTES' : i.data_type.slice(5),
      data: Array(i.dims.reduce((a: number, d: number) => a * (d < 0 ? 1 : d), 1)).fill(i.data_type === 'TYPE_STRING' ? 'x' : 1),
    }));
    const m = await infer('multi_file', { inputs });
    expect(m.status, JSON.stringify(m.body)).toBe(200);
  });

  it('passes the seven initialize args with Triton values', async () => {
    const r = await infer('init_args', { inputs: [{ name: 'IN', shape: [1], datatype: 'FP32', data: [0] }] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const args = JSON.parse(r.body.outputs[0].data[0]);
    expect(Object.keys(args).sort()).toEqual(
      ['model_config', 'model_instance_device_id', 'model_instance_kind', 'model_instance_name', 'model_name', 'model_repository', 'model_version'].sort(),
    );
    expect(args.model_name).toBe('init_args');
    expect(args.model_version).toBe('1');
    expect(args.model_instance_kind).toBe('CPU');
    expect(args.model_instance_device_id).toBe('0');
    expect(args.model_instance_name).toMatch(/^init_args_0(_0)?$/);
    expect(args.model_repository).toMatch(/init_args$/);
    expect(JSON.parse(args.model_config).name).toBe('init_args');
  });
});

describe('execute() outcomes and errors', () => {
  it("turns an exception into Triton's error and stays ready", async () => {
    const r = await infer('misbehave', mode('raise'));
    expect(r.status).toBe(500);
    expect(r.body.error).toMatch(/^Failed to process the request\(s\) for model 'misbehave_0(_0)?', message: ValueError: intentional failure/);
    expect((await fetch(`${server.http}/v2/models/misbehave/ready`)).status).toBe(200);
    const ok = await infer('misbehave', mode('ok'));
    expect(ok.status).toBe(200);
  });

  it('reports wrong return values with the exact texts', async () => {
    const tuple = await infer('misbehave', mode('tuple'));
    expect(tuple.status).toBe(500);
    // Like Triton's stub, batch-level errors are wrapped in the "Failed to process" prefix.
    expect(tuple.body.error).toMatch(/^Failed to process the request\(s\) for model 'misbehave_0(_0)?', message: /);
    expect(tuple.body.error).toContain("Expected a list in the execute return, found type '<class 'tuple'>'.");
    const count = await infer('misbehave', mode('wrong_count'));
    expect(count.body.error).toContain(
      'Number of InferenceResponse objects do not match the number of InferenceRequest objects. InferenceRequest(s) size is:1, and InferenceResponse(s) size is:2',
    );
    const type = await infer('misbehave', mode('wrong_type'));
    expect(type.body.error).toContain("Expected an 'InferenceResponse' object in the execute function return list, found type '<class 'str'>'.");
  });

  it("from_dlpack of a non-DLPack object raises Triton's TritonModelException in the model", async () => {
    const r = await infer('misbehave', mode('not_dlpack'));
    expect(r.status).toBe(500);
    expect(r.body.error).toMatch(
      /^Failed to process the request\(s\) for model 'misbehave_0', message: TritonModelException: Provided tensor is not supported\. Tensor must be a DLPack capsule {9}or have `__dlpack__` and `__dlpack_device__` attributes\n\nAt:\n {2}\S+model\.py\(\d+\): execute\n$/,
    );
  });

  it('answers a request that got no response instead of hanging', async () => {
    const r = await infer('misbehave', mode('none'));
    expect(r.status).toBe(500);
    expect(r.body.error).toBe("Python model 'misbehave_0' released the request without sending a response with the FINAL flag.");
  });

  it('delivers responses sent through the response sender', async () => {
    const r = await infer('misbehave', mode('sender'));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.outputs[0].data).toEqual([7]);
  });

  it('maps a TritonError code to its HTTP status', async () => {
    const r = await infer('misbehave', mode('error'));
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('bad input');
  });
});

describe('request validation', () => {
  const cases: Array<[string, unknown, number, string | RegExp]> = [
    ['unknown model', { inputs: [] }, 404, "Request for unknown model: 'nope' is not found"],
    ['malformed JSON', '{"inputs": [', 400, /.+/],
    [
      'wrong input count',
      { inputs: [{ name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] }] },
      400,
      "expected 2 inputs but got 1 inputs for model 'add_sub'",
    ],
    ['unknown input', { inputs: [{ name: 'X', shape: [1], datatype: 'FP32', data: [1] }] }, 400, "unexpected inference input 'X' for model 'add_sub'"],
    [
      'wrong datatype',
      {
        inputs: [
          { name: 'INPUT0', shape: [4], datatype: 'FP64', data: [1, 2, 3, 4] },
          { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
        ],
      },
      400,
      "inference input 'INPUT0' data-type is 'FP64', but model 'add_sub' expects 'FP32'",
    ],
    [
      'wrong shape',
      {
        inputs: [
          { name: 'INPUT0', shape: [2], datatype: 'FP32', data: [1, 2] },
          { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
        ],
      },
      400,
      /unexpected shape for input 'INPUT0' for model 'add_sub'. Expected \[4\], got \[2\]/,
    ],
    [
      'unknown output',
      {
        inputs: [
          { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
          { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
        ],
        outputs: [{ name: 'NOPE' }],
      },
      400,
      "unexpected inference output 'NOPE' for model 'add_sub'",
    ],
  ];
  for (const [what, body, status, msg] of cases) {
    it(`rejects ${what}`, async () => {
      const r = await infer(what === 'unknown model' ? 'nope' : 'add_sub', body);
      expect(r.status).toBe(status);
      if (typeof msg === 'string') expect(r.body.error).toBe(msg);
      else expect(r.body.error).toMatch(msg);
    });
  }
});

describe('start-up failures', () => {
  it('fails the load with the initialize exception text', async () => {
    const repo = makeRepo(['init_fails', 'add_sub']);
    const s = await startTritium({ repos: [repo], expectFailure: true });
    const { code } = await s.exited;
    expect(code).not.toBe(0);
    expect(s.log()).toContain("NameError: name 'lorem_ipsum' is not defined");
    expect(shmFilesOf(s.proc.pid)).toEqual([]);
  }, 60_000);

  it("a missing model.py logs Triton's preinitialize text as well as the load failure", async () => {
    const repo = makeRepo([{ from: path.join(TEST_MODELS, 'init_fails'), name: 'no_model_file' }, 'add_sub']);
    const file = path.join(repo, 'no_model_file', '1', 'model.py');
    fs.rmSync(file);
    const s = await startTritium({ repos: [repo], args: ['--exit-on-error=false'] });
    try {
      expect(s.log()).toContain(`Failed to preinitialize Python stub: Python model file not found in '${file}'`);
      expect(s.log()).toMatch(/E\d{4} [\d:.]+ \d+ [^\]]*\] "failed to load 'no_model_file'/);
      const idx = await (await fetch(`http://127.0.0.1:${s.httpPort}/v2/repository/index`, { method: 'POST' })).json();
      expect(idx.find((m: { name: string }) => m.name === 'no_model_file').state).toBe('UNAVAILABLE');
    } finally {
      await s.stop();
    }
  }, 60_000);

  it('keeps serving the other models with --exit-on-error=false', async () => {
    const repo = makeRepo(['init_fails', 'add_sub']);
    const s = await startTritium({ repos: [repo], args: ['--exit-on-error=false'] });
    try {
      expect((await fetch(`http://127.0.0.1:${s.httpPort}/v2/models/add_sub/ready`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${s.httpPort}/v2/health/ready`)).status).toBe(400);
      const idx = await (await fetch(`http://127.0.0.1:${s.httpPort}/v2/repository/index`, { method: 'POST' })).json();
      const failed = idx.find((m: { name: string }) => m.name === 'init_fails');
      expect(failed.state).toBe('UNAVAILABLE');
      expect(failed.reason).toContain('lorem_ipsum');
    } finally {
      await s.stop();
    }
  }, 60_000);

  it('leaves no shared memory after SIGINT', async () => {
    const repo = makeRepo(['add_sub']);
    const s = await startTritium({ repos: [repo] });
    const pid = s.proc.pid;
    expect(shmFilesOf(pid).length).toBeGreaterThan(0);
    const { code } = await s.stop('SIGINT');
    expect(code).toBe(0);
    expect(shmFilesOf(pid)).toEqual([]);
  }, 60_000);
});
