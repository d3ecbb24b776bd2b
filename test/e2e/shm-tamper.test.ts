/**
 * Client system shared memory that the client changes after registering it: the server must
 * never fault on it. A region's object truncated to 0 bytes used to kill the whole server with
 * SIGBUS (it read and wrote through a mapping): here tritonclient registers a region, the file is
 * truncated for real, and inferences naming it for an input or an output get an error while the
 * server keeps serving and leaves no /dev/shm file behind. Then generated cases (helpers/
 * shm-tamper.ts) shrink, grow, unlink and replace region objects between register and infer,
 * over HTTP and over gRPC, and check every answer: the right sums where the bytes are there,
 * an error naming the shrink where they are not.
 */
import http2 from 'node:http2';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelInferRequestSchema, ModelInferResponseSchema } from '../../src/generated/grpc_service_pb.js';
import { frameMessage, grpcCall, watchCall } from '../helpers/grpc-raw.js';
import { makeRepo, pythonResult, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { checkShmCases, type Infer, type Placement } from '../helpers/shm-tamper.js';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['add_sub'])] });
}, 120_000);

afterAll(async () => {
  const exit = await stopAndExpectNoShm(server);
  expect(exit?.code).toBe(0);
});

describe('a registered region whose object is truncated', () => {
  it('fails the requests that use it, over HTTP and gRPC, and the server keeps serving', async () => {
    const res = await pythonResult(
      `import json, os, numpy as np
import tritonclient.http as httpclient, tritonclient.grpc as grpcclient
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException
hc = httpclient.InferenceServerClient('127.0.0.1:${server.httpPort}')
gc = grpcclient.InferenceServerClient('127.0.0.1:${server.grpcPort}')
key = '/shm_tamper_test_' + str(os.getpid())
a = np.arange(4, dtype=np.float32); b = np.full(4, 10, dtype=np.float32)`,
      `def attempt(client, mod, where):
    inputs = [mod.InferInput('INPUT0', [4], 'FP32'), mod.InferInput('INPUT1', [4], 'FP32')]
    outputs = [mod.InferRequestedOutput('OUTPUT0'), mod.InferRequestedOutput('OUTPUT1')]
    if where == 'input':
        inputs[0].set_shared_memory('r', 16)
    else:
        inputs[0].set_data_from_numpy(a)
        outputs[0].set_shared_memory('r', 16)
    inputs[1].set_data_from_numpy(b)
    try:
        r = client.infer('add_sub', inputs, outputs=outputs)
        return ['ok', r.as_numpy('OUTPUT1').tolist()]
    except InferenceServerException as e:
        return ['error', e.message()]
for where in ['input', 'output']:
    for name, client, mod in [('http', hc, httpclient), ('grpc', gc, grpcclient)]:
        h = shm.create_shared_memory_region('tamper', key, 4096)
        shm.set_shared_memory_region(h, [a])
        client.register_system_shared_memory('r', key, 4096)
        res[name + '_' + where + '_before'] = attempt(client, mod, where)
        os.truncate('/dev/shm' + key, 0)
        res[name + '_' + where] = attempt(client, mod, where)
        client.unregister_system_shared_memory('r')
        shm.destroy_shared_memory_region(h)
inputs = [httpclient.InferInput('INPUT0', [4], 'FP32'), httpclient.InferInput('INPUT1', [4], 'FP32')]
inputs[0].set_data_from_numpy(a); inputs[1].set_data_from_numpy(b)
res['after'] = hc.infer('add_sub', inputs).as_numpy('OUTPUT0').tolist()`,
    );
    const shrunk = "shared memory region 'r' needs 16 bytes of its object, which now holds 0: the object was shrunk after the region was registered";
    for (const proto of ['http', 'grpc']) {
      expect(res[`${proto}_input_before`]).toEqual(['ok', [-10, -9, -8, -7]]);
      expect(res[`${proto}_output_before`]).toEqual(['ok', [-10, -9, -8, -7]]);
      expect(res[`${proto}_input`]).toEqual(['error', shrunk]);
      expect(res[`${proto}_output`]).toEqual(['error', shrunk]);
    }
    expect(res.after).toEqual([10, 11, 12, 13]);
    expect(server.proc.exitCode).toBeNull();
  }, 120_000);
});

