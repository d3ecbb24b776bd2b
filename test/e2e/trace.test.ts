/**
 * Triton-mode tracing (docs/protocol-notes.md, "Trace"): `--trace-config` and the trace API
 * turn it on, and the trace file holds tritonserver 2.51's JSON (one array of `{id, model_name,
 * model_version, request_id}` and `{id, timestamps: [{name, ns}]}` entries) with its TIMESTAMPS
 * event names, for HTTP and gRPC (tritonclient) requests.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeRepo, python, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { waitFor } from './infer-helpers.js';

type Entry = { id: number; model_name?: string; model_version?: number; request_id?: string; timestamps?: Array<{ name: string; ns: number }> };

const repo = makeRepo(['label_classes']);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-trace-'));
afterAll(() => {
  fs.rmSync(repo, { recursive: true, force: true });
  fs.rmSync(dir, { recursive: true, force: true });
});

async function inferHttp(s: Tritium, id: string): Promise<void> {
  const res = await fetch(`${s.http}/v2/models/label_classes/infer`, {
    method: 'POST',
    body: JSON.stringify({ id, inputs: [{ name: 'IN', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] }),
  });
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

function inferGrpc(s: Tritium, id: string): void {
  python(`
import numpy as np, tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${s.grpcPort}")
i = g.InferInput("IN", [1, 4], "FP32"); i.set_data_from_numpy(np.array([[1, 2, 3, 4]], dtype=np.float32))
c.infer("label_classes", [i], request_id="${id}")
`);
}

/** The traces of a file: per id, its model line and its events in file order. */
function readTraces(file: string): Map<number, { model?: Entry; events: Map<string, number> }> {
  const entries = JSON.parse(fs.readFileSync(file, 'utf8')) as Entry[];
  const out = new Map<number, { model?: Entry; events: Map<string, number> }>();
  for (const e of entries) {
    const t = out.get(e.id) ?? { events: new Map<string, number>() };
    if (e.model_name !== undefined) t.model = e;
    for (const ts of e.timestamps ?? []) t.events.set(ts.name, ts.ns);
    out.set(e.id, t);
  }
  return out;
}

const CORE = [
  'REQUEST_START',
  'QUEUE_START',
  'COMPUTE_START',
  'COMPUTE_INPUT_END',
  'COMPUTE_OUTPUT_START',
  'COMPUTE_END',
  'INFER_RESPONSE_COMPLETE',
  'REQUEST_END',
];

