import { defineConfig } from 'vitest/config';

// End-to-end suites start real servers and stub processes; on a 2-core CI machine running
// them two at a time keeps them from starving each other.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    minWorkers: 1,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
