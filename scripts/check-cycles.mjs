// Fails when the relative imports between the TypeScript files of src/ form a cycle. A cycle
// makes load order decide which module sees the other half-initialised, and it usually means
// two concepts that should be one, or a third one missing. Type-only imports count too: they
// tie the modules together as much for a reader. Run by `npm test` (scripts/test.mjs).
//
//   node scripts/check-cycles.mjs [dir]     (default: src)
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const top = path.resolve(root, process.argv[2] ?? 'src');

/** Every .ts file below `dir`. */
function tsFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

// `import ... from '…'`, `export ... from '…'`, `import '…'` and `import('…')`, relative only.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g;

/** The files `file` imports, resolved from the `.js` names NodeNext wants to the `.ts` sources. */
function importsOf(file) {
  const text = fs.readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, '');
  const out = new Set();
  for (const m of text.matchAll(SPECIFIER)) {
    const target = path.resolve(path.dirname(file), m[1]);
    for (const candidate of [target.replace(/\.js$/, '.ts'), target, `${target}.ts`, path.join(target, 'index.ts')]) {
      if (candidate.endsWith('.ts') && fs.existsSync(candidate)) {
        out.add(candidate);
        break;
      }
    }
  }
  return [...out];
}

const graph = new Map(tsFiles(top).map((f) => [f, importsOf(f)]));

// Depth-first search; a back edge to a file on the current path closes a cycle.
const cycles = [];
const state = new Map(); // file → 'open' while on the path, 'done' after
const stack = [];
function visit(file) {
  state.set(file, 'open');
  stack.push(file);
  for (const next of graph.get(file) ?? []) {
    if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next]);
    else if (!state.has(next)) visit(next);
  }
  stack.pop();
  state.set(file, 'done');
}
for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);

const rel = (f) => path.relative(root, f);
if (cycles.length > 0) {
  console.error(`check-cycles: ${cycles.length} import cycle(s) in ${rel(top)}/:`);
  for (const c of cycles) console.error(`  ${c.map(rel).join(' -> ')}`);
  process.exit(1);
}
console.log(`check-cycles: no import cycles among ${graph.size} files in ${rel(top)}/`);
