/**
 * @module core/second-tick
 * Housekeeping that runs once a second — the stubs' heartbeat watchdogs, the descriptor probe —
 * on one shared unref'd timer, so an idle server wakes once a second for all of it rather than
 * once per stub and per watch (docs/benchmarks.md, "An idle server").
 */

/** Something that looks at the world once a second. */
export interface EverySecond {
  onSecond(): void;
}

const PERIOD_MS = 1000;
const members = new Set<EverySecond>();
let timer: NodeJS.Timeout | undefined;

/** `m.onSecond()` runs at every tick from the next one on (the first within a second). */
export function joinSecondTick(m: EverySecond): void {
  members.add(m);
  if (timer !== undefined) return;
  timer = setInterval(tick, PERIOD_MS);
  timer.unref();
}

/** No more ticks for `m`; the timer stops with its last member. */
export function leaveSecondTick(m: EverySecond): void {
  if (!members.delete(m) || members.size > 0 || timer === undefined) return;
  clearInterval(timer);
  timer = undefined;
}

function tick(): void {
  // A copy: a member may leave (or another join) while the set is walked.
  for (const m of [...members]) m.onSecond();
}
