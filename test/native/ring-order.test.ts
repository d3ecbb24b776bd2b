/**
 * The C++ rings (native/src/ring_core.h) publish positions with release and read them with
 * acquire, so they are correct on weakly ordered machines (aarch64) and not only under x86's
 * store order. ThreadSanitizer checks exactly that on this x86 host: it models the C++ memory
 * model, so a missing release/acquire pair shows as a data race on the record bytes.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runAsync } from '../helpers/run.js';
import { ROOT } from '../helpers/server.js';

const CXX = process.env.CXX ?? 'g++';
const haveCxx = spawnSync(CXX, ['--version']).status === 0;

describe('ring_core.h memory ordering', () => {
  it.skipIf(!haveCxx)('passes ThreadSanitizer with a producer and a consumer thread', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-ring-tsan-'));
    try {
      const exe = path.join(dir, 'ring_order_check');
      const build = await runAsync(CXX, [
        '-std=c++17',
        '-O1',
        '-g',
        '-fsanitize=thread',
        `-I${path.join(ROOT, 'native', 'src')}`,
        path.join(ROOT, 'test', 'native', 'ring_order_check.cc'),
        '-o',
        exe,
        '-pthread',
      ]);
      expect(build.stderr).toBe('');
      expect(build.status).toBe(0);
      const run = await runAsync(exe, [], { env: { ...process.env, TSAN_OPTIONS: 'halt_on_error=1' } });
      expect(run.stderr).not.toContain('ThreadSanitizer');
      expect(run.status).toBe(0);
      expect(run.stdout).toContain('ring order check: 20000 messages');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
