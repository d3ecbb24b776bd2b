#!/usr/bin/env node
// npm `postinstall` of an installed tritium package: make sure a CPU onnxruntime-node survives.
//
// onnxruntime-node's own postinstall downloads its CUDA provider from a host outside the npm
// registry on linux/x64. Where that host is unreachable the step fails; because tritium lists
// onnxruntime-node as an optional dependency, npm then removes it (after every install script
// has run, so this script still sees it) and the install itself succeeds. In that case this
// script fetches the same onnxruntime-node version from the npm registry with install scripts
// disabled (the CPU provider ships inside the npm package) into vendor/onnxruntime/, where
// src/backends/onnx/ort-location.ts looks when the regular copy is gone (docs/deploy.md).
//
// Nothing happens in a source checkout (npm ci in the repository: the project's .npmrc already
// skips the download), when the download worked, when the user skipped it on purpose
// (--onnxruntime-node-install=skip keeps the package), or on platforms with nothing to download.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const log = (msg) => console.log(`[ensure-onnxruntime] ${msg}`);

if (fs.existsSync(path.join(root, 'src')) && fs.existsSync(path.join(root, 'tsconfig.json'))) process.exit(0);

const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const wanted = pkg.optionalDependencies?.['onnxruntime-node'];
if (!wanted) process.exit(0);

let ortDir;
try {
  ortDir = path.dirname(createRequire(path.join(root, 'package.json')).resolve('onnxruntime-node/package.json'));
} catch {
  ortDir = undefined; // npm could not install it at all (or it was omitted)
}

const flag = process.env.ONNXRUNTIME_NODE_INSTALL || process.env.npm_config_onnxruntime_node_install;
const cudaLib = ortDir && path.join(ortDir, 'bin', 'napi-v6', 'linux', 'x64', 'libonnxruntime_providers_cuda.so');
const downloadWasDue = process.platform === 'linux' && process.arch === 'x64' && flag !== 'skip';
if (ortDir && !(downloadWasDue && !fs.existsSync(cudaLib))) process.exit(0);

// The version npm resolved (the one being removed), else our range.
const version = ortDir ? JSON.parse(fs.readFileSync(path.join(ortDir, 'package.json'), 'utf8')).version : wanted;
const vendor = path.join(root, 'vendor', 'onnxruntime');
if (fs.existsSync(path.join(vendor, 'node_modules', 'onnxruntime-node', 'package.json'))) process.exit(0);
log(`onnxruntime-node's CUDA download did not complete; installing onnxruntime-node@${version} (CPU provider) from the npm registry into ${vendor}`);

fs.mkdirSync(vendor, { recursive: true });
fs.writeFileSync(path.join(vendor, 'package.json'), `${JSON.stringify({ name: 'tritium-vendored-onnxruntime', private: true }, null, 2)}\n`);
// A nested npm: drop the outer install's npm_* settings (a global install would otherwise make
// this one global too), keep where the cache and registry are.
const keep = new Set([
  'npm_config_cache',
  'npm_config_registry',
  'npm_config_userconfig',
  'npm_config_globalconfig',
  'npm_config_proxy',
  'npm_config_https_proxy',
  'npm_config_noproxy',
]);
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_') || keep.has(k.toLowerCase())));
const npmCli = process.env.npm_execpath;
const [cmd, args] = npmCli ? [process.execPath, [npmCli]] : ['npm', []];
const r = spawnSync(
  cmd,
  [
    ...args,
    'install',
    '--ignore-scripts',
    '--omit=dev',
    '--no-package-lock',
    '--no-save',
    '--no-audit',
    '--no-fund',
    '--prefer-offline',
    `onnxruntime-node@${version}`,
  ],
  { cwd: vendor, env, stdio: 'inherit' },
);
if (r.status !== 0) {
  console.warn(
    `[ensure-onnxruntime] WARNING: could not install onnxruntime-node into ${vendor} (${r.error?.message ?? `npm exited with ${r.status}`}); ONNX models will not load until it is installed there: cd ${vendor} && npm install --ignore-scripts onnxruntime-node@${version}`,
  );
  process.exit(0); // Python models still work: never fail the whole install for ONNX.
}
log(`installed onnxruntime-node@${version} into ${vendor}`);
