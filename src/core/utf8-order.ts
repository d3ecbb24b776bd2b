/**
 * @module core/utf8-order
 * Names in the order of their UTF-8 bytes, the order of Triton's `std::string` keys: its model
 * lists (statistics, repository index, load failures) and its generate answers' fields. Not
 * `localeCompare`, which puts `amod` before `Bmod` where Triton puts it after, and whose first
 * call maps about 3 MiB of ICU's collation data into the process for good.
 */

/** Compares as the strings' UTF-8 bytes would, without encoding them. */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // UTF-16 and UTF-8 agree below U+D800. Above it a surrogate (half of a code point from
    // U+10000) must come after U+E000–U+FFFF, as its 4-byte UTF-8 form does after their 3 bytes.
    if (x >= 0xd800 && y >= 0xd800) {
      x += x < 0xe000 ? 0x2000 : -0x800;
      y += y < 0xe000 ? 0x2000 : -0x800;
    }
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}
