/**
 * Load failures of config.pbtxt as a user sees them: the repository index and the log name the
 * file and line, for a text-format error (a non-repeated field given twice, which Triton refuses)
 * and for a load-time validation error; and settings tritium cannot honour, which are refused
 * (implicit sequence state) or said out loud (response_cache), never silently ignored.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, makeRepo, startTritium, type Tritium } from '../helpers/server.js';

let server: Tritium;
let repo: string;

beforeAll(async () => {
  ensureBuilt();
  repo = makeRepo([
    'config_duplicate_field',
    'config_invalid_dims',
    'config_sequence_batching',
    'config_sequence_bad_control',
    'config_response_cache',
    'add_sub',
  ]);
  // The add_sub variants differ from python_models/add_sub in their config only.
  for (const variant of ['config_sequence_batching', 'config_sequence_bad_control', 'config_response_cache']) {
    fs.mkdirSync(path.join(repo, variant, '1'), { recursive: true });
    fs.copyFileSync(path.join(repo, 'add_sub', '1', 'model.py'), path.join(repo, variant, '1', 'model.py'));
  }
  server = await startTritium({ repos: [repo], args: ['--exit-on-error=false', '--strict-readiness=false'] });
});

afterAll(async () => {
  await server?.stop();
});

async function indexReason(name: string): Promise<string | undefined> {
  const res = await fetch(`${server.http}/v2/repository/index`, { method: 'POST', body: '{}' });
  const index = (await res.json()) as Array<{ name: string; state?: string; reason?: string }>;
  const entry = index.find((e) => e.name === name);
  expect(entry?.state).toBe('UNAVAILABLE');
  return entry?.reason;
}

describe('config.pbtxt load failures', () => {
  it('refuses a non-repeated field given twice, naming file and line', async () => {
    const where = `${repo}/config_duplicate_field/config.pbtxt:5:1: `;
    const message = 'Non-repeated field "max_batch_size" is specified multiple times.';
    expect(await indexReason('config_duplicate_field')).toBe(where + message);
    expect(server.log()).toContain(where + message);
  });

  it('names the line of a validation error', async () => {
    const reason = await indexReason('config_invalid_dims');
    expect(reason).toMatch(/config_invalid_dims\/config\.pbtxt:6:\d+: output\[0\](\.dims)?: .*must specify 'dims'/);
    expect(server.log()).toContain(reason!);
  });

  it('refuses implicit sequence state on a Python model, which could never write the state', async () => {
    const reason = await indexReason('config_sequence_batching');
    expect(reason).toContain(
      "model 'config_sequence_batching' uses sequence_batching with implicit state ('state') on a Python model, which cannot write state outputs, so the model is not loaded",
    );
    expect(reason).toMatch(/config_sequence_batching\/config\.pbtxt:\d+/);
    expect(server.log()).toContain(reason!);
  });

  it("checks a sequence_batching config as Triton does first: a bad control input gets Triton's text", async () => {
    const reason = await indexReason('config_sequence_bad_control');
    expect(reason).toBe(
      `${repo}/config_sequence_bad_control/config.pbtxt:15:64: sequence_batching.control_input[0].control[0].data_type: ` +
        'unexpected data type for control CONTROL_SEQUENCE_CORRID for config_sequence_bad_control. ' +
        'Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING',
    );
  });

  it('loads a model with response_cache enabled, warns that there is no cache, and computes every request', async () => {
    expect(server.log()).toContain("model 'config_response_cache' enables response_cache, but the server has no cache (--cache-config local,size=<bytes>)");
    const body = JSON.stringify({
      inputs: [
        { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
        { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [1, 1, 1, 1] },
      ],
    });
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${server.http}/v2/models/config_response_cache/infer`, { method: 'POST', body });
      expect(res.status).toBe(200);
      const out = (await res.json()) as { outputs: Array<{ name: string; data: number[] }> };
      expect(out.outputs.find((o) => o.name === 'OUTPUT0')?.data).toEqual([2, 3, 4, 5]);
    }
    const stats = (await (await fetch(`${server.http}/v2/models/config_response_cache/stats`)).json()) as {
      model_stats: Array<{ inference_stats: { success: { count: number }; cache_hit: { count: number } } }>;
    };
    expect(stats.model_stats[0]!.inference_stats.success.count).toBe(2);
    expect(stats.model_stats[0]!.inference_stats.cache_hit.count).toBe(0);
  });

  it('still loads the other models', async () => {
    const res = await fetch(`${server.http}/v2/models/add_sub/ready`);
    expect(res.status).toBe(200);
  });
});
