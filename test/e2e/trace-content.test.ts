/**
 * What a trace holds, checked against tritonserver 2.51's trace file for the same requests
 * (docs/protocol-notes.md, "Trace"): TENSORS entries `{id, activity, tensor: {name, data, shape,
 * dtype}}` for the queued inputs (TENSOR_QUEUE_INPUT) and every response's outputs
 * (TENSOR_BACKEND_OUTPUT), next to the TIMESTAMPS events; traces for ModelStreamInfer requests
 * and generate / generate_stream; ensemble steps and BLS calls (made with
 * `trace=request.trace()`) as child traces carrying `parent_id`; TENSORS alone writes neither
 * the model line nor timestamps.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, python, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

interface Entry {
  id: number;
  model_name?: string;
  model_version?: number;
  request_id?: string;
  parent_id?: number;
  timestamps?: Array<{ name: string; ns: number }>;
  activity?: string;
  tensor?: { name: string; data: string; shape: string; dtype: string };
}

interface Trace {
  model?: Entry;
  /** Event names in file order (repeated events repeat). */
  events: string[];
  /** `activity name=data shape dtype`, in file order. */
  tensors: string[];
}

// add_twice: add_sub twice, the second on the first's sum and difference (OUTPUT0 = 2 * INPUT0).
const ENSEMBLE = `
name: "add_twice"
platform: "ensemble"
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] }
]
ensemble_scheduling {
  step [
    {
      model_name: "add_sub"
      model_version: -1
      input_map { key: "INPUT0" value: "INPUT0" }
      input_map { key: "INPUT1" value: "INPUT1" }
      output_map { key: "OUTPUT0" value: "s" }
      output_map { key: "OUTPUT1" value: "d" }
    },
    {
      model_name: "add_sub"
      model_version: -1
      input_map { key: "INPUT0" value: "s" }
      input_map { key: "INPUT1" value: "d" }
      output_map { key: "OUTPUT0" value: "OUTPUT0" }
      output_map { key: "OUTPUT1" value: "OUTPUT1" }
    }
  ]
}
`;

const repo = makeRepo(['add_sub', 'repeat_int32', 'bls_add_sub']);
fs.mkdirSync(path.join(repo, 'add_twice', '1'), { recursive: true });
fs.writeFileSync(path.join(repo, 'add_twice', 'config.pbtxt'), ENSEMBLE);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-trace-content-'));
const file = path.join(dir, 'trace.json');
let traces: Trace[] = [];

const A = [1, 2, 3, 4];
const B = [0.5, 0.25, 1, 2];

async function post(s: Tritium, url: string, body: unknown): Promise<string> {
  const res = await fetch(`${s.http}${url}`, { method: 'POST', body: JSON.stringify(body) });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return text;
}

function readTraces(): Trace[] {
  const byId = new Map<number, Trace>();
  for (const e of JSON.parse(fs.readFileSync(file, 'utf8')) as Entry[]) {
    const t = byId.get(e.id) ?? { events: [], tensors: [] };
    byId.set(e.id, t);
    if (e.model_name !== undefined) t.model = e;
    for (const ts of e.timestamps ?? []) t.events.push(ts.name);
    if (e.tensor) t.tensors.push(`${e.activity} ${e.tensor.name}=${e.tensor.data} ${e.tensor.shape} ${e.tensor.dtype}`);
  }
  return [...byId.values()];
}

const byRequest = (id: string, model: string): Trace[] => traces.filter((t) => t.model?.request_id === id && t.model.model_name === model);
const count = (t: Trace, name: string): number => t.events.filter((e) => e === name).length;

const ADD_SUB_TENSORS = [
  'TENSOR_QUEUE_INPUT INPUT0=1,2,3,4 4 FP32',
  'TENSOR_QUEUE_INPUT INPUT1=0.5,0.25,1,2 4 FP32',
  'TENSOR_BACKEND_OUTPUT OUTPUT0=1.5,2.25,4,6 4 FP32',
  'TENSOR_BACKEND_OUTPUT OUTPUT1=0.5,1.75,2,2 4 FP32',
];
const CORE = ['REQUEST_START', 'QUEUE_START', 'COMPUTE_START', 'COMPUTE_INPUT_END', 'COMPUTE_OUTPUT_START', 'COMPUTE_END', 'REQUEST_END'];

