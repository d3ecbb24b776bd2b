/**
 * vitest globalSetup: the end-to-end suites start `dist/cli/main.js`, so a `dist/` older than
 * `src/` would test yesterday's code and pass or fail for the wrong reason. Before any suite
 * runs, every `src/**\/*.ts` must have a `dist/` output at least as new as itself; otherwise the
 * run stops and says which file and how to fix it (or, with TRITIUM_REBUILD=1, rebuilds first).
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

export default function setup(): void {
  let stale = staleSources();
  if (stale.length > 0 && process.env.TRITIUM_REBUILD === '1') {
    const r = spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('dist-fresh: `tsc -p tsconfig.json` failed');
    stale = staleSources();
  }
  if (stale.length > 0) {
    const list = stale.slice(0, 5).map((f) => path.relative(ROOT, f));
    const more = stale.length > list.length ? ` and ${stale.length - list.length} more` : '';
    throw new Error(
      `dist/ is older than src/ (${list.join(', ')}${more}): the end-to-end suites would run old code. ` +
        'Run `npx tsc -p tsconfig.json` (or set TRITIUM_REBUILD=1) and start again.',
    );
  }
}
