/**
 * Load failures of config.pbtxt as a user sees them: the repository index and the log name the
 * file and line, for a text-format error (a non-repeated field given twice, which Triton refuses)
 * and for a load-time validation error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, makeRepo, startTritium, type Tritium } from '../helpers/server.js';

let server: Tritium;
let repo: string;

beforeAll(async () => {
  ensureBuilt();
  repo = makeRepo(['config_duplicate_field', 'config_invalid_dims', 'add_sub']);
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

  it('still loads the other models', async () => {
    const res = await fetch(`${server.http}/v2/models/add_sub/ready`);
    expect(res.status).toBe(200);
  });
});