beforeAll(async () => {
  const s = await startTritium({
    repos: [repo],
    args: [`--trace-config=triton,file=${file}`, '--trace-config=level=TIMESTAMPS', '--trace-config=level=TENSORS', '--trace-config=rate=1'],
  });
  try {
    const settings = await (await fetch(`${s.http}/v2/trace/setting`)).json();
    expect(settings.trace_level).toEqual(['TIMESTAMPS', 'TENSORS']);
    await post(s, '/v2/models/add_sub/infer', {
      id: 'h',
      inputs: [
        { name: 'INPUT0', shape: [4], datatype: 'FP32', data: A },
        { name: 'INPUT1', shape: [4], datatype: 'FP32', data: B },
      ],
    });
    python(`
import queue, numpy as np, tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${s.grpcPort}")
def f32(name, v):
    t = g.InferInput(name, [4], "FP32"); t.set_data_from_numpy(np.array(v, dtype=np.float32)); return t
def u32(name, v):
    t = g.InferInput(name, [len(v)], "UINT32"); t.set_data_from_numpy(np.array(v, dtype=np.uint32)); return t
c.infer("add_sub", [f32("INPUT0", ${JSON.stringify(A)}), f32("INPUT1", ${JSON.stringify(B)})], request_id="g")
q = queue.Queue()
c.start_stream(callback=lambda result, error: q.put((result, error)))
x = g.InferInput("IN", [2], "INT32"); x.set_data_from_numpy(np.array([5, -6], dtype=np.int32))
c.async_stream_infer("repeat_int32", [x, u32("DELAY", [0, 0]), u32("WAIT", [0])], request_id="s", enable_empty_final_response=True)
c.async_stream_infer("add_sub", [f32("INPUT0", ${JSON.stringify(A)}), f32("INPUT1", ${JSON.stringify(B)})], request_id="s-add")
for _ in range(4):
    r, e = q.get(timeout=30)
    assert e is None, e
c.stop_stream()
`);
    const generated = JSON.parse(await post(s, '/v2/models/add_sub/generate', { id: 'gen', INPUT0: A, INPUT1: B }));
    expect(generated.OUTPUT0).toEqual([1.5, 2.25, 4, 6]);
    const events = await post(s, '/v2/models/repeat_int32/generate_stream', { id: 'gs', IN: [7, 8], DELAY: [0, 0], WAIT: [0] });
    expect(events.match(/^data: /gm)).toHaveLength(2);
    for (const model of ['add_twice', 'bls_add_sub']) {
      await post(s, `/v2/models/${model}/infer`, {
        id: model === 'add_twice' ? 'e' : 'b',
        inputs: [
          { name: 'INPUT0', shape: [4], datatype: 'FP32', data: A },
          { name: 'INPUT1', shape: [4], datatype: 'FP32', data: B },
        ],
      });
    }
    // TENSORS alone.
    await post(s, '/v2/trace/setting', { trace_level: ['TENSORS'] });
    await post(s, '/v2/models/add_sub/infer', {
      id: 'tensors-only',
      inputs: [
        { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [9, 8, 7, 6] },
        { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [1, 1, 1, 1] },
      ],
    });
  } finally {
    await stopAndExpectNoShm(s);
  }
  traces = readTraces();
});

