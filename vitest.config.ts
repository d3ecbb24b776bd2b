import { defineConfig } from 'vitest/config';

// End-to-end suites start real servers and stub processes; on a 2-core CI machine running
// them two at a time keeps them from starving each other.
//
// The shutdown suite checks what a SIGKILLed server leaves in /dev/shm and what the next start
// removes. Every server removes stale files when it starts, so a server of another suite
// starting at the same moment would do that suite's job for it. The pipeline suite relies on a
// short execute() measuring under 1 ms from Node's side, which other suites' servers and stubs
// on two cores can stretch. Each runs in a group of its own (one file, so alone), after
// everything else.
const ALONE = { serial: 'test/e2e/shutdown.test.ts', pipeline: 'test/e2e/pipeline-depth.test.ts' };

// dist-fresh rebuilds a stale dist/ once before the run with TRITIUM_REBUILD=1; the suites that
// run the compiled server refuse a stale one themselves (ensureBuilt), unit suites never need it.
const shared = {
  pool: 'forks' as const,
  testTimeout: 60_000,
  hookTimeout: 120_000,
  globalSetup: ['test/helpers/dist-fresh.ts'],
  setupFiles: ['test/helpers/failure-logs.ts'],
};

// The HTTP and gRPC suites run a second time with two HTTP and two gRPC frontend threads
// (frontends/threads/): the same cases, answered by the threads (test/helpers/server.ts adds
// --http-thread-count and --grpc-thread-count).
const THREADED = [
  'test/e2e/http-python.test.ts',
  'test/e2e/batching.test.ts',
  'test/e2e/decoupled.test.ts',
  'test/e2e/connection-limit.test.ts',
  'test/e2e/http-input-size.test.ts',
  'test/e2e/http-refuse-at-once.test.ts',
  'test/e2e/http-half-close.test.ts',
  'test/e2e/json-data-as-triton.test.ts',
  'test/e2e/tritonclient-http.test.ts',
  'test/e2e/client-shm.test.ts',
  'test/e2e/model-control.test.ts',
  'test/e2e/trace.test.ts',
  'test/e2e/logging.test.ts',
  'test/e2e/generate.test.ts',
  'test/e2e/restricted-api.test.ts',
  'test/e2e/metrics-stats.test.ts',
  'test/e2e/grpc-python.test.ts',
  'test/e2e/grpc-compression.test.ts',
  'test/e2e/grpc-body-memory.test.ts',
  'test/e2e/grpc-stream-backpressure.test.ts',
  'test/e2e/grpc-keepalive.test.ts',
  'test/e2e/grpc-tls.test.ts',
  'test/e2e/trace-content.test.ts',
  'test/e2e/large-json-output.test.ts',
  'test/e2e/sequence-batcher.test.ts',
  'test/e2e/response-cache.test.ts',
  'test/e2e/async-concurrent.test.ts',
  'test/e2e/openai.test.ts',
  'test/e2e/fuzz.test.ts',
  'test/e2e/grpc-fuzz.test.ts',
];

export default defineConfig({
  test: {
    maxWorkers: 2,
    minWorkers: 1,
    projects: [
      { test: { ...shared, name: 'parallel', include: ['test/**/*.test.ts'], exclude: Object.values(ALONE), sequence: { groupOrder: 0 } } },
      {
        test: {
          ...shared,
          name: 'threads',
          include: THREADED,
          env: { TRITIUM_TEST_HTTP_THREADS: '2', TRITIUM_TEST_GRPC_THREADS: '2' },
          sequence: { groupOrder: 0 },
        },
      },
      ...Object.entries(ALONE).map(([name, file], i) => ({ test: { ...shared, name, include: [file], sequence: { groupOrder: 1 + i } } })),
    ],
  },
});
