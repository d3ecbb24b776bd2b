/**
 * @module core/repository/safe-path
 * Every file a model config names (model file, warmup data, label file) is resolved inside its
 * model directory. (`EXECUTION_ENV_PATH` follows Triton's own rules instead: exec-env.ts.) A name that climbs out with `..`, an absolute path
 * or a symbolic link pointing elsewhere is refused, so a config cannot read arbitrary files.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Errors } from '../errors.js';

/**
 * Resolves `rel` under `root`, refusing anything that lands outside it (symlinks included). A
 * missing `root` holds nothing: only the name is checked, and the caller reports the missing file.
 */
export function resolveInside(root: string, rel: string, what: string): string {
  if (rel.includes('\0')) throw Errors.pathNul(what, rel);
  if (path.isAbsolute(rel)) throw Errors.pathAbsolute(what, rel);
  const rootReal = fs.existsSync(root) ? fs.realpathSync(root) : path.resolve(root);
  const candidate = path.resolve(rootReal, rel);
  if (!isInside(rootReal, candidate)) throw Errors.pathOutside(what, rel);
  let real = candidate;
  try {
    real = fs.realpathSync(candidate);
  } catch {
    // Missing files are reported by the caller with its own message; only escapes matter here.
    return candidate;
  }
  if (!isInside(rootReal, real)) throw Errors.pathResolvesOutside(what, rel);
  return real;
}

/** Whether `p` is `root` or below it (by name). */
export function isInside(root: string, p: string): boolean {
  const r = path.relative(root, p);
  return r === '' || (!r.startsWith('..') && !path.isAbsolute(r));
}
