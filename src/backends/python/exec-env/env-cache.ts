/**
 * @module backends/python/exec-env/env-cache
 * Packed environments are unpacked once into a cache keyed by the archive's sha256, shared by
 * every instance and model that names the same bytes and kept across restarts. Extraction goes
 * to a private temporary directory beside the entry and is renamed into place only when
 * complete, so a directory under its hash is always whole; two servers (or two loads in one
 * server) racing on the same archive both extract, one rename wins and the other discards its
 * copy. A server killed while extracting leaves its temporary directory behind; the next
 * extraction into the same cache removes those whose process is gone.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { unpackArchive } from './unpack.js';

/** Overrides the cache directory (tests, read-only homes). */
export const ENV_CACHE_VAR = 'TRITIUM_ENV_CACHE';

/** `$TRITIUM_ENV_CACHE`, else `$XDG_CACHE_HOME/tritium/python-envs`, else `~/.cache/tritium/python-envs`. */
export function envCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env[ENV_CACHE_VAR]) return path.resolve(env[ENV_CACHE_VAR]!);
  const base = env['XDG_CACHE_HOME'] || path.join(os.homedir(), '.cache');
  return path.join(base, 'tritium', 'python-envs');
}

// Loads in this process that wait for the same extraction share it.
const inFlight = new Map<string, Promise<string>>();

/** The unpacked directory of `archive`, extracting it first when the cache has no copy. */
export async function unpackedEnv(archive: string, cacheDir: string = envCacheDir()): Promise<string> {
  const digest = await sha256File(archive);
  const final = path.join(cacheDir, digest);
  if (isDirectory(final)) return final;
  let job = inFlight.get(final);
  if (job === undefined) {
    job = extract(archive, cacheDir, final).finally(() => inFlight.delete(final));
    inFlight.set(final, job);
  }
  return job;
}

async function extract(archive: string, cacheDir: string, final: string): Promise<string> {
  fs.mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
  removeAbandoned(cacheDir);
  // The pid in the name lets a later server tell an abandoned extraction from a running one.
  const tmp = fs.mkdtempSync(path.join(cacheDir, `.unpacking-${process.pid}-${path.basename(final).slice(0, 12)}-`));
  try {
    await unpackArchive(archive, tmp);
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  try {
    fs.renameSync(tmp, final);
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    // Another process finished the same archive first: its copy is as good as ours.
    const code = (err as NodeJS.ErrnoException).code;
    if ((code === 'ENOTEMPTY' || code === 'EEXIST') && isDirectory(final)) return final;
    throw err;
  }
  return final;
}

/** Removes `.unpacking-<pid>-…` directories whose process is gone (a server killed mid-extraction). */
function removeAbandoned(cacheDir: string): void {
  for (const name of fs.readdirSync(cacheDir)) {
    const m = /^\.unpacking-(\d+)-/.exec(name);
    if (m === null || isAlive(Number(m[1]))) continue;
    fs.rmSync(path.join(cacheDir, name), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function sha256File(file: string): Promise<string> {
  const hash = crypto.createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}
