/**
 * @module frontends/wait-async
 * `Atomics.waitAsync` (Node ≥ 16; typed from ES2024 on, newer than this project's lib): an
 * event loop's wait on a shared word, for memory another thread frees (body-budget.ts) and for
 * records another thread publishes (threads/record-ring.ts).
 */
export const waitAsync = (
  Atomics as unknown as {
    waitAsync(a: Int32Array, i: number, v: number): { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
  }
).waitAsync;
