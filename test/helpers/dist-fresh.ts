/**
 * Whether `dist/` is as new as `src/`. The suites that run the compiled server (they start
 * `bin/tritium.js` or import `dist/`) would otherwise test yesterday's code and pass or fail for
 * the wrong reason, so `ensureBuilt()` (test/helpers/server.ts) refuses a stale `dist/`, naming
 * the file and the fix; the unit suites import `src/` and run whatever state `dist/` is in.
 *
 * As vitest's globalSetup, with TRITIUM_REBUILD=1, it rebuilds a stale `dist/` once before any
 * suite runs (one build, not one per worker).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Not from ./server.js: that module imports vitest, which a globalSetup may not load.
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const SRC = path.join(ROOT, 'src');
const DIST = path.join(ROOT, 'dist');

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The sources whose compiled file is missing or older than they are. */
export function staleSources(): string[] {
  return sources(SRC).filter((src) => {
    const out = path.join(DIST, path.relative(SRC, src)).replace(/\.ts$/, '.js');
    return !fs.existsSync(out) || fs.statSync(out).mtimeMs < fs.statSync(src).mtimeMs;
  });
}

/** Why `dist/` cannot be used, or undefined when every source has an output as new as itself. */
export function staleDist(): string | undefined {
  const stale = staleSources();
  if (stale.length === 0) return undefined;
  const list = stale.slice(0, 5).map((f) => path.relative(ROOT, f));
  const more = stale.length > list.length ? ` and ${stale.length - list.length} more` : '';
  return (
    `dist/ is older than src/ (${list.join(', ')}${more}): this suite runs the compiled server and would run old code. ` +
    'Run `npx tsc -p tsconfig.json` (or set TRITIUM_REBUILD=1) and start again.'
  );
}

export default function setup(): void {
  if (process.env.TRITIUM_REBUILD !== '1' || staleSources().length === 0) return;
  const r = spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('dist-fresh: `tsc -p tsconfig.json` failed');
}