describe('--trace-config', () => {
  it('writes every request’s TIMESTAMPS to the trace file, in Triton’s JSON', async () => {
    const file = path.join(dir, 'all.json');
    const s = await startTritium({
      repos: [repo],
      args: [`--trace-config=triton,file=${file}`, '--trace-config=level=TIMESTAMPS', '--trace-config=rate=1'],
    });
    const settings = await (await fetch(`${s.http}/v2/trace/setting`)).json();
    expect(settings).toEqual({ trace_level: ['TIMESTAMPS'], trace_rate: '1', trace_count: '-1', log_frequency: '0', trace_file: file, trace_mode: 'triton' });
    await inferHttp(s, 'h-1');
    inferGrpc(s, 'g-1');
    await stopAndExpectNoShm(s); // log_frequency 0: written at exit, as Triton does
    const traces = readTraces(file);
    expect(traces.size).toBe(2);
    const [http, grpc] = [traces.get(1)!, traces.get(2)!];
    expect(http.model).toEqual({ id: 1, model_name: 'label_classes', model_version: 1, request_id: 'h-1' });
    expect(grpc.model).toEqual({ id: 2, model_name: 'label_classes', model_version: 1, request_id: 'g-1' });
    expect([...http.events.keys()].sort()).toEqual([...CORE, 'HTTP_RECV_START', 'HTTP_RECV_END', 'HTTP_SEND_START', 'HTTP_SEND_END'].sort());
    expect([...grpc.events.keys()].sort()).toEqual([...CORE, 'GRPC_WAITREAD_START', 'GRPC_WAITREAD_END', 'GRPC_SEND_START', 'GRPC_SEND_END'].sort());
    // The events follow one another as the request went through.
    const inOrder = (t: Map<string, number>, names: string[]) => names.map((n) => t.get(n)!).every((ns, i, all) => i === 0 || all[i - 1]! <= ns);
    expect(
      inOrder(http.events, [
        'HTTP_RECV_START',
        'HTTP_RECV_END',
        'REQUEST_START',
        'COMPUTE_START',
        'COMPUTE_INPUT_END',
        'COMPUTE_OUTPUT_START',
        'COMPUTE_END',
        'INFER_RESPONSE_COMPLETE',
        'HTTP_SEND_START',
        'HTTP_SEND_END',
      ]),
    ).toBe(true);
    expect(
      inOrder(grpc.events, ['GRPC_WAITREAD_START', 'GRPC_WAITREAD_END', 'REQUEST_START', 'COMPUTE_START', 'COMPUTE_END', 'GRPC_SEND_START', 'GRPC_SEND_END']),
    ).toBe(true);
  });

  it('writes <file>.<n> every log-frequency traces, while serving', async () => {
    const file = path.join(dir, 'freq.json');
    const s = await startTritium({
      repos: [repo],
      args: [`--trace-config=triton,file=${file}`, '--trace-config=level=TIMESTAMPS', '--trace-config=rate=1', '--trace-config=triton,log-frequency=2'],
    });
    try {
      for (let i = 0; i < 4; i++) await inferHttp(s, `r${i}`);
      await waitFor('two trace files', () => fs.existsSync(`${file}.1`));
      expect([...readTraces(`${file}.0`).values()].map((t) => t.model?.request_id)).toEqual(['r0', 'r1']);
      expect([...readTraces(`${file}.1`).values()].map((t) => t.model?.request_id)).toEqual(['r2', 'r3']);
    } finally {
      await stopAndExpectNoShm(s);
    }
  });
});

describe('the trace API', () => {
  it('turns tracing on for one model, samples by rate and stops at the count', async () => {
    const file = path.join(dir, 'api.json');
    const s = await startTritium({ repos: [repo], args: [`--trace-config=triton,file=${file}`] });
    await inferHttp(s, 'before'); // tracing is OFF
    const res = await fetch(`${s.http}/v2/models/label_classes/trace/setting`, {
      method: 'POST',
      body: JSON.stringify({ trace_level: ['TIMESTAMPS'], trace_rate: '2', trace_count: '2' }),
    });
    expect(await res.json()).toMatchObject({ trace_level: ['TIMESTAMPS'], trace_rate: '2', trace_count: '2', trace_file: file });
    // The global settings are unchanged.
    expect((await (await fetch(`${s.http}/v2/trace/setting`)).json()).trace_level).toEqual(['OFF']);
    for (let i = 0; i < 6; i++) await inferHttp(s, `a${i}`);
    const after = await (await fetch(`${s.http}/v2/models/label_classes/trace/setting`)).json();
    expect(after.trace_count).toBe('0');
    await stopAndExpectNoShm(s);
    // One request in two (the second of each two, as Triton samples), two traces at most.
    expect([...readTraces(file).values()].map((t) => t.model?.request_id)).toEqual(['a1', 'a3']);
  });

  it('turns tracing on over gRPC (tritonclient update_trace_settings)', async () => {
    const file = path.join(dir, 'grpc-api.json');
    const s = await startTritium({ repos: [repo], args: [`--trace-config=triton,file=${file}`] });
    const got = python(`
import json, tritonclient.grpc as g
c = g.InferenceServerClient("127.0.0.1:${s.grpcPort}")
r = c.update_trace_settings(settings={"trace_level": ["TIMESTAMPS"], "trace_rate": "1"}, as_json=True)
print(json.dumps(r))
`);
    expect(JSON.parse(got).settings.trace_level).toEqual({ value: ['TIMESTAMPS'] });
    inferGrpc(s, 'g-api');
    await stopAndExpectNoShm(s);
    expect([...readTraces(file).values()].map((t) => t.model?.request_id)).toEqual(['g-api']);
  });
});
