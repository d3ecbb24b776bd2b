#!/usr/bin/env node
// npm `prepare` of a source checkout (npm install / npm ci, and before npm pack): the Python
// environment (scripts/setup-python.mjs), then the TypeScript build into dist/.
//
// A production install (`npm ci --omit=dev`, as the container's runtime stage runs it) has no
// TypeScript compiler; it must start from a tree whose dist/ was built by a full install (the
// container's build stage), and then only says so. Installing the packed tarball never runs this:
// the tarball carries dist/.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const node = (args) => spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' }).status ?? 1;

if (node([path.join(root, 'scripts', 'setup-python.mjs')]) !== 0) process.exit(1);

let tsc;
try {
  tsc = createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');
} catch {
  tsc = undefined;
}
if (tsc) process.exit(node([tsc, '-p', path.join(root, 'tsconfig.json')]));
if (fs.existsSync(path.join(root, 'dist', 'cli', 'main.js'))) {
  console.log('[prepare] TypeScript is not installed (--omit=dev): using the dist/ already built');
  process.exit(0);
}
console.error(
  '[prepare] dist/ is missing and TypeScript is not installed: build with a full `npm ci` first (then `npm prune --omit=dev` or `npm ci --omit=dev` keeps dist/)',
);
process.exit(1);
