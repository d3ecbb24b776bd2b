/**
 * An `initialize` that takes long, or never returns, is not silent and need not block for ever:
 * the load says every few seconds that it is still initializing (log and repository index), and
 * `--backend-config=python,initialize-timeout-seconds` fails it with a text naming the setting.
 * slow_execute's initialize sleeps INIT_SLEEP_S seconds.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

const servers: Tritium[] = [];

afterAll(async () => {
  for (const s of servers) await stopAndExpectNoShm(s);
});

async function start(initSleepS: number, args: string[] = []): Promise<Tritium> {
  const s = await startTritium({
    repos: [makeRepo(['slow_execute'])],
    args: ['--model-control-mode=explicit', ...args],
    env: { INIT_SLEEP_S: String(initSleepS) },
  });
  servers.push(s);
  return s;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('a slow initialize', () => {
  it('is logged and shown in the repository index while it runs', async () => {
    const server = await start(8);
    const load = fetch(`${server.http}/v2/repository/models/slow_execute/load`, { method: 'POST' });
    let shown: { state?: string; reason?: string } | undefined;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const index = (await (await fetch(`${server.http}/v2/repository/index`, { method: 'POST' })).json()) as Array<{
        name: string;
        state?: string;
        reason?: string;
      }>;
      const entry = index.find((e) => e.name === 'slow_execute');
      if (entry?.reason?.startsWith('initializing')) {
        shown = entry;
        break;
      }
      await sleep(200);
    }
    expect(shown?.state).toBe('LOADING');
    expect(shown?.reason).toMatch(/^initializing for \d+ s$/);
    expect(server.log()).toMatch(/loading: slow_execute:1 is still initializing its instances after \d+ s/);
    expect((await load).status).toBe(200);
  }, 60_000);

  it('fails the load past initialize-timeout-seconds, naming the setting, and the server goes on', async () => {
    const server = await start(600, ['--backend-config=python,initialize-timeout-seconds=2']);
    const res = await fetch(`${server.http}/v2/repository/models/slow_execute/load`, { method: 'POST' });
    expect(res.status).toBe(400);
    const error = ((await res.json()) as { error: string }).error;
    expect(error).toContain("load failed for model 'slow_execute'");
    expect(error).toMatch(/initialize of instance 'slow_execute_0_\d' did not return within 2 s \(--backend-config=python,initialize-timeout-seconds\)/);
    expect((await fetch(`${server.http}/v2/health/live`)).status).toBe(200);
  }, 60_000);
});
