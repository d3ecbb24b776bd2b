/**
 * CancelToken, the request's cancel signal on every frontend: listeners (functions and
 * `handleEvent` objects) are called once, in the order they were added, however the first place
 * (kept without an array) and the rest were filled and emptied.
 */
import { describe, expect, it } from 'vitest';
import { CancelToken } from '../../src/core/cancellation.js';

function recorder() {
  const calls: string[] = [];
  const fn = (name: string) => () => calls.push(name);
  const obj = (name: string) => ({ handleEvent: () => calls.push(name) });
  return { calls, fn, obj };
}

describe('CancelToken', () => {
  it('calls every listener once, functions and objects, in the order they were added', () => {
    const t = new CancelToken();
    const { calls, fn, obj } = recorder();
    t.addEventListener('abort', fn('a'));
    t.addEventListener('abort', obj('b'));
    t.addEventListener('abort', fn('c'));
    expect(t.aborted).toBe(false);
    t.abort();
    t.abort();
    expect(t.aborted).toBe(true);
    expect(calls).toEqual(['a', 'b', 'c']);
  });

  it('keeps the adding order when the first or a later listener is removed and others added', () => {
    const t = new CancelToken();
    const { calls, fn, obj } = recorder();
    const a = fn('a');
    const b = obj('b');
    const c = fn('c');
    t.addEventListener('abort', a);
    t.addEventListener('abort', b);
    t.removeEventListener('abort', a);
    t.addEventListener('abort', c); // after b, not in a's place
    t.removeEventListener('abort', b);
    const d = fn('d');
    t.addEventListener('abort', d);
    t.abort();
    expect(calls).toEqual(['c', 'd']);
  });

  it('reuses the first place once it and everything after it are gone', () => {
    const t = new CancelToken();
    const { calls, fn } = recorder();
    const a = fn('a');
    const b = fn('b');
    t.addEventListener('abort', a);
    t.addEventListener('abort', b);
    t.removeEventListener('abort', b);
    t.removeEventListener('abort', a);
    t.addEventListener('abort', fn('c'));
    t.addEventListener('abort', fn('d'));
    t.removeEventListener('abort', fn('never added')); // unknown: nothing happens
    t.abort();
    expect(calls).toEqual(['c', 'd']);
  });

  it('ignores listeners added after the abort and calls none that were removed', () => {
    const t = new CancelToken();
    const { calls, fn } = recorder();
    const a = fn('a');
    t.addEventListener('abort', a);
    t.removeEventListener('abort', a);
    t.abort();
    t.addEventListener('abort', fn('late'));
    t.abort();
    expect(calls).toEqual([]);
  });
});
