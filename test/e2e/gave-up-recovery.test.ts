/**
 * After supervision gave up on an instance (its initialize failed at every restart), the model
 * is not lost until the server restarts: in explicit mode a load request brings it back, in
 * poll mode a change to its files does. Model: test/models/crash_loop (initialize fails once
 * $MODEL_STATE_DIR/crashloop_started exists; MODE 2 makes execute exit the process).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, startTritium, stopAndExpectNoShm, type Tritium } from '../helpers/server.js';

interface Setup {
  server: Tritium;
  repo: string;
  state: string;
}

const setups: Setup[] = [];

async function start(args: string[]): Promise<Setup> {
  const repo = makeRepo(['crash_loop']);
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-gaveup-'));
  const server = await startTritium({ repos: [repo], args, env: { MODEL_STATE_DIR: state } });
  const s = { server, repo, state };
  setups.push(s);
  return s;
}

let explicit: Setup;
let poll: Setup;

beforeAll(async () => {
  [explicit, poll] = await Promise.all([
    start(['--model-control-mode=explicit', '--load-model=crash_loop']),
    start(['--model-control-mode=poll', '--repository-poll-secs=1']),
  ]);
}, 120_000);

afterAll(async () => {
  for (const s of setups) {
    await stopAndExpectNoShm(s.server);
    fs.rmSync(s.repo, { recursive: true, force: true });
    fs.rmSync(s.state, { recursive: true, force: true });
  }
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function infer(s: Setup, mode: number): Promise<{ status: number; body: { error?: string; outputs?: Array<{ data: number[] }> } }> {
  const res = await fetch(`${s.server.http}/v2/models/crash_loop/infer`, {
    method: 'POST',
    body: JSON.stringify({ inputs: [{ name: 'MODE', shape: [1], datatype: 'INT32', data: [mode] }] }),
  });
  return { status: res.status, body: await res.json() };
}

async function indexEntry(s: Setup): Promise<{ state?: string; reason?: string } | undefined> {
  const index = await (await fetch(`${s.server.http}/v2/repository/index`, { method: 'POST', body: '{}' })).json();
  return index.find((e: { name: string }) => e.name === 'crash_loop');
}

/** Crashes the stub; every restart's initialize then fails until supervision gives up. */
async function crashUntilGivenUp(s: Setup): Promise<void> {
  expect((await infer(s, 0)).status).toBe(200);
  expect((await infer(s, 2)).status).toBe(500);
  // Back-off 0.25 + 0.5 + 1 + 2 + 4 s, plus five interpreter starts.
  const deadline = Date.now() + 45_000;
  while ((await indexEntry(s))?.state !== 'UNAVAILABLE') {
    if (Date.now() > deadline) throw new Error(`not given up on\n${s.server.log().slice(-3000)}`);
    await sleep(200);
  }
  expect((await indexEntry(s))?.reason).toContain('will not be restarted again');
  expect(s.server.log()).toContain('It comes back when the model is loaded again');
  expect((await infer(s, 0)).status).toBe(404);
}

/** What made initialize fail is fixed. */
const fixCause = (s: Setup) => fs.rmSync(path.join(s.state, 'crashloop_started'));

describe('a model whose instance supervision gave up on', () => {
  it('explicit mode: a load request brings it back', async () => {
    const s = explicit;
    await crashUntilGivenUp(s);
    fixCause(s);
    const load = await fetch(`${s.server.http}/v2/repository/models/crash_loop/load`, { method: 'POST', body: '{}' });
    expect(load.status).toBe(200);
    expect(await indexEntry(s)).toEqual({ name: 'crash_loop', version: '1', state: 'READY' });
    const ok = await infer(s, 7);
    expect(ok.status).toBe(200);
    expect(ok.body.outputs?.[0]?.data).toEqual([7]);
    expect(s.server.log()).toContain("successfully loaded 'crash_loop'");
  }, 90_000);

  it('poll mode: a change in the repository brings it back', async () => {
    const s = poll;
    await crashUntilGivenUp(s);
    fixCause(s);
    // An unchanged model is not reloaded by a poll; the fix lands as a change of its files.
    await sleep(2_500);
    expect((await indexEntry(s))?.state).toBe('UNAVAILABLE');
    fs.appendFileSync(path.join(s.repo, 'crash_loop', '1', 'model.py'), '\n# fixed\n');
    const deadline = Date.now() + 30_000;
    while ((await indexEntry(s))?.state !== 'READY') {
      if (Date.now() > deadline) throw new Error(`not reloaded\n${s.server.log().slice(-3000)}`);
      await sleep(200);
    }
    const ok = await infer(s, 5);
    expect(ok.status).toBe(200);
    expect(ok.body.outputs?.[0]?.data).toEqual([5]);
  }, 90_000);
});
