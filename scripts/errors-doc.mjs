// Rewrites the generated tables of docs/errors.md from the error catalogue (run `npx tsc -p
// tsconfig.json` first: it reads dist/). The prose around the markers is kept as written.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DOC_BEGIN, DOC_END, renderCatalogueTables } from '../dist/core/errors/doc.js';

const file = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'errors.md');
const text = fs.readFileSync(file, 'utf8');
const begin = text.indexOf(DOC_BEGIN);
const end = text.indexOf(DOC_END);
if (begin < 0 || end < begin) throw new Error(`${file}: catalogue markers not found`);
fs.writeFileSync(file, text.slice(0, begin + DOC_BEGIN.length) + '\n' + renderCatalogueTables() + '\n' + text.slice(end));
console.log(`wrote ${file}`);
