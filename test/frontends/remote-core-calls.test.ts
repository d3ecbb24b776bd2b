/**
 * A frontend thread's synchronous calls to the main thread (src/frontends/threads/remote-core.ts):
 * the main thread answers each with the call's id, and a reply that comes after its call gave up
 * (a main thread busy past the call timeout) is skipped by the next call instead of being taken
 * for its answer. The main thread's side is played here by writing its replies on the real call
 * port and its id in the real call flag (CoreHost.call does exactly that); the whole path between
 * threads runs in test/e2e/frontend-threads.test.ts.
 */
import { MessageChannel } from 'node:worker_threads';
import { afterEach, expect, it } from 'vitest';
import { Errors } from '../../src/core/errors.js';
import { createRing } from '../../src/frontends/threads/record-ring.js';
import { RemoteCore } from '../../src/frontends/threads/remote-core.js';
import { FrontendStatus } from '../../src/frontends/threads/status.js';
import { type CallReply, wireError } from '../../src/frontends/threads/wire.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

function remote(): { core: RemoteCore; answer: (reply: CallReply) => void } {
  const objects = new MessageChannel();
  const calls = new MessageChannel();
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const core = new RemoteCore(
    { toMain: createRing(64 * 1024), toThread: createRing(64 * 1024), objects: objects.port1 },
    calls.port1,
    flag,
    new FrontendStatus(),
  );
  closers.push(() => {
    for (const p of [objects.port1, objects.port2, calls.port1, calls.port2]) p.close();
  });
  const answer = (reply: CallReply): void => {
    calls.port2.postMessage(reply);
    Atomics.store(flag, 0, reply.id);
  };
  return { core, answer };
}

it("skips the late replies of calls that gave up, and takes its own call's", () => {
  const { core, answer } = remote();
  // Calls 1 and 2 gave up; their replies come late, before call 3's, which is answered.
  answer({ id: 1, value: ['late 1'] });
  answer({ id: 2, value: ['late 2'] });
  (core as unknown as { lastSyncCall: number }).lastSyncCall = 2;
  answer({ id: 3, value: [{ name: 'mine' }] });
  expect(core.statistics()).toEqual([{ name: 'mine' }]);
  // The next call finds no stale reply in its way.
  answer({ id: 4, value: [] });
  expect(core.repositoryIndex(false)).toEqual([]);
});

it("carries the main thread's error as the call's", () => {
  const { core, answer } = remote();
  answer({ id: 1, error: wireError(Errors.unknownModel('nope')) });
  expect(() => core.statistics('nope')).toThrow("Request for unknown model: 'nope' is not found");
});