describe('generated regions shrunk, grown, unlinked and replaced between register and infer', () => {
  const RUNS = 40;
  const BATCH = 8;

  it(`${RUNS * BATCH} HTTP inferences answer right or fail naming the shrink`, async () => {
    const infer: Infer = async (_c, inputs, outputs) => {
      const input = (name: string, v: Placement | number[]) =>
        Array.isArray(v)
          ? { name, datatype: 'FP32', shape: [4], data: v }
          : {
              name,
              datatype: 'FP32',
              shape: [4],
              parameters: { shared_memory_region: v.region, shared_memory_offset: v.offset, shared_memory_byte_size: v.byteSize },
            };
      const output = (name: string, v: Placement | undefined) =>
        v === undefined
          ? { name }
          : { name, parameters: { shared_memory_region: v.region, shared_memory_offset: v.offset, shared_memory_byte_size: v.byteSize } };
      const res = await fetch(`http://127.0.0.1:${server.httpPort}/v2/models/add_sub/infer`, {
        method: 'POST',
        body: JSON.stringify({
          inputs: [input('INPUT0', inputs.INPUT0), input('INPUT1', inputs.INPUT1)],
          outputs: [output('OUTPUT0', outputs.OUTPUT0), output('OUTPUT1', outputs.OUTPUT1)],
        }),
      });
      const doc = (await res.json()) as { error?: string; outputs?: { name: string; data?: number[] }[] };
      if (res.status !== 200) return { ok: false, message: String(doc.error) };
      return { ok: true, outputs: Object.fromEntries((doc.outputs ?? []).map((o) => [o.name, o.data ?? []])) };
    };
    await checkShmCases(RUNS, BATCH, server.httpPort, infer);
    expect(server.proc.exitCode).toBeNull();
  }, 120_000);

  it(`${RUNS * BATCH} gRPC inferences answer right or fail naming the shrink`, async () => {
    const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
    session.on('error', () => {});
    const shmParams = (v: Placement) => ({
      shared_memory_region: { parameterChoice: { case: 'stringParam' as const, value: v.region } },
      shared_memory_offset: { parameterChoice: { case: 'int64Param' as const, value: BigInt(v.offset) } },
      shared_memory_byte_size: { parameterChoice: { case: 'int64Param' as const, value: BigInt(v.byteSize) } },
    });
    const infer: Infer = async (_c, inputs, outputs) => {
      const order = ['INPUT0', 'INPUT1'] as const;
      const raw = order.map((n) => inputs[n]).filter((v): v is number[] => Array.isArray(v));
      const request = create(ModelInferRequestSchema, {
        modelName: 'add_sub',
        inputs: order.map((name) => {
          const v = inputs[name];
          return { name, datatype: 'FP32', shape: [4n], parameters: Array.isArray(v) ? {} : shmParams(v) };
        }),
        outputs: (['OUTPUT0', 'OUTPUT1'] as const).map((name) => {
          const v = outputs[name];
          return { name, parameters: v === undefined ? {} : shmParams(v) };
        }),
        rawInputContents: raw.map((v) => new Uint8Array(new Float32Array(v).buffer)),
      });
      const stream = grpcCall(session, 'ModelInfer');
      const answer = watchCall(stream);
      stream.end(frameMessage(toBinary(ModelInferRequestSchema, request)));
      const w = await answer.done;
      if (w.status !== '0') return { ok: false, message: w.message ?? `status ${w.status}` };
      const reply = fromBinary(ModelInferResponseSchema, Buffer.concat(w.chunks).subarray(5));
      const got: Record<string, number[]> = {};
      let next = 0;
      for (const o of reply.outputs) {
        if (o.parameters.shared_memory_region !== undefined) continue;
        const bytes = reply.rawOutputContents[next++]!;
        got[o.name] = [...new Float32Array(Uint8Array.from(bytes).buffer)];
      }
      return { ok: true, outputs: got };
    };
    try {
      await checkShmCases(RUNS, BATCH, server.httpPort, infer);
    } finally {
      session.destroy();
    }
    expect(server.proc.exitCode).toBeNull();
  }, 120_000);
});
