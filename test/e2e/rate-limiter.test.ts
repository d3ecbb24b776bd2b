/**
 * The rate limiter (`--rate-limit=execution_count`, `--rate-limit-resource`): two instances that
 * share a per-device and a global resource run one at a time, and of the two the one with
 * priority 1 gets two turns for each of the priority-2 one's (fewest executions × priority
 * first, Triton's rule); an instance that needs more than exists, or a resource named global and
 * per-device, fails its model's load with Triton's texts; and the flags' refusals.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editConfig, makeRepo, refusedStartLog, startTritium, stopAndExpectNoShm, TEST_MODELS, type Tritium } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  const repo = makeRepo([
    'rate_limited',
    { from: path.join(TEST_MODELS, 'rate_limited'), name: 'rate_short' },
    { from: path.join(TEST_MODELS, 'rate_limited'), name: 'rate_mixed' },
    { from: path.join(TEST_MODELS, 'sequence_accum'), name: 'rate_seq' },
  ]);
  const edit = (name: string, f: (c: string) => string) => editConfig(repo, name, f);
  edit('rate_short', (c) => c.replace('{ name: "R1" count: 1 }, { name: "R2" global: true count: 1 }] priority: 1', '{ name: "R1" count: 3 }] priority: 1'));
  edit('rate_mixed', (c) => c.replace('{ name: "R2" global: true count: 1 }] priority: 2', '{ name: "R2" count: 1 }] priority: 2'));
  // A sequence model whose two instances share R1: the sequence batcher asks the limiter too.
  edit('rate_seq', (c) =>
    c.replace(
      'instance_group [{ kind: KIND_CPU count: 1 }]',
      'instance_group [{ kind: KIND_CPU count: 2 rate_limiter { resources [{ name: "R1" count: 1 }] } }]',
    ),
  );
  server = await startTritium({
    repos: [repo],
    args: ['--rate-limit=EXECUTION_COUNT', '--rate-limit-resource=R1:1', '--rate-limit-resource=R2:1', '--exit-on-error=false', '--strict-readiness=false'],
  });
}, 120_000);

afterAll(async () => {
  await stopAndExpectNoShm(server);
});

describe('the rate limiter', () => {
  it('runs instances sharing a resource one at a time, priority 1 twice as often as priority 2', async () => {
    const body = JSON.stringify({ inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [1] }] });
    const who = await Promise.all(
      Array.from({ length: 30 }, async () => {
        const json = (await (await fetch(`${server.http}/v2/models/rate_limited/infer`, { method: 'POST', body })).json()) as any;
        return json.outputs[0].data[0] as string;
      }),
    );
    const fast = who.filter((w) => w === 'fast_0').length;
    const slow = who.filter((w) => w === 'slow_0').length;
    expect(fast + slow).toBe(30);
    // Fewest executions × priority first: 2:1, give or take the start.
    expect(fast).toBeGreaterThanOrEqual(18);
    expect(fast).toBeLessThanOrEqual(22);
    expect(server.log()).toMatch(/\| rate_limit +\| EXEC_COUNT +\|/);
    expect(server.log()).toContain('{"name":"R1", "count":1 "device":-1}');
  });

  it('serves a sequence model whose instances share a resource, each sequence in its own slot', async () => {
    const step = async (id: number, k: number, value: number) => {
      const parameters: Record<string, unknown> = { sequence_id: id, delay_ms: 20 };
      if (k === 0) parameters.sequence_start = true;
      if (k === 4) parameters.sequence_end = true;
      const body = JSON.stringify({ parameters, inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [value] }] });
      const json = (await (await fetch(`${server.http}/v2/models/rate_seq/infer`, { method: 'POST', body })).json()) as any;
      return json.outputs?.[0]?.data?.[0] ?? json.error;
    };
    const sums = await Promise.all(
      [1, 2, 3].map(async (id) => {
        const out: unknown[] = [];
        for (let k = 0; k < 5; k++) out.push(await step(900 + id, k, id));
        return out;
      }),
    );
    expect(sums).toEqual([1, 2, 3].map((v) => [1, 2, 3, 4, 5].map((n) => n * v)));
  });

  it("fails the load of a model that needs more than exists, or mixes global and per-device, with Triton's texts", async () => {
    const index = (await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json()) as Array<{
      name: string;
      reason?: string;
    }>;
    expect(index.find((m) => m.name === 'rate_short')?.reason).toContain(
      'Resource count for "R1" is limited to 1 which will prevent scheduling of one or more model instances, the minimum required count is 3',
    );
    expect(index.find((m) => m.name === 'rate_mixed')?.reason).toContain(
      'Resource "R2" is present as both global and device-specific resource in the model configuration.',
    );
  });
});

describe('rate limiter flags', () => {
  const refused = refusedStartLog;

  it("refuses a bad mode or resource with tritonserver's texts", async () => {
    expect(await refused(['--rate-limit=sometimes'])).toContain('invalid argument for --rate-limit');
    expect(await refused(['--rate-limit-resource=R1'])).toContain(
      "--rate-limit-resource option format is '<resource_name>:<count>:<device>' or '<resource_name>:<count>'. Got R1",
    );
    expect(await refused(['--rate-limit-resource=R1:two'])).toContain('Invalid option value. Got two');
  });
});
