/**
 * ReadinessProbe, Node's side of `is_ready()` (docs/protocol-notes.md, "A model's own readiness check"), writing to a real
 * socket (a loopback connection stands in for the stub's end of its pipe): one request while a
 * call is in flight, checks that arrive meanwhile share its answer, a check that outwaits its
 * bound is not ready and a later check joins the same call, and a dead stub ends every waiting
 * check.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Errors } from '../src/core/errors.js';
import { ReadinessProbe } from '../src/backends/python/readiness-probe.js';

/** A connected pair of sockets: Node's end of the pipe and the stub's end that records requests. */
async function pipePair(): Promise<{ node: net.Socket; seqs: number[]; close: () => void }> {
  const seqs: number[] = [];
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const accepted = new Promise<net.Socket>((r) => server.once('connection', r));
  const node = net.connect(port, '127.0.0.1');
  const stub = await accepted;
  let pending = Buffer.alloc(0);
  stub.on('data', (d: Buffer) => {
    pending = Buffer.concat([pending, d]);
    while (pending.length >= 4) {
      seqs.push(pending.readUInt32LE(0));
      pending = pending.subarray(4);
    }
  });
  return {
    node,
    seqs,
    close: () => {
      node.destroy();
      stub.destroy();
      server.close();
    },
  };
}

/** Bounded wait for `n` requests to reach the stub's end. */
async function requests(seqs: number[], n: number): Promise<number[]> {
  for (let i = 0; i < 1000 && seqs.length < n; i++) await new Promise((r) => setTimeout(r, 5));
  return seqs;
}

let cleanup: (() => void) | undefined;
afterEach(() => cleanup?.());

describe('ReadinessProbe', () => {
  it('sends one request for checks that overlap and gives them all its answer', async () => {
    const p = await pipePair();
    cleanup = p.close;
    const probe = new ReadinessProbe(p.node, 'm_0');
    const checks = [probe.check(), probe.check(), probe.check()];
    expect(await requests(p.seqs, 1)).toEqual([1]);
    probe.answered({ seq: 1, ready: true });
    expect(await Promise.all(checks)).toEqual([undefined, undefined, undefined]);
    const next = probe.check();
    expect(await requests(p.seqs, 2)).toEqual([1, 2]);
    probe.answered({ seq: 2, ready: false });
    expect(await next).toEqual(Errors.userNotReady('m_0'));
  });

  it('maps a raised exception or a non-bool to not ready with its text', async () => {
    const p = await pipePair();
    cleanup = p.close;
    const probe = new ReadinessProbe(p.node, 'm_0');
    const check = probe.check();
    await requests(p.seqs, 1);
    probe.answered({ seq: 1, ready: false, err: 'is_ready() must return a boolean value' });
    const e = await check;
    expect([e?.code, e?.message]).toEqual([Errors.userReadyFailed('').code, 'is_ready() must return a boolean value']);
  });

  it('a check past its bound is not ready; a later check joins the call still running instead of asking again', async () => {
    const p = await pipePair();
    cleanup = p.close;
    const probe = new ReadinessProbe(p.node, 'm_0', 20);
    expect(await probe.check()).toEqual(Errors.userReadyTimeout());
    const joined = probe.check();
    probe.answered({ seq: 1, ready: true });
    expect(await joined).toBeUndefined();
    expect(await requests(p.seqs, 1)).toEqual([1]);
  });

  it('ignores an answer to another request and ends waiting checks when the stub dies', async () => {
    const p = await pipePair();
    cleanup = p.close;
    const probe = new ReadinessProbe(p.node, 'm_0');
    const check = probe.check();
    probe.answered({ seq: 7, ready: true });
    const dead = Errors.stubUnhealthy('m_0', 'The stub exited with code 1.');
    probe.abandon(dead);
    expect(await check).toBe(dead);
  });
});
