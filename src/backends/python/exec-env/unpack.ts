/**
 * @module backends/python/exec-env/unpack
 * Extracts a packed environment (conda-pack tar.gz) into a fresh directory without ever writing
 * outside it. Archives come from model repositories, so each entry is checked before anything
 * is written (docs/design.md, "Python environment"):
 * - a name that is absolute or has a `..` component is refused, the message starting with the
 *   text tritonserver's extraction (libarchive with ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS and
 *   _NODOTDOT) logs for it, `Path is absolute` / `Path contains '..'`, then tritium's account;
 * - nothing is written through a symbolic link (every parent of an entry must be a real
 *   directory created by this extraction), and a link never replaces a directory;
 * - a symbolic link whose target leaves the directory is refused, judged once the whole tree
 *   exists by resolving every link the way the kernel would (links through links included);
 * - a hard link must name a regular file extracted earlier from the same archive;
 * - devices, FIFOs and other special entries are refused;
 * - modes keep only the permission bits (no setuid/setgid).
 * The first violation aborts with an `UnpackError` naming the entry; the caller removes the
 * half-written directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readTar, type TarEntry } from './tar-reader.js';

export class UnpackError extends Error {}

/** Unpacks `archive` into `dest`, which must exist and be empty. */
export async function unpackArchive(archive: string, dest: string): Promise<void> {
  const root = fs.realpathSync(dest);
  const symlinks: string[] = [];
  await readTar(archive, async (entry, body) => {
    const rel = entryPath(entry.name, 'entry');
    if (rel === '') return; // "./": the root itself
    const target = path.join(root, rel);
    ensureRealParents(root, rel, entry.name);
    switch (entry.type) {
      case 'directory':
        makeDirectory(target, entry);
        return;
      case 'file':
        await writeFile(target, entry, body);
        return;
      case 'symlink':
        if (entry.linkName === '') throw new UnpackError(`symbolic link '${entry.name}' has an empty target`);
        removeExisting(target, entry.name);
        fs.symlinkSync(entry.linkName, target);
        symlinks.push(rel);
        return;
      case 'hardlink':
        makeHardLink(root, target, entry);
        return;
      default:
        throw new UnpackError(`entry '${entry.name}' is of a type that an environment cannot hold (tar type '${entry.typeFlag}')`);
    }
  });
  for (const rel of symlinks) {
    const resolved = resolveInTree(root, rel);
    if (resolved === undefined) {
      const link = fs.readlinkSync(path.join(root, rel));
      throw new UnpackError(`symbolic link '${rel}' -> '${link}' points outside the environment`);
    }
  }
}

/** libarchive's texts, as Triton logs them for such an entry (harnesses grep for them). */
const PATH_ABSOLUTE = 'Path is absolute';
const PATH_DOTDOT = "Path contains '..'";

/** The normalised relative path of an entry name, or an UnpackError for an unsafe one. */
function entryPath(name: string, what: string): string {
  if (name.includes('\0')) throw new UnpackError(`${what} name '${name}' contains a NUL byte`);
  if (path.isAbsolute(name)) throw new UnpackError(`${PATH_ABSOLUTE}: ${what} '${name}' has an absolute path`);
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw new UnpackError(`${PATH_DOTDOT}: ${what} '${name}' climbs out of the environment with '..'`);
  return parts.join('/');
}

/** Every existing parent of `rel` below root must be a directory, never a symbolic link. */
function ensureRealParents(root: string, rel: string, name: string): void {
  const parts = rel.split('/');
  let at = root;
  for (const part of parts.slice(0, -1)) {
    at = path.join(at, part);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(at);
    } catch {
      fs.mkdirSync(at, { mode: 0o755 });
      continue;
    }
    if (st.isSymbolicLink()) throw new UnpackError(`entry '${name}' would be written through the symbolic link '${path.relative(root, at)}'`);
    if (!st.isDirectory()) throw new UnpackError(`entry '${name}' needs '${path.relative(root, at)}' to be a directory`);
  }
}

/** Removes a file or link that an entry replaces (later entries win, as with tar); never a directory. */
function removeExisting(target: string, name: string): void {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(target);
  } catch {
    return;
  }
  if (st.isDirectory()) throw new UnpackError(`entry '${name}' would replace a directory`);
  fs.unlinkSync(target);
}

function makeDirectory(target: string, entry: TarEntry): void {
  let st: fs.Stats | undefined;
  try {
    st = fs.lstatSync(target);
  } catch {
    /* created below */
  }
  if (st !== undefined && !st.isDirectory()) throw new UnpackError(`directory entry '${entry.name}' would replace a file or link`);
  if (st === undefined) fs.mkdirSync(target);
  // Owner keeps rwx so later entries can be written into it.
  fs.chmodSync(target, (entry.mode & 0o777) | 0o700);
}

async function writeFile(target: string, entry: TarEntry, body: () => AsyncGenerator<Buffer>): Promise<void> {
  removeExisting(target, entry.name);
  // O_EXCL|O_NOFOLLOW: a link planted at this name in between is never followed.
  const fh = await fs.promises.open(target, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o600);
  try {
    for await (const chunk of body()) await fh.write(chunk);
    await fh.chmod(entry.mode & 0o777);
  } finally {
    await fh.close();
  }
}

function makeHardLink(root: string, target: string, entry: TarEntry): void {
  const rel = entryPath(entry.linkName, `hard link '${entry.name}' ->`);
  if (rel === '') throw new UnpackError(`hard link '${entry.name}' -> '${entry.linkName}' does not name a file`);
  ensureRealParents(root, rel, entry.name);
  const source = path.join(root, rel);
  let st: fs.Stats;
  try {
    st = fs.lstatSync(source);
  } catch {
    throw new UnpackError(`hard link '${entry.name}' -> '${entry.linkName}' names no file extracted before it`);
  }
  if (!st.isFile()) throw new UnpackError(`hard link '${entry.name}' -> '${entry.linkName}' does not name a regular file`);
  removeExisting(target, entry.name);
  fs.linkSync(source, target);
}

/**
 * Where the symbolic link `rel` (relative to root) leads, resolving links inside the tree the
 * way the kernel does (`a -> .` then `a/..` is root's parent), with missing components taken
 * literally; undefined when any step leaves root, a target is absolute (the tree is renamed
 * into the cache after extraction, so no absolute path can stay inside it), or links loop.
 */
function resolveInTree(root: string, rel: string): string | undefined {
  let hops = 0;
  const walk = (start: readonly string[], target: string): string[] | undefined => {
    if (path.isAbsolute(target)) return undefined;
    let at = [...start];
    for (const part of target.split('/')) {
      if (part === '' || part === '.') continue;
      if (part === '..') {
        if (at.length === 0) return undefined;
        at.pop();
        continue;
      }
      at.push(part);
      const full = path.join(root, ...at);
      if (!isSymlink(full)) continue;
      if (++hops > 40) return undefined;
      const next = walk(at.slice(0, -1), fs.readlinkSync(full));
      if (next === undefined) return undefined;
      at = next;
    }
    return at;
  };
  const resolved = walk(rel.split('/').slice(0, -1), fs.readlinkSync(path.join(root, rel)));
  return resolved === undefined ? undefined : path.join(root, ...resolved);
}

function isSymlink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}
