/**
 * Client system shared memory against the real server, with tritonclient's own shared-memory
 * utilities and perf_analyzer `--shared-memory=system`: register / status / unregister over
 * HTTP and gRPC with Triton's texts (compared with Triton 2.51), inputs read from and outputs
 * written to registered regions, bounds and size errors, and a region unregistered while a
 * request uses it staying valid until that request is answered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWindows, perfAnalyzer } from '../helpers/perf-analyzer.js';
import { makeRepo, pythonResult, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['add_sub', 'slow_execute'])] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

/** Imports, both clients, a fresh pair of regions (16 + 16 input bytes, 32 output bytes) and a `show` helper. */
function prelude(tag: string): string {
  return `import json, os, numpy as np, urllib.request, urllib.error
import tritonclient.http as httpclient, tritonclient.grpc as grpcclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException
base = 'http://127.0.0.1:${server.httpPort}'
hc = httpclient.InferenceServerClient('127.0.0.1:${server.httpPort}')
gc = grpcclient.InferenceServerClient('127.0.0.1:${server.grpcPort}')
def call(method, path, body=None):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(base + path, data=data, method=method)
    try:
        with urllib.request.urlopen(req) as r:
            return [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        return [e.code, e.read().decode()]
h_in = shm.create_shared_memory_region('in_${tag}', '/client_shm_test_in_${tag}_' + str(os.getpid()), 32)
h_out = shm.create_shared_memory_region('out_${tag}', '/client_shm_test_out_${tag}_' + str(os.getpid()), 32)
in_key = '/client_shm_test_in_${tag}_' + str(os.getpid())
out_key = '/client_shm_test_out_${tag}_' + str(os.getpid())
a = np.arange(4, dtype=np.float32); b = np.full(4, 10, dtype=np.float32)
shm.set_shared_memory_region(h_in, [a, b])`;
}

const EPILOGUE = `
shm.destroy_shared_memory_region(h_in); shm.destroy_shared_memory_region(h_out)`;

