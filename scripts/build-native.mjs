#!/usr/bin/env node
// Builds native/build/Release/tritium_native.node with node-gyp.
// node-gyp ships inside npm, so no extra dependency: prefer the copy npm points us at
// (npm_config_node_gyp during `npm install`/`npm run`), then npm's own bundled copy, then a
// locally installed one, and as a last resort `npx --no-install node-gyp`.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const nativeDir = path.join(root, 'native');

function findNodeGyp() {
  const candidates = [];
  if (process.env.npm_config_node_gyp) candidates.push(process.env.npm_config_node_gyp);
  // npm's own node_modules: <prefix>/lib/node_modules/npm/node_modules/node-gyp
  const npmCli = process.env.npm_execpath;
  if (npmCli) candidates.push(path.join(path.dirname(npmCli), '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  const prefix = path.dirname(path.dirname(process.execPath));
  candidates.push(path.join(prefix, 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  candidates.push(path.join(path.dirname(process.execPath), 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'));
  try {
    candidates.push(createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js'));
  } catch {
    /* not installed locally */
  }
  return candidates.find((c) => existsSync(c));
}

const args = ['rebuild'];
// Machines without network access cannot download headers; a system install ships them.
if (!process.env.npm_config_nodedir && existsSync('/usr/include/node/node_api.h')) args.push('--nodedir=/usr');
if (process.env.TRITIUM_NATIVE_DEBUG) args.push('--debug');

const gyp = findNodeGyp();
const [cmd, cmdArgs] = gyp ? [process.execPath, [gyp, ...args]] : ['npx', ['--no-install', 'node-gyp', ...args]];
console.log(`[build-native] ${cmd} ${cmdArgs.join(' ')} (cwd ${nativeDir})`);
const r = spawnSync(cmd, cmdArgs, { cwd: nativeDir, stdio: 'inherit' });
if (r.error) {
  console.error(`[build-native] failed to run node-gyp: ${r.error.message}`);
  process.exit(1);
}
if (r.status !== 0) process.exit(r.status ?? 1);
const out = path.join(nativeDir, 'build', 'Release', 'tritium_native.node');
if (!existsSync(out)) {
  console.error(`[build-native] build finished but ${out} is missing`);
  process.exit(1);
}
console.log(`[build-native] built ${path.relative(root, out)}`);
