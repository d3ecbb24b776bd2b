/**
 * Builds tar archives for tests, including the hostile ones no well-behaved tar tool writes
 * (`../x`, absolute names, links out of the tree). ustar headers; a name too long for the
 * 100-byte field gets a pax `path` record.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

export type TarSpec =
  | { type: 'file'; name: string; data?: string | Buffer; mode?: number }
  | { type: 'dir'; name: string; mode?: number }
  | { type: 'symlink'; name: string; target: string }
  | { type: 'hardlink'; name: string; target: string }
  | { type: 'fifo'; name: string };

function header(name: string, flag: string, size: number, mode: number, link = ''): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100, 'utf8');
  h.write(mode.toString(8).padStart(7, '0') + '\0', 100, 'latin1');
  h.write('0000000\0', 108, 'latin1');
  h.write('0000000\0', 116, 'latin1');
  h.write(size.toString(8).padStart(11, '0') + '\0', 124, 'latin1');
  h.write('00000000000\0', 136, 'latin1');
  h.write('        ', 148, 'latin1');
  h.write(flag, 156, 'latin1');
  h.write(link, 157, 100, 'utf8');
  h.write('ustar\0', 257, 'latin1');
  h.write('00', 263, 'latin1');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'latin1');
  return h;
}

function pad(b: Buffer): Buffer[] {
  const rest = (512 - (b.length % 512)) % 512;
  return rest ? [b, Buffer.alloc(rest)] : [b];
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return `${len}${body}`;
}

/** A tar archive of `entries`, in order. */
export function makeTar(entries: TarSpec[]): Buffer {
  const out: Buffer[] = [];
  for (const e of entries) {
    if (Buffer.byteLength(e.name) > 99) {
      const pax = Buffer.from(paxRecord('path', e.name));
      out.push(header('PaxHeader', 'x', pax.length, 0o644), ...pad(pax));
    }
    switch (e.type) {
      case 'file': {
        const data = Buffer.isBuffer(e.data) ? e.data : Buffer.from(e.data ?? '');
        out.push(header(e.name, '0', data.length, e.mode ?? 0o644), ...pad(data));
        break;
      }
      case 'dir':
        out.push(header(e.name, '5', 0, e.mode ?? 0o755));
        break;
      case 'symlink':
        out.push(header(e.name, '2', 0, 0o777, e.target));
        break;
      case 'hardlink':
        out.push(header(e.name, '1', 0, 0o644, e.target));
        break;
      case 'fifo':
        out.push(header(e.name, '6', 0, 0o644));
        break;
    }
  }
  out.push(Buffer.alloc(1024));
  return Buffer.concat(out);
}

/** The tree under `dir` as tar entries named `prefix` + relative path (links kept as links). */
export function treeEntries(dir: string, prefix = ''): TarSpec[] {
  const out: TarSpec[] = [];
  const walk = (rel: string): void => {
    for (const name of fs.readdirSync(path.join(dir, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const full = path.join(dir, r);
      const st = fs.lstatSync(full);
      if (st.isSymbolicLink()) out.push({ type: 'symlink', name: prefix + r, target: fs.readlinkSync(full) });
      else if (st.isDirectory()) {
        out.push({ type: 'dir', name: `${prefix}${r}/`, mode: st.mode & 0o777 });
        walk(r);
      } else out.push({ type: 'file', name: prefix + r, data: fs.readFileSync(full), mode: st.mode & 0o777 });
    }
  };
  walk('');
  return out;
}

/** Writes `entries` as a .tar.gz file. */
export function writeTarGz(file: string, entries: TarSpec[]): string {
  fs.writeFileSync(file, zlib.gzipSync(makeTar(entries)));
  return file;
}
