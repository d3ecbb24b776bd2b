/**
 * Unpacking a packed environment: real tar output round-trips, and every archive that would
 * write or point outside the target is refused with a message naming the entry.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { unpackArchive, UnpackError } from '../../src/backends/python/exec-env/unpack.js';
import { TarFormatError } from '../../src/backends/python/exec-env/tar-reader.js';
import { writeTarGz, type TarSpec } from '../helpers/tar.js';

const dirs: string[] = [];
const tmp = (): string => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-unpack-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const ENV: TarSpec[] = [
  { type: 'dir', name: './' },
  { type: 'dir', name: './bin/' },
  { type: 'file', name: './bin/activate', data: '# sourced by Triton\n' },
  { type: 'file', name: './bin/python3.11', data: '#!/bin/sh\n', mode: 0o755 },
  { type: 'symlink', name: './bin/python', target: 'python3.11' },
  { type: 'dir', name: './lib/python3.11/site-packages/pkg/' },
  { type: 'symlink', name: './lib/python3.11/site-packages/pkg/up', target: '../../../../bin' },
];

async function unpack(entries: TarSpec[]): Promise<{ dest: string; outside: string }> {
  const base = tmp();
  const outside = path.join(base, 'outside');
  const dest = path.join(base, 'dest');
  fs.mkdirSync(outside);
  fs.mkdirSync(dest);
  await unpackArchive(writeTarGz(path.join(base, 'env.tar.gz'), entries), dest);
  return { dest, outside };
}

async function refusal(entries: TarSpec[]): Promise<{ message: string; base: string }> {
  const base = tmp();
  const dest = path.join(base, 'a', 'b', 'dest');
  fs.mkdirSync(dest, { recursive: true });
  fs.writeFileSync(path.join(base, 'victim'), 'original');
  const archive = writeTarGz(path.join(base, 'env.tar.gz'), entries);
  try {
    await unpackArchive(archive, dest);
  } catch (e) {
    expect(e).toBeInstanceOf(UnpackError);
    return { message: (e as Error).message, base };
  }
  throw new Error('the archive was unpacked');
}

describe('unpackArchive', () => {
  it('unpacks a conda-pack style tree: files with modes, directories, relative links inside', async () => {
    const { dest } = await unpack(ENV);
    expect(fs.readFileSync(path.join(dest, 'bin', 'activate'), 'utf8')).toBe('# sourced by Triton\n');
    expect(fs.statSync(path.join(dest, 'bin', 'python3.11')).mode & 0o777).toBe(0o755);
    expect(fs.readlinkSync(path.join(dest, 'bin', 'python'))).toBe('python3.11');
    expect(fs.realpathSync(path.join(dest, 'lib/python3.11/site-packages/pkg/up'))).toBe(fs.realpathSync(path.join(dest, 'bin')));
  });

  it.each(['gnu', 'pax', 'ustar'])('reads what GNU tar writes in %s format (long names, links)', async (format) => {
    const base = tmp();
    const src = path.join(base, 'src');
    const deep = path.join(src, 'lib', 'a'.repeat(60), 'b'.repeat(60));
    fs.mkdirSync(deep, { recursive: true });
    fs.writeFileSync(path.join(deep, 'module_with_a_long_name.py'), 'x = 1\n');
    fs.writeFileSync(path.join(src, 'big.bin'), Buffer.alloc(3 * 1024 * 1024 + 17, 7));
    fs.linkSync(path.join(src, 'big.bin'), path.join(src, 'big-hardlink.bin'));
    fs.symlinkSync('big.bin', path.join(src, 'big-symlink.bin'));
    const archive = path.join(base, 'env.tar.gz');
    // ustar cannot hold the long path: that format gets the other three files only.
    const longOk = format !== 'ustar';
    const members = longOk ? ['.'] : ['big.bin', 'big-hardlink.bin', 'big-symlink.bin'];
    const r = spawnSync('tar', ['czf', archive, `--format=${format}`, '-C', src, ...members], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const dest = path.join(base, 'dest');
    fs.mkdirSync(dest);
    await unpackArchive(archive, dest);
    expect(fs.readFileSync(path.join(dest, 'big.bin')).equals(fs.readFileSync(path.join(src, 'big.bin')))).toBe(true);
    expect(fs.statSync(path.join(dest, 'big-hardlink.bin')).ino).toBe(fs.statSync(path.join(dest, 'big.bin')).ino);
    expect(fs.readlinkSync(path.join(dest, 'big-symlink.bin'))).toBe('big.bin');
    if (longOk) {
      const rel = path.relative(src, path.join(deep, 'module_with_a_long_name.py'));
      expect(rel.length).toBeGreaterThan(100);
      expect(fs.readFileSync(path.join(dest, rel), 'utf8')).toBe('x = 1\n');
    }
  });

  it.each<[string, TarSpec[], string]>([
    [
      'a name that climbs out with ..',
      [...ENV, { type: 'file', name: '../x', data: 'evil' }],
      "Path contains '..': entry '../x' climbs out of the environment with '..'",
    ],
    [
      '.. in the middle of a name',
      [...ENV, { type: 'file', name: 'bin/../../x', data: 'evil' }],
      "Path contains '..': entry 'bin/../../x' climbs out of the environment with '..'",
    ],
    [
      'an absolute name',
      [...ENV, { type: 'file', name: '/tmp/tritium-evil-abs', data: 'evil' }],
      "Path is absolute: entry '/tmp/tritium-evil-abs' has an absolute path",
    ],
    ['a symlink to /etc', [...ENV, { type: 'symlink', name: 'etc', target: '/etc' }], "symbolic link 'etc' -> '/etc' points outside the environment"],
    [
      'a relative symlink that climbs out',
      [...ENV, { type: 'symlink', name: 'bin/up', target: '../..' }],
      "symbolic link 'bin/up' -> '../..' points outside the environment",
    ],
    [
      'a symlink that climbs out through another symlink',
      [...ENV, { type: 'symlink', name: 'here', target: '.' }, { type: 'symlink', name: 'out', target: 'here/../victim' }],
      "symbolic link 'out' -> 'here/../victim' points outside the environment",
    ],
    [
      'a file written through a symlink',
      [...ENV, { type: 'symlink', name: 'lib/esc', target: '/tmp' }, { type: 'file', name: 'lib/esc/x', data: 'evil' }],
      "entry 'lib/esc/x' would be written through the symbolic link 'lib/esc'",
    ],
    [
      'a hard link to a file outside',
      [...ENV, { type: 'hardlink', name: 'hl', target: '/etc/passwd' }],
      "Path is absolute: hard link 'hl' -> '/etc/passwd' has an absolute path",
    ],
    [
      'a hard link climbing out',
      [...ENV, { type: 'hardlink', name: 'hl', target: '../../../victim' }],
      "Path contains '..': hard link 'hl' -> '../../../victim' climbs out of the environment with '..'",
    ],
    [
      'a hard link to a symlink',
      [...ENV, { type: 'hardlink', name: 'hl', target: 'bin/python' }],
      "hard link 'hl' -> 'bin/python' does not name a regular file",
    ],
    ['a FIFO', [...ENV, { type: 'fifo', name: 'pipe' }], "entry 'pipe' is of a type that an environment cannot hold (tar type '6')"],
  ])('refuses %s', async (_what, entries, message) => {
    const { message: got, base } = await refusal(entries);
    expect(got).toBe(message);
    expect(fs.readFileSync(path.join(base, 'victim'), 'utf8')).toBe('original');
    expect(fs.existsSync(path.join(base, 'a', 'b', 'x'))).toBe(false);
    expect(fs.existsSync('/tmp/tritium-evil-abs')).toBe(false);
  });

  it('refuses a file that is not a tar archive', async () => {
    const base = tmp();
    const file = path.join(base, 'env.tar');
    fs.writeFileSync(file, 'this is not a tar archive'.repeat(40));
    await expect(unpackArchive(file, base)).rejects.toBeInstanceOf(TarFormatError);
  });
});
