/**
 * Setup file (vitest.config.ts): when a test fails, prints the end of the log of every server
 * its file still runs. A failure that happens once in many CI runs (a hang, a lost answer) can
 * then be read from that run's output instead of needing a reproduction.
 */
import { afterEach } from 'vitest';
import { liveServers, type Tritium } from './server.js';

const TAIL = 6000;

afterEach(async (ctx) => {
  if (ctx.task.result?.state !== 'fail') return;
  for (const s of liveServers) {
    const log = s.log();
    const head = `--- log of server pid ${s.proc.pid} (http ${s.httpPort}, grpc ${s.grpcPort ?? '-'}) after failed test '${ctx.task.name}'`;
    process.stderr.write(
      `${head}${log.length > TAIL ? `, last ${TAIL} chars` : ''} ---\n${log.slice(-TAIL)}\n--- statistics ---\n${await statistics(s)}\n--- end ---\n`,
    );
  }
});

/** Each model's request counts, which say where a lost or stuck request went. */
async function statistics(s: Tritium): Promise<string> {
  if (!s.http) return '(not started)';
  try {
    const r = await fetch(`${s.http}/v2/models/stats`, { signal: AbortSignal.timeout(3000) });
    const body = (await r.json()) as {
      model_stats?: Array<{
        name: string;
        version: string;
        inference_count: number;
        execution_count: number;
        inference_stats: Record<string, { count: number }>;
      }>;
    };
    return (body.model_stats ?? [])
      .map(
        (m) =>
          `${m.name}/${m.version}: inferences ${m.inference_count}, executions ${m.execution_count}, ${Object.entries(m.inference_stats)
            .map(([k, v]) => `${k} ${v.count}`)
            .join(', ')}`,
      )
      .join('\n');
  } catch (err) {
    return `(statistics not answered: ${(err as Error).message})`;
  }
}
