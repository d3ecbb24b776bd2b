/**
 * @module backends/onnx/cuda/elf
 * The soname and DT_NEEDED entries of a shared library, read from its dynamic section: what the
 * CUDA installer checks (every library onnxruntime's CUDA provider needs is installed) and how
 * it orders the libraries it preloads (each after the ones it needs). 64-bit little-endian ELF
 * only, which is what PyPI's linux x86_64 and aarch64 wheels hold; `readelf` is not assumed to
 * be on the host.
 */
import fs from 'node:fs';

export interface DynamicInfo {
  soname?: string;
  needed: string[];
}

const PT_DYNAMIC = 2;
const PT_LOAD = 1;
const DT_NULL = 0n;
const DT_NEEDED = 1n;
const DT_STRTAB = 5n;
const DT_SONAME = 14n;

/** Reads `file`'s dynamic section; throws naming the file when it is not a 64-bit LE ELF object. */
export function readDynamic(file: string): DynamicInfo {
  const fd = fs.openSync(file, 'r');
  try {
    const read = (offset: number, length: number, short = false): Buffer => {
      const b = Buffer.alloc(length);
      const n = fs.readSync(fd, b, 0, length, offset);
      if (n !== length && !short) throw new Error(`${file}: truncated ELF file`);
      return b.subarray(0, n);
    };
    const ident = read(0, 64, true);
    if (ident.length < 4 || ident.readUInt32BE(0) !== 0x7f454c46) throw new Error(`${file}: not an ELF file`);
    if (ident.length < 64) throw new Error(`${file}: truncated ELF file`);
    if (ident[4] !== 2 || ident[5] !== 1) throw new Error(`${file}: not a 64-bit little-endian ELF file`);
    const phoff = Number(ident.readBigUInt64LE(32));
    const phentsize = ident.readUInt16LE(54);
    const phnum = ident.readUInt16LE(56);
    const headers = read(phoff, phentsize * phnum);
    const loads: Array<{ vaddr: bigint; offset: bigint; filesz: bigint }> = [];
    let dynamic: { offset: number; size: number } | undefined;
    for (let i = 0; i < phnum; i++) {
      const h = i * phentsize;
      const type = headers.readUInt32LE(h);
      const offset = headers.readBigUInt64LE(h + 8);
      const vaddr = headers.readBigUInt64LE(h + 16);
      const filesz = headers.readBigUInt64LE(h + 32);
      if (type === PT_LOAD) loads.push({ vaddr, offset, filesz });
      else if (type === PT_DYNAMIC) dynamic = { offset: Number(offset), size: Number(filesz) };
    }
    if (dynamic === undefined) return { needed: [] }; // a static object
    const dyn = read(dynamic.offset, dynamic.size);
    const neededAt: bigint[] = [];
    let sonameAt: bigint | undefined;
    let strtab: bigint | undefined;
    for (let p = 0; p + 16 <= dyn.length; p += 16) {
      const tag = dyn.readBigInt64LE(p);
      const value = dyn.readBigUInt64LE(p + 8);
      if (tag === DT_NULL) break;
      if (tag === DT_NEEDED) neededAt.push(value);
      else if (tag === DT_SONAME) sonameAt = value;
      else if (tag === DT_STRTAB) strtab = value;
    }
    if (strtab === undefined) return { needed: [] };
    // DT_STRTAB is a virtual address: the file offset is found through the segment holding it.
    const seg = loads.find((l) => strtab! >= l.vaddr && strtab! < l.vaddr + l.filesz);
    if (seg === undefined) throw new Error(`${file}: the dynamic string table is outside every loaded segment`);
    const strOffset = Number(strtab - seg.vaddr + seg.offset);
    const str = (at: bigint): string => {
      const chunk = read(strOffset + Number(at), 256, true);
      const end = chunk.indexOf(0);
      return chunk.toString('latin1', 0, end < 0 ? chunk.length : end);
    };
    return { soname: sonameAt === undefined ? undefined : str(sonameAt), needed: neededAt.map(str) };
  } finally {
    fs.closeSync(fd);
  }
}
