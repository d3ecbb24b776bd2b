/**
 * @module core/model/repository-fingerprint
 * A model directory's fingerprint for poll mode: every file's path, size and modification time.
 * Any change to config.pbtxt, a model file or the set of version directories changes it.
 * `__pycache__` and hidden entries are left out: Python writes them while a model loads, and
 * they would make every poll see a change.
 */
import fs from 'node:fs';
import path from 'node:path';

export function fingerprintModel(dir: string): string {
  const parts: string[] = [];
  walk(dir, '', parts);
  return parts.sort().join('\n');
}

function walk(root: string, rel: string, out: string[]): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    if (e.name.startsWith('.') || e.name === '__pycache__') continue;
    const p = path.join(rel, e.name);
    let st: fs.Stats;
    try {
      st = fs.statSync(path.join(root, p));
    } catch {
      continue;
    }
    if (st.isDirectory()) {
      out.push(`${p}/`);
      walk(root, p, out);
    } else out.push(`${p} ${st.size} ${st.mtimeMs}`);
  }
}
