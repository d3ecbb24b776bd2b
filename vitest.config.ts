import { defineConfig } from 'vitest/config';

// End-to-end suites start real servers and stub processes; on a 2-core CI machine running
// them two at a time keeps them from starving each other.
//
// The shutdown suite checks what a SIGKILLed server leaves in /dev/shm and what the next start
// removes. Every server removes stale files when it starts, so a server of another suite
// starting at the same moment would do that suite's job for it: it runs in a group of its own,
// after everything else.
const SERIAL = ['test/e2e/shutdown.test.ts'];

// dist-fresh rebuilds a stale dist/ once before the run with TRITIUM_REBUILD=1; the suites that
// run the compiled server refuse a stale one themselves (ensureBuilt), unit suites never need it.
const shared = { pool: 'forks' as const, testTimeout: 60_000, hookTimeout: 120_000, globalSetup: ['test/helpers/dist-fresh.ts'] };

export default defineConfig({
  test: {
    maxWorkers: 2,
    minWorkers: 1,
    projects: [
      { test: { ...shared, name: 'parallel', include: ['test/**/*.test.ts'], exclude: SERIAL, sequence: { groupOrder: 0 } } },
      { test: { ...shared, name: 'serial', include: SERIAL, sequence: { groupOrder: 1 } } },
    ],
  },
});
