/**
 * ONNX sequence models through the whole server: control tensors fed to the graph, implicit
 * state kept per sequence between requests (from zeros or from an initial_state data_file,
 * reset at START), concurrent sequences in one direct batch with fillers, the oldest strategy,
 * and the config auto-completed from the graph without the batcher's tensors. The model is
 * fixtures/make_onnx_models.py's sequence_accumulator: OUTPUT = state + INPUT.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';
import { makeModels, makeRepo } from './helpers.js';

const SEQUENCE = (strategy: string, state: string) => `
backend: "onnxruntime"
max_batch_size: 4
sequence_batching {
  ${strategy}
  control_input [
    { name: "START" control [{ kind: CONTROL_SEQUENCE_START fp32_false_true: [ 0, 1 ] }] },
    { name: "READY" control [{ kind: CONTROL_SEQUENCE_READY fp32_false_true: [ 0, 1 ] }] },
    { name: "CORRID" control [{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT64 }] }
  ]
  state [{ input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_FP32 dims: [ 1 ] ${state} }]
}
`;
const FILE_STATE = 'initial_state [{ data_type: TYPE_FP32 dims: [ 1 ] name: "hundred" data_file: "hundred.bin" }]';

let models: string;
let server: Tritium;

beforeAll(async () => {
  models = makeModels();
  const hundred = Buffer.from(new Float32Array([100]).buffer);
  const repo = makeRepo(models, {
    onnx_seq: { from: 'sequence_accumulator', config: SEQUENCE('', '') },
    onnx_seq_oldest: { from: 'sequence_accumulator', config: SEQUENCE('oldest { max_candidate_sequences: 2 }', '') },
    onnx_seq_file: { from: 'sequence_accumulator', config: SEQUENCE('', FILE_STATE), files: { 'initial_state/hundred.bin': hundred } },
    onnx_seq_escape: { from: 'sequence_accumulator', config: SEQUENCE('', FILE_STATE.replace('hundred.bin', '../../onnx_seq_file/initial_state/hundred.bin')) },
    onnx_seq_link: { from: 'sequence_accumulator', config: SEQUENCE('', FILE_STATE) },
  });
  // A link inside initial_state/ that points out of it.
  fs.mkdirSync(path.join(repo, 'onnx_seq_link', 'initial_state'));
  fs.symlinkSync(path.join(repo, 'onnx_seq_file', 'initial_state', 'hundred.bin'), path.join(repo, 'onnx_seq_link', 'initial_state', 'hundred.bin'));
  server = await startTritium({ repos: [repo], args: ['--exit-on-error=false', '--strict-readiness=false'] });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(models, { recursive: true, force: true });
});

interface Out {
  output?: number;
  start?: number;
  corr?: number;
  error?: string;
}

async function infer(model: string, parameters: Record<string, unknown>, value: number): Promise<Out> {
  const body = JSON.stringify({ parameters, inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'FP32', data: [value] }] });
  const json = (await (await fetch(`${server.http}/v2/models/${model}/infer`, { method: 'POST', body })).json()) as any;
  if (json.error !== undefined) return { error: json.error };
  const o = Object.fromEntries((json.outputs as Array<{ name: string; data: number[] }>).map((t) => [t.name, t.data[0]]));
  return { output: o.OUTPUT, start: o.START_OUT, corr: o.CORR_OUT };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('an ONNX sequence model with implicit state', () => {
  it("auto-completes the config from the graph without the batcher's controls and state", async () => {
    const cfg = (await (await fetch(`${server.http}/v2/models/onnx_seq/config`)).json()) as any;
    expect(cfg.input.map((i: { name: string }) => i.name)).toEqual(['INPUT']);
    expect(cfg.output.map((o: { name: string }) => o.name)).toEqual(['OUTPUT', 'START_OUT', 'CORR_OUT']);
    expect(cfg.sequence_batching.state[0]).toMatchObject({ input_name: 'STATE_IN', output_name: 'STATE_OUT' });
  });

  it('keeps each sequence its own state, fed with its controls, and starts again at START', async () => {
    const a1 = await infer('onnx_seq', { sequence_id: 1, sequence_start: true }, 1);
    const b1 = await infer('onnx_seq', { sequence_id: 2, sequence_start: true }, 10);
    const a2 = await infer('onnx_seq', { sequence_id: 1 }, 2);
    const b2 = await infer('onnx_seq', { sequence_id: 2, sequence_end: true }, 20);
    const a3 = await infer('onnx_seq', { sequence_id: 1, sequence_end: true }, 3);
    expect([a1.output, a2.output, a3.output]).toEqual([1, 3, 6]);
    expect([b1.output, b2.output]).toEqual([10, 30]);
    expect([a1.start, a2.start, a3.start]).toEqual([1, 0, 0]);
    expect([a1.corr, b1.corr]).toEqual([1, 2]);
    // A new sequence on the freed slot starts from zero, not from what the last one left.
    const c1 = await infer('onnx_seq', { sequence_id: 3, sequence_start: true, sequence_end: true }, 5);
    expect(c1.output).toBe(5);
  });

  it('runs concurrent sequences in one direct batch (fillers in empty rows) without mixing their states', async () => {
    const ids = [11, 12, 13];
    const sums = await Promise.all(
      ids.map(async (id, k) => {
        const out: number[] = [];
        for (let step = 0; step < 6; step++) {
          const p: Record<string, unknown> = { sequence_id: id };
          if (step === 0) p.sequence_start = true;
          if (step === 5) p.sequence_end = true;
          const r = await infer('onnx_seq', p, k + 1);
          expect(r.error).toBeUndefined();
          out.push(r.output!);
          // Uneven pacing so that batches have empty rows.
          if (k === 1) await sleep(5);
        }
        return out;
      }),
    );
    expect(sums).toEqual([1, 2, 3].map((v) => [1, 2, 3, 4, 5, 6].map((n) => n * v)));
  });

  it('starts from an initial_state data_file', async () => {
    const r1 = await infer('onnx_seq_file', { sequence_id: 1, sequence_start: true }, 1);
    const r2 = await infer('onnx_seq_file', { sequence_id: 1, sequence_end: true }, 1);
    expect([r1.output, r2.output]).toEqual([101, 102]);
  });

  it('keeps the state per sequence under the oldest strategy', async () => {
    const sums = await Promise.all(
      [21, 22, 23].map(async (id, k) => {
        const out: number[] = [];
        for (let step = 0; step < 4; step++) {
          const p: Record<string, unknown> = { sequence_id: id };
          if (step === 0) p.sequence_start = true;
          if (step === 3) p.sequence_end = true;
          out.push((await infer('onnx_seq_oldest', p, 10 * (k + 1))).output!);
        }
        return out;
      }),
    );
    expect(sums).toEqual([10, 20, 30].map((v) => [1, 2, 3, 4].map((n) => n * v)));
  });

  it("refuses an initial_state data_file outside the model's initial_state directory", async () => {
    const index = (await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as Array<{
      name: string;
      state: string;
      reason?: string;
    }>;
    const e = index.find((m) => m.name === 'onnx_seq_escape')!;
    expect(e.state).toBe('UNAVAILABLE');
    expect(e.reason).toContain(
      "initial_state data_file '../../onnx_seq_file/initial_state/hundred.bin' of sequence state 'STATE_IN' of model 'onnx_seq_escape': not inside the initial_state directory",
    );
    const link = index.find((m) => m.name === 'onnx_seq_link')!;
    expect(link.reason).toContain(
      "initial_state data_file 'hundred.bin' of sequence state 'STATE_IN' of model 'onnx_seq_link': not inside the initial_state directory",
    );
  });
});
