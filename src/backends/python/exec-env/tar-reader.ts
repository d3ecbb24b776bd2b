/**
 * @module backends/python/exec-env/tar-reader
 * A streaming reader of tar archives (POSIX ustar, with the GNU long-name and pax extended
 * headers that conda-pack and GNU/BSD tar write), optionally gzip-compressed. It only parses:
 * what may be written where is decided by the caller (unpack.ts). Entries come one at a time
 * and each body is streamed, so a large environment never sits in memory.
 */
import fs from 'node:fs';
import zlib from 'node:zlib';

export type TarEntryType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'other';

export interface TarEntry {
  /** The path as stored (pax/GNU long names applied), not yet normalised. */
  name: string;
  type: TarEntryType;
  /** The raw type flag, for messages about unsupported entries. */
  typeFlag: string;
  mode: number;
  size: number;
  /** Target of a symbolic or hard link. */
  linkName: string;
}

const BLOCK = 512;

/** Thrown for a damaged or truncated archive. */
export class TarFormatError extends Error {}

/** Pulls exact byte counts out of a stream of chunks. */
class ByteSource {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private done = false;

  constructor(private readonly it: AsyncIterator<Buffer>) {}

  private async fill(n: number): Promise<boolean> {
    while (this.buffered < n && !this.done) {
      const r = await this.it.next();
      if (r.done) this.done = true;
      else {
        this.chunks.push(r.value);
        this.buffered += r.value.length;
      }
    }
    return this.buffered >= n;
  }

  /** Exactly n bytes, or null at a clean end of input (nothing buffered). */
  async read(n: number): Promise<Buffer | null> {
    if (!(await this.fill(n))) {
      if (this.buffered === 0) return null;
      throw new TarFormatError('archive is truncated');
    }
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return out;
  }

  /** Up to `max` bytes that are already here or arrive next (for streaming bodies). */
  async readSome(max: number): Promise<Buffer> {
    if (this.buffered === 0 && !(await this.fill(1))) throw new TarFormatError('archive is truncated');
    const first = this.chunks[0]!;
    const out = first.subarray(0, Math.min(max, first.length));
    if (out.length === first.length) this.chunks.shift();
    else this.chunks[0] = first.subarray(out.length);
    this.buffered -= out.length;
    return out;
  }
}