afterAll(() => {
  fs.rmSync(repo, { recursive: true, force: true });
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('trace_level TENSORS with TIMESTAMPS', () => {
  it('records the inputs as queued and the outputs as sent, for HTTP and gRPC', () => {
    for (const id of ['h', 'g']) {
      const [t] = byRequest(id, 'add_sub');
      expect(t?.model).toMatchObject({ model_name: 'add_sub', model_version: 1, request_id: id });
      expect(t!.model!.parent_id).toBeUndefined();
      expect(t!.tensors).toEqual(ADD_SUB_TENSORS);
      expect([...new Set(t!.events)].sort()).toEqual(
        [
          ...CORE,
          'INFER_RESPONSE_COMPLETE',
          ...(id === 'h'
            ? ['HTTP_RECV_START', 'HTTP_RECV_END', 'HTTP_SEND_START', 'HTTP_SEND_END']
            : ['GRPC_WAITREAD_START', 'GRPC_WAITREAD_END', 'GRPC_SEND_START', 'GRPC_SEND_END']),
        ].sort(),
      );
    }
  });

  it('without TIMESTAMPS, writes tensors only (no model line, no events), as Triton', () => {
    const rest = traces.filter((t) => t.model === undefined);
    expect(rest).toHaveLength(1);
    expect(rest[0]!.events).toEqual([]);
    expect(rest[0]!.tensors).toEqual([
      'TENSOR_QUEUE_INPUT INPUT0=9,8,7,6 4 FP32',
      'TENSOR_QUEUE_INPUT INPUT1=1,1,1,1 4 FP32',
      'TENSOR_BACKEND_OUTPUT OUTPUT0=10,9,8,7 4 FP32',
      'TENSOR_BACKEND_OUTPUT OUTPUT1=8,7,6,5 4 FP32',
    ]);
  });
});

describe('traced entry points', () => {
  it('traces each request of a ModelStreamInfer stream, with a send pair per response', () => {
    const [s] = byRequest('s', 'repeat_int32');
    expect(s).toBeDefined();
    expect(s!.tensors).toEqual([
      'TENSOR_QUEUE_INPUT IN=5,-6 2 INT32',
      'TENSOR_QUEUE_INPUT DELAY=0,0 2 UINT32',
      'TENSOR_QUEUE_INPUT WAIT=0 1 UINT32',
      'TENSOR_BACKEND_OUTPUT OUT=5 1 INT32',
      'TENSOR_BACKEND_OUTPUT IDX=0 1 UINT32',
      'TENSOR_BACKEND_OUTPUT OUT=-6 1 INT32',
      'TENSOR_BACKEND_OUTPUT IDX=1 1 UINT32',
    ]);
    // Two responses and the empty final one the client asked for; complete once.
    expect([count(s!, 'GRPC_WAITREAD_START'), count(s!, 'GRPC_SEND_START'), count(s!, 'GRPC_SEND_END'), count(s!, 'INFER_RESPONSE_COMPLETE')]).toEqual([
      1, 3, 3, 1,
    ]);
    const [add] = byRequest('s-add', 'add_sub');
    expect(add!.tensors).toEqual(ADD_SUB_TENSORS);
    expect([count(add!, 'GRPC_SEND_START'), count(add!, 'INFER_RESPONSE_COMPLETE'), count(add!, 'COMPUTE_START')]).toEqual([1, 1, 1]);
  });

  it('traces generate and generate_stream (complete per response, a send pair per event)', () => {
    const [gen] = byRequest('gen', 'add_sub');
    expect(gen!.tensors).toEqual(ADD_SUB_TENSORS);
    expect([count(gen!, 'HTTP_RECV_START'), count(gen!, 'HTTP_SEND_START'), count(gen!, 'INFER_RESPONSE_COMPLETE'), count(gen!, 'REQUEST_END')]).toEqual([
      1, 1, 1, 1,
    ]);
    const [gs] = byRequest('gs', 'repeat_int32');
    expect(gs!.tensors.filter((t) => t.startsWith('TENSOR_BACKEND_OUTPUT OUT='))).toEqual([
      'TENSOR_BACKEND_OUTPUT OUT=7 1 INT32',
      'TENSOR_BACKEND_OUTPUT OUT=8 1 INT32',
    ]);
    // Two events written; the flags-only final is complete without a send.
    expect([count(gs!, 'HTTP_SEND_START'), count(gs!, 'HTTP_SEND_END'), count(gs!, 'INFER_RESPONSE_COMPLETE')]).toEqual([2, 2, 3]);
  });
});

describe('child traces', () => {
  it('traces each ensemble step as a child of the ensemble request, with its request id', () => {
    const [parent] = byRequest('e', 'add_twice');
    expect(parent).toBeDefined();
    // The ensemble itself computes nothing: no compute events; its outputs are the last step's.
    expect(parent!.events.filter((e) => e.startsWith('COMPUTE_'))).toEqual([]);
    expect(parent!.tensors).toEqual([
      'TENSOR_QUEUE_INPUT INPUT0=1,2,3,4 4 FP32',
      'TENSOR_QUEUE_INPUT INPUT1=0.5,0.25,1,2 4 FP32',
      'TENSOR_BACKEND_OUTPUT OUTPUT0=2,4,6,8 4 FP32',
      'TENSOR_BACKEND_OUTPUT OUTPUT1=1,0.5,2,4 4 FP32',
    ]);
    const steps = byRequest('e', 'add_sub');
    expect(steps).toHaveLength(2);
    const parentId = idOf(parent!);
    for (const step of steps) {
      expect(step.model!.parent_id).toBe(parentId);
      // A child has no frontend: no receive, send or response-complete events.
      expect([...new Set(step.events)].sort()).toEqual([...CORE].sort());
    }
    expect(steps.map((t) => t.tensors[0]).sort()).toEqual(['TENSOR_QUEUE_INPUT INPUT0=1,2,3,4 4 FP32', 'TENSOR_QUEUE_INPUT INPUT0=1.5,2.25,4,6 4 FP32']);
  });

  it('traces a BLS call made with trace=request.trace() as a child of the calling request', () => {
    const [caller] = byRequest('b', 'bls_add_sub');
    expect(caller).toBeDefined();
    expect(caller!.tensors).toEqual(ADD_SUB_TENSORS);
    // bls_add_sub's call has no request id: the model line leaves it out, as Triton does.
    const calls = traces.filter((t) => t.model?.parent_id === idOf(caller!));
    expect(calls).toHaveLength(1);
    expect(calls[0]!.model).toEqual({ id: calls[0]!.model!.id, model_name: 'add_sub', model_version: 1, parent_id: idOf(caller!) });
    expect(calls[0]!.tensors).toEqual(ADD_SUB_TENSORS);
    expect(count(calls[0]!, 'INFER_RESPONSE_COMPLETE')).toBe(0);
  });
});

/** A trace's id (what its children carry as parent_id). */
function idOf(t: Trace): number {
  return t.model!.id;
}