describe('system shared memory', () => {
  it('registers, lists and unregisters regions over HTTP with Triton’s answers', async () => {
    const res = await pythonResult(
      prelude('h'),
      `call('POST', '/v2/systemsharedmemory/unregister')
res['register'] = call('POST', '/v2/systemsharedmemory/region/in/register', {'key': in_key, 'offset': 0, 'byte_size': 32})
res['duplicate'] = call('POST', '/v2/systemsharedmemory/region/in/register', {'key': in_key, 'offset': 0, 'byte_size': 32})
res['no_object'] = call('POST', '/v2/systemsharedmemory/region/x/register', {'key': '/tritium_no_such_object', 'offset': 0, 'byte_size': 8})
res['past_end'] = call('POST', '/v2/systemsharedmemory/region/x/register', {'key': out_key, 'offset': 8, 'byte_size': 32})
res['zero'] = call('POST', '/v2/systemsharedmemory/region/x/register', {'key': out_key, 'offset': 0, 'byte_size': 0})
res['no_key'] = call('POST', '/v2/systemsharedmemory/region/x/register', {'offset': 0, 'byte_size': 8})
res['no_size'] = call('POST', '/v2/systemsharedmemory/region/x/register', {'key': out_key})
res['negative'] = call('POST', '/v2/systemsharedmemory/region/x/register', {'key': out_key, 'offset': -1, 'byte_size': 8})
res['key_type'] = call('POST', '/v2/systemsharedmemory/region/x/register', {'key': 5, 'byte_size': 8})
res['escape'] = call('POST', '/v2/systemsharedmemory/region/x/register', {'key': '/../etc/passwd', 'offset': 0, 'byte_size': 8})
res['stub_region'] = call('POST', '/v2/systemsharedmemory/region/x/register', {'key': '/tritium_1_add_sub_0', 'offset': 0, 'byte_size': 8})
res['register_out'] = call('POST', '/v2/systemsharedmemory/region/out/register', {'key': out_key, 'offset': 0, 'byte_size': 32})
res['status'] = call('GET', '/v2/systemsharedmemory/status')
res['status_one'] = call('GET', '/v2/systemsharedmemory/region/out/status')
res['status_unknown'] = call('GET', '/v2/systemsharedmemory/region/zz/status')
res['unregister_one'] = call('POST', '/v2/systemsharedmemory/region/in/unregister')
res['unregister_unknown'] = call('POST', '/v2/systemsharedmemory/region/zz/unregister')
res['after_one'] = call('GET', '/v2/systemsharedmemory/status')
res['unregister_all'] = call('POST', '/v2/systemsharedmemory/unregister')
res['after_all'] = call('GET', '/v2/systemsharedmemory/status')`,
      EPILOGUE,
    );
    const err = (status: number, error: string) => [status, JSON.stringify({ error })];
    expect(res.register).toEqual([200, '']);
    expect(res.duplicate).toEqual(err(400, "shared memory region 'in' already in manager"));
    expect(res.no_object).toEqual(err(500, "Unable to open shared memory region: '/tritium_no_such_object'"));
    expect(res.past_end).toEqual(err(400, "failed to register shared memory region 'x': invalid args"));
    expect(res.zero).toEqual(err(400, "failed to register shared memory region 'x': unable to process address spaceInvalid argument"));
    expect(res.no_key).toEqual(err(400, "Shared memory register request has no 'key' field"));
    expect(res.no_size).toEqual(err(400, "Shared memory register request has no 'byte_size' field"));
    expect(res.negative).toEqual(err(500, 'attempt to access JSON non-unsigned-integer as unsigned-integer'));
    expect(res.key_type).toEqual(err(500, 'attempt to access JSON non-string as string'));
    expect(res.escape).toEqual(err(500, "Unable to open shared memory region: '/../etc/passwd'"));
    expect(res.stub_region[0]).toBe(400);
    expect(JSON.parse(res.stub_region[1]).error).toContain('cannot be registered');
    expect(res.register_out).toEqual([200, '']);
    const outKey = JSON.parse(res.status_one[1])[0].key as string;
    expect(JSON.parse(res.status[1])).toEqual([
      { name: 'in', key: expect.stringMatching(/^\/client_shm_test_in_h_/), offset: 0, byte_size: 32 },
      { name: 'out', key: outKey, offset: 0, byte_size: 32 },
    ]);
    expect(res.status_unknown).toEqual(err(404, "Unable to find system shared memory region: 'zz'"));
    expect(res.unregister_one).toEqual([200, '']);
    expect(res.unregister_unknown).toEqual([200, '']);
    expect(JSON.parse(res.after_one[1]).map((r: { name: string }) => r.name)).toEqual(['out']);
    expect(res.after_all).toEqual([200, '[]']);
  }, 60_000);

  it('refuses register numbers TritonJson does not read as unsigned with 500, and a zero size with 400, as Triton 2.51', async () => {
    const res = await pythonResult(
      prelude('n'),
      `call('POST', '/v2/systemsharedmemory/unregister')
# Bodies written as given: json.dumps would print 1e20 as 1e+20 and cannot write 2^64 as a float.
def reg(offset, size):
    return call('POST', '/v2/systemsharedmemory/region/x/register', ('{"key":"%s","offset":%s,"byte_size":%s}' % (out_key, offset, size)).encode())
for name, offset, size in [('offset_negative', '-1', '8'), ('offset_huge', '1e20', '8'), ('offset_float', '0.0', '8'), ('offset_null', 'null', '8'),
                           ('offset_string', '"0"', '8'), ('size_negative', '0', '-1'), ('size_huge', '0', '1e20'), ('size_float', '0', '8.0'),
                           ('size_fraction', '0', '1.5'), ('size_2_64', '0', '18446744073709551616'), ('size_bool', '0', 'true'), ('size_array', '0', '[8]')]:
    res[name] = reg(offset, size)
res['size_max'] = reg('0', '18446744073709551615')
res['offset_before_size'] = call('POST', '/v2/systemsharedmemory/region/x/register', ('{"key":"%s","offset":-1}' % out_key).encode())
res['status'] = call('GET', '/v2/systemsharedmemory/status')
def code(f):
    try:
        f(); return 'OK'
    except InferenceServerException as e:
        return [e.status(), e.message()]
res['grpc_zero'] = code(lambda: gc.register_system_shared_memory('x', out_key, 0))
res['grpc_past_end'] = code(lambda: gc.register_system_shared_memory('x', out_key, 2**64 - 1))`,
      EPILOGUE,
    );
    const notUnsigned = [500, JSON.stringify({ error: 'attempt to access JSON non-unsigned-integer as unsigned-integer' })];
    const refused = ['offset_negative', 'offset_huge', 'offset_float', 'offset_null', 'offset_string', 'size_negative', 'size_huge', 'size_float'];
    refused.push('size_fraction', 'size_2_64', 'size_bool', 'size_array', 'offset_before_size');
    for (const name of refused) expect([name, res[name]]).toEqual([name, notUnsigned]);
    expect(res.size_max).toEqual([400, JSON.stringify({ error: "failed to register shared memory region 'x': invalid args" })]);
    expect(res.status).toEqual([200, '[]']);
    expect(res.grpc_zero).toEqual([
      'StatusCode.INVALID_ARGUMENT',
      "failed to register shared memory region 'x': unable to process address spaceInvalid argument",
    ]);
    expect(res.grpc_past_end).toEqual(['StatusCode.INVALID_ARGUMENT', "failed to register shared memory region 'x': invalid args"]);
  }, 60_000);

  it('reads inputs from and writes outputs to regions over HTTP, with Triton’s errors', async () => {
    const res = await pythonResult(
      prelude('i'),
      `import copy
hc.unregister_system_shared_memory()
hc.register_system_shared_memory('in', in_key, 32)
hc.register_system_shared_memory('out', out_key, 32)
body = {'inputs': [{'name': 'INPUT0', 'datatype': 'FP32', 'shape': [4], 'parameters': {'shared_memory_region': 'in', 'shared_memory_byte_size': 16}},
                   {'name': 'INPUT1', 'datatype': 'FP32', 'shape': [4], 'parameters': {'shared_memory_region': 'in', 'shared_memory_byte_size': 16, 'shared_memory_offset': 16}}],
        'outputs': [{'name': 'OUTPUT0', 'parameters': {'shared_memory_region': 'out', 'shared_memory_byte_size': 16}},
                    {'name': 'OUTPUT1', 'parameters': {'shared_memory_region': 'out', 'shared_memory_byte_size': 16, 'shared_memory_offset': 16}}]}
res['infer'] = call('POST', '/v2/models/add_sub/infer', body)
res['out'] = shm.get_contents_as_numpy(h_out, np.float32, [8]).tolist()
def variant(f):
    b2 = copy.deepcopy(body); f(b2); return call('POST', '/v2/models/add_sub/infer', b2)
res['in_size'] = variant(lambda b2: b2['inputs'][0]['parameters'].update(shared_memory_byte_size=12))
res['in_offset'] = variant(lambda b2: b2['inputs'][1]['parameters'].update(shared_memory_offset=24))
res['in_no_size'] = variant(lambda b2: b2['inputs'][0]['parameters'].pop('shared_memory_byte_size'))
res['in_unknown'] = variant(lambda b2: b2['inputs'][0]['parameters'].update(shared_memory_region='nope'))
res['out_small'] = variant(lambda b2: b2['outputs'][0]['parameters'].update(shared_memory_byte_size=8))
res['out_offset'] = variant(lambda b2: b2['outputs'][0]['parameters'].update(shared_memory_offset=30))
res['out_unknown'] = variant(lambda b2: b2['outputs'][0]['parameters'].update(shared_memory_region='nope'))
res['mixed'] = variant(lambda b2: b2['outputs'][1].pop('parameters'))
# tritonclient's own shared-memory path
i0 = httpclient.InferInput('INPUT0', [4], 'FP32'); i0.set_shared_memory('in', 16)
i1 = httpclient.InferInput('INPUT1', [4], 'FP32'); i1.set_shared_memory('in', 16, offset=16)
o0 = httpclient.InferRequestedOutput('OUTPUT0', binary_data=True); o0.set_shared_memory('out', 16)
o1 = httpclient.InferRequestedOutput('OUTPUT1', binary_data=True); o1.set_shared_memory('out', 16, offset=16)
shm.set_shared_memory_region(h_out, [np.zeros(8, dtype=np.float32)])
r = hc.infer('add_sub', [i0, i1], outputs=[o0, o1])
res['client_outputs'] = [o['name'] for o in r.get_response()['outputs']]
res['client_out'] = shm.get_contents_as_numpy(h_out, np.float32, [8]).tolist()
hc.unregister_system_shared_memory()`,
      EPILOGUE,
    );
    const err = (status: number, error: string) => [status, JSON.stringify({ error })];
    expect(res.infer[0]).toBe(200);
    expect(JSON.parse(res.infer[1])).toEqual({
      model_name: 'add_sub',
      model_version: '1',
      outputs: [
        { name: 'OUTPUT0', datatype: 'FP32', shape: [4] },
        { name: 'OUTPUT1', datatype: 'FP32', shape: [4] },
      ],
    });
    expect(res.out).toEqual([10, 11, 12, 13, -10, -9, -8, -7]);
    expect(res.in_size[0]).toBe(400);
    expect(JSON.parse(res.in_size[1]).error).toMatch(/INPUT0.*16.*12|byte size/);
    expect(res.in_offset).toEqual(err(400, "Invalid offset + byte size for shared memory region: 'in'"));
    expect(res.in_no_size).toEqual(err(400, "Invalid offset + byte size for shared memory region: 'in'"));
    expect(res.in_unknown).toEqual(err(404, "Unable to find shared memory region: 'nope'"));
    expect(res.out_small).toEqual(
      err(500, "shared memory size specified with the request for output 'OUTPUT0' (8 bytes) should be at least 16 bytes to hold the results"),
    );
    expect(res.out_offset).toEqual(err(400, "Invalid offset + byte size for shared memory region: 'out'"));
    expect(res.out_unknown).toEqual(err(404, "Unable to find shared memory region: 'nope'"));
    // One output in shared memory, the other as JSON data.
    expect(JSON.parse(res.mixed[1]).outputs).toEqual([
      { name: 'OUTPUT0', datatype: 'FP32', shape: [4] },
      { name: 'OUTPUT1', datatype: 'FP32', shape: [4], data: [-10, -9, -8, -7] },
    ]);
    expect(res.client_outputs).toEqual(['OUTPUT0', 'OUTPUT1']);
    expect(res.client_out).toEqual([10, 11, 12, 13, -10, -9, -8, -7]);
  }, 60_000);

  it('does the same over gRPC, with gRPC status codes', async () => {
    const res = await pythonResult(
      prelude('g'),
      `def code(f):
    try:
        f(); return 'OK'
    except InferenceServerException as e:
        return [e.status(), e.message()]
gc.unregister_system_shared_memory()
gc.register_system_shared_memory('in', in_key, 32)
gc.register_system_shared_memory('out', out_key, 32)
res['duplicate'] = code(lambda: gc.register_system_shared_memory('in', in_key, 32))
res['status'] = gc.get_system_shared_memory_status(as_json=True)
res['status_unknown'] = code(lambda: gc.get_system_shared_memory_status('zz'))
i0 = grpcclient.InferInput('INPUT0', [4], 'FP32'); i0.set_shared_memory('in', 16)
i1 = grpcclient.InferInput('INPUT1', [4], 'FP32'); i1.set_shared_memory('in', 16, offset=16)
o0 = grpcclient.InferRequestedOutput('OUTPUT0'); o0.set_shared_memory('out', 16)
o1 = grpcclient.InferRequestedOutput('OUTPUT1'); o1.set_shared_memory('out', 16, offset=16)
r = gc.infer('add_sub', [i0, i1], outputs=[o0, o1])
res['outputs'] = [o['name'] for o in r.get_response(as_json=True)['outputs']]
res['raw'] = [len(x) for x in r.get_response().raw_output_contents]
res['out'] = shm.get_contents_as_numpy(h_out, np.float32, [8]).tolist()
i0.set_shared_memory('nope', 16)
res['unknown'] = code(lambda: gc.infer('add_sub', [i0, i1], outputs=[o0, o1]))
gc.unregister_system_shared_memory('in')
res['after'] = sorted(gc.get_system_shared_memory_status(as_json=True).get('regions', {}).keys())
gc.unregister_system_shared_memory()
res['cuda_unregister'] = code(lambda: gc.unregister_cuda_shared_memory())`,
      EPILOGUE,
    );
    expect(res.duplicate).toEqual(['StatusCode.ALREADY_EXISTS', "shared memory region 'in' already in manager"]);
    expect(Object.keys(res.status.regions).sort()).toEqual(['in', 'out']);
    expect(res.status.regions.in).toMatchObject({ name: 'in', byte_size: '32' });
    expect(res.status_unknown).toEqual(['StatusCode.NOT_FOUND', "Unable to find system shared memory region: 'zz'"]);
    expect(res.outputs).toEqual(['OUTPUT0', 'OUTPUT1']);
    expect(res.raw).toEqual([0, 0]);
    expect(res.out).toEqual([10, 11, 12, 13, -10, -9, -8, -7]);
    expect(res.unknown).toEqual(['StatusCode.NOT_FOUND', "Unable to find shared memory region: 'nope'"]);
    expect(res.after).toEqual(['out']);
    expect(res.cuda_unregister).toBe('OK');
  }, 60_000);

  it('keeps a region mapped for a request that uses it when it is unregistered meanwhile', async () => {
    const res = await pythonResult(
      prelude('u'),
      `import threading, time
hc.unregister_system_shared_memory()
shm.set_shared_memory_region(h_in, [np.array([400], dtype=np.int32), np.array([41], dtype=np.int32)])
hc.register_system_shared_memory('in', in_key, 8)
hc.register_system_shared_memory('out', out_key, 4)
box = {}
def run():
    ms = httpclient.InferInput('MS', [1], 'INT32'); ms.set_shared_memory('in', 4)
    v = httpclient.InferInput('VALUE', [1], 'INT32'); v.set_shared_memory('in', 4, offset=4)
    o = httpclient.InferRequestedOutput('OUT'); o.set_shared_memory('out', 4)
    box['r'] = httpclient.InferenceServerClient('127.0.0.1:${server.httpPort}').infer('slow_execute', [ms, v], outputs=[o]).get_response()
t = threading.Thread(target=run); t.start()
time.sleep(0.15)
hc.unregister_system_shared_memory()
res['status_during'] = hc.get_system_shared_memory_status()
t.join()
res['response'] = box['r']
res['out'] = shm.get_contents_as_numpy(h_out, np.int32, [1]).tolist()`,
      EPILOGUE,
    );
    expect(res.status_during).toEqual([]);
    expect(res.response.outputs).toEqual([{ name: 'OUT', datatype: 'INT32', shape: [1] }]);
    expect(res.out).toEqual([42]);
  }, 60_000);

  it('serves perf_analyzer --shared-memory=system over HTTP and gRPC', async () => {
    for (const [protocol, port] of [
      ['http', server.httpPort],
      ['grpc', server.grpcPort],
    ] as const) {
      const { code, out } = await perfAnalyzer([
        '-m',
        'add_sub',
        '-u',
        `127.0.0.1:${port}`,
        '-i',
        protocol,
        '--shared-memory=system',
        '--concurrency-range',
        '2:2',
        ...countWindows(200),
      ]);
      expect(code, out).toBe(0);
      expect(out).not.toMatch(/error|failed/i);
      expect(out).toMatch(/Throughput: [\d.]+ infer\/sec/);
    }
    // perf_analyzer unregisters what it registered.
    const left = await pythonResult(
      `import json, tritonclient.http as httpclient\nc = httpclient.InferenceServerClient('127.0.0.1:${server.httpPort}')`,
      `res['regions'] = c.get_system_shared_memory_status()`,
    );
    expect(left.regions).toEqual([]);
  }, 120_000);
});
