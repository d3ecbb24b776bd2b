/**
 * The V8 flags the server restarts itself with (src/cli/node-flags.ts): which it adds, which it
 * leaves to the operator, and the restarted server itself: same pid, its log on stdout, the
 * flags on its command line, the restart's marker in no process below it; and no restart with
 * a debugger's port open.
 */
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { missingNodeFlags, SERVER_NODE_FLAGS } from '../../src/cli/node-flags.js';
import { cmdlineOf, descendantsOf } from '../helpers/processes.js';
import { makeRepo, startTritium, stopAndExpectNoShm } from '../helpers/server.js';

const repo = makeRepo(['add_sub']);
afterAll(() => fs.rmSync(repo, { recursive: true, force: true }));

const argvOf = (pid: number) => cmdlineOf(pid).split('\0');
const environOf = (pid: number) => fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');

describe('missingNodeFlags', () => {
  it('adds both where nothing sets them', () => {
    expect(missingNodeFlags([], undefined)).toEqual(['--max-semi-space-size=4', '--no-parallel-scavenge']);
    expect(missingNodeFlags(['--enable-source-maps'], '--max-old-space-size=512')).toEqual([...SERVER_NODE_FLAGS]);
  });

  it('leaves a flag the operator gave, in either spelling, negated or not', () => {
    expect(missingNodeFlags([], '--max-semi-space-size=16')).toEqual(['--no-parallel-scavenge']);
    expect(missingNodeFlags(['--max_semi_space_size=2'], '')).toEqual(['--no-parallel-scavenge']);
    expect(missingNodeFlags(['--parallel-scavenge'], '')).toEqual(['--max-semi-space-size=4']);
    expect(missingNodeFlags(['--no_parallel_scavenge', '--max-semi-space-size', '8'], '')).toEqual([]);
  });
});

describe('the restarted server', () => {
  it('runs with the flags in the process it was started as, and hands no marker on', async () => {
    const s = await startTritium({ repos: [repo] });
    const argv = argvOf(s.proc.pid!);
    expect(argv.slice(1, 3)).toEqual([...SERVER_NODE_FLAGS]);
    expect(argv[3]).toMatch(/bin\/tritium\.js$/);
    // Its log reached the pipe the test gave the first process.
    expect(s.log()).toContain('Started HTTPService');
    const below = descendantsOf(s.proc.pid!);
    expect(below.length).toBeGreaterThanOrEqual(2); // the fork server and add_sub's stub
    for (const pid of below) expect(environOf(pid).filter((e) => e.startsWith('TRITIUM_NODE_FLAGS_RESTART='))).toEqual([]);
    const r = await fetch(`${s.http}/v2/models/add_sub/infer`, {
      method: 'POST',
      body: JSON.stringify({
        inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'FP32', shape: [4], data: [1, 2, 3, 4] })),
      }),
    });
    expect(((await r.json()) as { outputs: Array<{ data: number[] }> }).outputs[0]!.data).toEqual([2, 4, 6, 8]);
    await stopAndExpectNoShm(s);
  });

  it('does not restart with a debugger listening, which would open a second port', async () => {
    const s = await startTritium({ repos: [repo], env: { NODE_OPTIONS: '--inspect=127.0.0.1:0' } });
    expect(s.log().match(/Debugger listening on/g)).toHaveLength(1);
    expect(argvOf(s.proc.pid!).filter((a) => SERVER_NODE_FLAGS.includes(a))).toEqual([]);
    await stopAndExpectNoShm(s);
  });

  it("keeps the operator's young generation and adds only the other flag", async () => {
    const s = await startTritium({ repos: [repo], env: { NODE_OPTIONS: '--max-semi-space-size=16' } });
    const argv = argvOf(s.proc.pid!);
    expect(argv.slice(1, 2)).toEqual(['--no-parallel-scavenge']);
    expect(argv.filter((a) => a.includes('semi-space'))).toEqual([]);
    await stopAndExpectNoShm(s);
  });
});
