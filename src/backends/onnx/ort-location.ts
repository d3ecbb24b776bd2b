/**
 * @module backends/onnx/ort-location
 * Where onnxruntime-node is loaded from. Normally it is an ordinary dependency. When tritium is
 * installed as a package on a host that cannot reach onnxruntime-node's download host, that
 * package's install step fails (it fetches the CUDA provider from outside the npm registry), npm
 * drops it as an optional dependency, and `scripts/ensure-onnxruntime.mjs` has already put a
 * CPU-only copy, fetched from the npm registry with install scripts disabled, under
 * `vendor/onnxruntime/` (docs/deploy.md, "The npm package"). The regular copy wins when both exist,
 * so a CUDA-enabled install is never shadowed.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Errors } from '../../core/errors.js';

/** The package root (dist/backends/onnx/ → ../../..). */
const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const VENDORED_ORT_ROOT = path.join(PACKAGE_ROOT, 'vendor', 'onnxruntime');

let cached: string | undefined;

/** The entry file of onnxruntime-node; throws the catalogue error naming the fix when absent. */
export function ortEntry(): string {
  if (cached) return cached;
  const from = [createRequire(import.meta.url), createRequire(path.join(VENDORED_ORT_ROOT, 'package.json'))];
  for (const req of from) {
    try {
      cached = req.resolve('onnxruntime-node');
      return cached;
    } catch {
      /* try the next location */
    }
  }
  throw Errors.onnxRuntimeMissing(VENDORED_ORT_ROOT);
}

/** The onnxruntime-node package directory (its native binaries sit under bin/). */
export function ortPackageDir(): string {
  // .../onnxruntime-node/dist/index.js → .../onnxruntime-node
  let dir = path.dirname(ortEntry());
  while (!fs.existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

/** Where onnxruntime-node keeps its native libraries (and loads its execution providers from). */
export function ortBinaryDir(packageDir: string = ortPackageDir()): string {
  return path.join(packageDir, 'bin', 'napi-v6', process.platform, process.arch);
}
