/**
 * Conformance: Python `tritonclient.http` (from PyPI) against the real server — liveness,
 * readiness, metadata, config, infer with JSON and binary data, every datatype, BYTES, error
 * codes, statistics. The checks live in tritonclient_http_check.py.
 */
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeRepo, pythonAsync, ROOT, startTritium, type Tritium } from '../helpers/server.js';

let server: Tritium;

beforeAll(async () => {
  server = await startTritium({ repos: [makeRepo(['add_sub', 'identity_all', 'misbehave'])] });
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

it('passes every tritonclient.http check', async () => {
  const out = await pythonAsync(
    `import runpy, sys; sys.argv = ['x', '127.0.0.1:${server.httpPort}']; runpy.run_path('${path.join(ROOT, 'test/e2e/tritonclient_http_check.py')}', run_name='__main__')`,
  );
  expect(out).toContain('all ok');
}, 120_000);