/** True when the file starts with the gzip magic bytes. */
function isGzip(file: string): boolean {
  const fd = fs.openSync(file, 'r');
  try {
    const b = Buffer.alloc(2);
    return fs.readSync(fd, b, 0, 2, 0) === 2 && b[0] === 0x1f && b[1] === 0x8b;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Reads the entries of `file` (tar or tar.gz) in order. For each entry `onEntry` gets the header
 * and a `body` function yielding its bytes; a body that is not consumed is skipped.
 */
export async function readTar(file: string, onEntry: (entry: TarEntry, body: () => AsyncGenerator<Buffer>) => Promise<void>): Promise<void> {
  const raw = fs.createReadStream(file);
  const stream = isGzip(file) ? raw.pipe(zlib.createGunzip()) : raw;
  // A gunzip failure surfaces through the iterator; make sure the file stream dies with it.
  stream.on('error', () => raw.destroy());
  const src = new ByteSource(stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>);
  let longName: string | undefined;
  let longLink: string | undefined;
  let pax: Record<string, string> = {};
  try {
    for (;;) {
      const header = await src.read(BLOCK);
      if (header === null || header.every((b) => b === 0)) return; // end-of-archive blocks
      checkChecksum(header);
      const typeFlag = header[156] === 0 ? '0' : String.fromCharCode(header[156]!);
      const size = readNumber(header, 124, 12);
      if (typeFlag === 'L' || typeFlag === 'K' || typeFlag === 'x' || typeFlag === 'g') {
        const data = await readPadded(src, size);
        if (typeFlag === 'L') longName = cString(data);
        else if (typeFlag === 'K') longLink = cString(data);
        else if (typeFlag === 'x') pax = { ...pax, ...parsePax(data) };
        continue; // 'g' (global pax) carries nothing we use
      }
      const prefix = isUstar(header) ? cString(header.subarray(345, 500)) : '';
      const short = cString(header.subarray(0, 100));
      const entry: TarEntry = {
        name: pax['path'] ?? longName ?? (prefix ? `${prefix}/${short}` : short),
        type: entryType(typeFlag),
        typeFlag,
        mode: readNumber(header, 100, 8),
        size: pax['size'] !== undefined ? Number(pax['size']) : size,
        linkName: pax['linkpath'] ?? longLink ?? cString(header.subarray(157, 257)),
      };
      longName = longLink = undefined;
      pax = {};
      // Links and directories carry no data whatever their size field says.
      const dataSize = entry.type === 'file' || entry.type === 'other' ? entry.size : 0;
      let remaining = dataSize;
      async function* body(): AsyncGenerator<Buffer> {
        while (remaining > 0) {
          const chunk = await src.readSome(Math.min(remaining, 1 << 20));
          remaining -= chunk.length;
          yield chunk;
        }
      }
      await onEntry(entry, body);
      while (remaining > 0) remaining -= (await src.readSome(Math.min(remaining, 1 << 20))).length;
      const pad = (BLOCK - (dataSize % BLOCK)) % BLOCK;
      if (pad > 0 && (await src.read(pad)) === null) throw new TarFormatError('archive is truncated');
    }
  } finally {
    raw.destroy();
  }
}

function entryType(flag: string): TarEntryType {
  switch (flag) {
    case '0':
    case '7': // contiguous file: a regular file everywhere but a few old systems
      return 'file';
    case '5':
      return 'directory';
    case '2':
      return 'symlink';
    case '1':
      return 'hardlink';
    default:
      return 'other';
  }
}

async function readPadded(src: ByteSource, size: number): Promise<Buffer> {
  if (size > 1 << 20) throw new TarFormatError(`extended header of ${size} bytes is implausible`);
  const padded = Math.ceil(size / BLOCK) * BLOCK;
  const data = padded === 0 ? Buffer.alloc(0) : await src.read(padded);
  if (data === null) throw new TarFormatError('archive is truncated');
  return data.subarray(0, size);
}

function isUstar(h: Buffer): boolean {
  return h.subarray(257, 262).toString('latin1') === 'ustar';
}

function cString(b: Buffer): string {
  const nul = b.indexOf(0);
  return b.subarray(0, nul < 0 ? b.length : nul).toString('utf8');
}

/** Octal (NUL/space terminated), or GNU base-256 when the top bit of the first byte is set. */
function readNumber(h: Buffer, off: number, len: number): number {
  if (h[off]! & 0x80) {
    let v = 0;
    for (let i = off + 1; i < off + len; i++) v = v * 256 + h[i]!;
    return v + (h[off]! & 0x3f) * 256 ** (len - 1);
  }
  const text = h
    .subarray(off, off + len)
    .toString('latin1')
    .replace(/[\0 ]+$/g, '')
    .trim();
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new TarFormatError(`bad number field '${text}' in a tar header`);
  return parseInt(text, 8);
}

function checkChecksum(h: Buffer): void {
  const stored = readNumber(h, 148, 8);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i]!;
  if (sum !== stored) throw new TarFormatError('not a tar archive (header checksum mismatch)');
}

/** pax records: "<len> <key>=<value>\n". */
function parsePax(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let off = 0;
  while (off < data.length) {
    const space = data.indexOf(0x20, off);
    if (space < 0) break;
    const len = Number(data.subarray(off, space).toString('latin1'));
    if (!Number.isInteger(len) || len <= 0 || off + len > data.length) throw new TarFormatError('malformed pax header');
    const record = data.subarray(space + 1, off + len - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    off += len;
  }
  return out;
}
