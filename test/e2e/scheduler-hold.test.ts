/**
 * Triton's test-only scheduler hold (core/scheduling/scheduler-hold.ts), which its sequence
 * batcher QA suites set: with TRITONSERVER_DELAY_SCHEDULER=3 the sequence batcher runs nothing
 * until its slots hold three requests, so three sequences started one after another run as one
 * batch; after that the hold is gone and a lone request runs at once.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

let server: Tritium;
let repo: string;

beforeAll(async () => {
  repo = makeRepo(['sequence_accum']);
  server = await startTritium({ repos: [repo], env: { TRITONSERVER_DELAY_SCHEDULER: '3' } });
});

afterAll(async () => {
  await stopAndExpectNoShm(server);
  fs.rmSync(repo, { recursive: true, force: true });
});

async function step(id: number, value: number, start: boolean): Promise<{ output: number; batch: number }> {
  const body = JSON.stringify({
    parameters: { sequence_id: id, sequence_start: start },
    inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }],
  });
  const res = await fetch(`${server.http}/v2/models/sequence_accum/infer`, { method: 'POST', body });
  const json = (await res.json()) as { error?: string; outputs: Array<{ name: string; data: unknown[] }> };
  expect(json.error).toBeUndefined();
  const out = Object.fromEntries(json.outputs.map((o) => [o.name, o.data[0]]));
  return { output: out.OUTPUT as number, batch: (JSON.parse(out.INFO as string) as { batch: number }).batch };
}

describe('TRITONSERVER_DELAY_SCHEDULER', () => {
  it('holds the sequence batcher until three requests are queued, then runs them as one batch', async () => {
    const first = step(1, 10, true);
    await new Promise((r) => setTimeout(r, 150));
    const second = step(2, 20, true);
    await new Promise((r) => setTimeout(r, 150));
    const third = step(3, 30, true);
    const answers = await Promise.all([first, second, third]);
    expect(answers.map((a) => a.output)).toEqual([10, 20, 30]);
    expect(answers.map((a) => a.batch)).toEqual([3, 3, 3]);
    // The hold is met once for good: a sequence's next request runs alone.
    expect(await step(1, 5, false)).toEqual({ output: 15, batch: 1 });
  });
});

describe('TRITONSERVER_DELAY_SCHEDULER with dynamic batching', () => {
  it('holds the dynamic batcher until its queue holds N requests', async () => {
    // batch_probe (max_batch_size 10, 200 ms queue delay) answers each row with its batch's length.
    const repo2 = makeRepo(['batch_probe']);
    const s = await startTritium({ repos: [repo2], env: { TRITONSERVER_DELAY_SCHEDULER: '4' } });
    try {
      const one = async (): Promise<number> => {
        const res = await fetch(`${s.http}/v2/models/batch_probe/infer`, {
          method: 'POST',
          body: JSON.stringify({ inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 1], data: [1] }] }),
        });
        const json = (await res.json()) as { outputs: Array<{ name: string; data: number[] }> };
        return json.outputs.find((o) => o.name === 'BATCH_LEN')!.data[0]!;
      };
      const answers: Promise<number>[] = [];
      for (let i = 0; i < 4; i++) {
        answers.push(one());
        // Longer than the queue delay: without the hold each would run alone.
        await new Promise((r) => setTimeout(r, 300));
      }
      expect(await Promise.all(answers)).toEqual([4, 4, 4, 4]);
    } finally {
      await stopAndExpectNoShm(s);
      fs.rmSync(repo2, { recursive: true, force: true });
    }
  });
});
