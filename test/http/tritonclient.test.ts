/**
 * PROTOCOL-LAYER test with the real Python `tritonclient.http` client against the HTTP
 * frontend in front of the fake core (test/http/protocol-core.ts). Skipped when the project's
 * virtual environment (with tritonclient) is missing.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpServer, type HttpServerHandle } from '../../src/frontends/http/server.js';
import { createProtocolCore } from './protocol-core.js';

const PYTHON = fileURLToPath(new URL('../../.venv/bin/python', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./tritonclient_check.py', import.meta.url));

let server: HttpServerHandle;

beforeAll(async () => {
  server = await startHttpServer(createProtocolCore(), { port: 0, address: '127.0.0.1', maxInputSize: 64 << 20 });
});

afterAll(async () => {
  await server.close();
});

describe.skipIf(!existsSync(PYTHON))('tritonclient.http against the HTTP frontend', () => {
  it('metadata, config, stats, infer (binary/JSON, BYTES, INT64, FP16, compression), errors', async () => {
    const { code, out } = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = spawn(PYTHON, [SCRIPT, `127.0.0.1:${server.port}`], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (c: Buffer) => (out += c.toString()));
      p.stderr.on('data', (c: Buffer) => (out += c.toString()));
      p.on('close', (code) => resolve({ code, out }));
    });
    expect(out).toContain('ALL OK');
    expect(code, out).toBe(0);
  }, 60_000);
});
