/**
 * The default scheduler's pipeline into a real stub (docs/design.md, "Pipelining"): while an
 * instance's executions are short, up to four batches wait in its ring A; once they average
 * 1 ms or more, two. The real CLI and stub serve test/models/batch_probe without its dynamic
 * batching (so the default scheduler runs every request as its own execution, one instance),
 * over HTTP; where each request went is read from the `ipc` and `batcher` trace lines and
 * nv_inference_pending_request_count, and a request stays in the stub on batch_probe's `hold`
 * file, never on a sleep.
 *
 * It runs in the serial group (vitest.config.ts): "short" is the stub's own wall clock, which
 * other suites' servers and stubs on a 2-core machine could still stretch.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editConfig, logLines, makeRepo, startTritium, type Tritium } from '../helpers/server.js';
import { metricValue, scrape, waitFor } from './infer-helpers.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pipeline-depth-'));

function infer(server: Tritium, id: string, params?: Record<string, unknown>): Promise<Response> {
  return fetch(`${server.http}/v2/models/batch_probe/infer`, {
    method: 'POST',
    body: JSON.stringify({ id, ...(params ? { parameters: params } : {}), inputs: [{ name: 'IN', shape: [1, 1], datatype: 'FP32', data: [1] }] }),
  });
}

/** The `ipc` line that sent request `id` to the stub, once there is one. */
function sentLine(server: Tritium, id: string): string | undefined {
  const who = new RegExp(`= #\\d+ id=${id}(?![\\w-])`);
  return logLines(server, 'sent batch').find((l) => who.test(l));
}

/** The `batcher` line that queued request `id`, once there is one. */
function queuedLine(server: Tritium, id: string): string | undefined {
  const who = new RegExp(`queued #\\d+ id=${id}(?![\\w-])`);
  return logLines(server, 'queued').find((l) => who.test(l));
}

describe('pipelining into a stub', () => {
  let server: Tritium;

  beforeAll(async () => {
    const repo = makeRepo(['batch_probe']);
    editConfig(repo, 'batch_probe', (c) => {
      const out = c.replace(/^dynamic_batching .*$/m, '');
      if (out === c) throw new Error('batch_probe config: no dynamic_batching line to remove');
      return out;
    });
    server = await startTritium({ repos: [repo], env: { TRITIUM_TRACE: 'ipc,batcher' } });
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('queues four batches in the stub while executions are short, two once they are long', async () => {
    // "Short" is the pool's running mean of the stub's own times for its executions (exec_done
    // carries them): Node's send-to-answer time also holds the sleeping stub's wake-up, which
    // a busy 2-core host stretched past 1 ms on average in about one run in four.
    for (let i = 0; i < 40; i++) {
      const res = await infer(server, `warm-${i}`);
      expect(res.status).toBe(200);
      await res.text();
    }
    // One execution held in the stub, then four more requests.
    const hold = path.join(tmp, 'release-held');
    const held = infer(server, 'held', { hold });
    await waitFor('the held request sent to the stub', () => sentLine(server, 'held') !== undefined);
    const more = ['b', 'c', 'd', 'e'].map((id) => infer(server, id));
    await waitFor(
      'b, c and d sent and e queued',
      () => ['b', 'c', 'd'].every((id) => sentLine(server, id) !== undefined) && queuedLine(server, 'e') !== undefined,
    );
    // Three wait in ring A behind the held one; the fourth stays in the scheduler's queue.
    expect(sentLine(server, 'b')).toContain('behind 1 batch(es)');
    expect(sentLine(server, 'c')).toContain('behind 2 batch(es)');
    expect(sentLine(server, 'd')).toContain('behind 3 batch(es)');
    expect(sentLine(server, 'e')).toBeUndefined();
    expect(queuedLine(server, 'e')).toContain('every instance busy');
    // Pending, as Triton counts it, is every request received and not started: the three in
    // ring A and the one in the scheduler's queue.
    const m = await scrape(server.metricsPort!);
    expect(metricValue(m.samples, 'nv_inference_pending_request_count', { model: 'batch_probe', version: '1' })).toBe(4);

    // The held execution lasts far beyond 1 ms: the depth drops to two, so e is not handed over
    // the moment the held one is answered (three would still be ahead of it), only once at most
    // one is.
    fs.writeFileSync(hold, '');
    const answers = await Promise.all([held, ...more]);
    for (const res of answers) {
      expect(res.status).toBe(200);
      await res.text();
    }
    const eSent = sentLine(server, 'e');
    expect(eSent).toBeDefined();
    expect(eSent).not.toMatch(/behind [23] batch/);
  });
});
