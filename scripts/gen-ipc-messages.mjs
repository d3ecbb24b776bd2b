// Generates the two views of the IPC messages from their one declaration,
// src/backends/python/ipc/messages.json (docs/ipc.md, "Messages"):
//   - src/backends/python/ipc/messages.ts: the types Node's side sends and receives;
//   - stub/tritium_stub/messages.py: the kind names the stub sends and dispatches on, and the
//     fields of each kind (test/ipc-contract.test.ts checks the stub's message literals with them).
// `node scripts/gen-ipc-messages.mjs` writes both; `--check` only says whether they are current
// (exit 1 when not), which the contract test runs. The output is formatted by the project's own
// formatters (biome, ruff), so a generated file is also a formatted one.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE = 'src/backends/python/ipc/messages.json';
const TS_OUT = 'src/backends/python/ipc/messages.ts';
const PY_OUT = 'stub/tritium_stub/messages.py';
const spec = JSON.parse(fs.readFileSync(path.join(root, SOURCE), 'utf8'));

const pascal = (kind) => kind.replace(/(^|_)([a-z])/g, (_, __, c) => c.toUpperCase());
/** `{ 'name?': 'type' | { type, doc } }` → `[{ name, optional, type, doc }]`. */
const fieldsOf = (fields) =>
  Object.entries(fields).map(([key, v]) => ({
    name: key.replace(/\?$/, ''),
    optional: key.endsWith('?'),
    type: typeof v === 'string' ? v : v.type,
    doc: typeof v === 'string' ? undefined : v.doc,
  }));
const variantsOf = (msg) => (msg.variants ?? [msg]).map((v) => fieldsOf(v.fields));
const directions = [
  ['NodeToStub', spec.nodeToStub],
  ['StubToNode', spec.stubToNode],
];

function typescript() {
  const out = [
    '/**',
    ' * @module backends/python/ipc/messages',
    ` * The messages of docs/ipc.md ("Messages"), as types. GENERATED from messages.json by`,
    ' * scripts/gen-ipc-messages.mjs: edit that file and run `npm run gen:ipc`. The stub gets its',
    ' * view of the same declaration (stub/tritium_stub/messages.py).',
    ' *',
    " * Field names are the wire's (msgpack map keys), hence the snake_case of some.",
    ' */',
    '',
  ];
  const doc = (text, indent = '') => (text ? [`${indent}/** ${text} */`] : []);
  const members = (fields) => fields.flatMap((f) => [...doc(f.doc, '  '), `  ${f.name}${f.optional ? '?' : ''}: ${f.type};`]);
  for (const [name, a] of Object.entries(spec.aliases)) out.push(...doc(a.doc), `export type ${name} = ${a.type};`, '');
  for (const [name, s] of Object.entries(spec.structs)) out.push(...doc(s.doc), `export interface ${name} {`, ...members(fieldsOf(s.fields)), '}', '');
  for (const [union, dir] of directions) {
    out.push(`// --- ${dir.doc} ---`, '');
    const names = [];
    for (const [kind, msg] of Object.entries(dir.messages)) {
      const name = `${pascal(kind)}Msg`;
      names.push(name);
      const variants = variantsOf(msg);
      if (variants.length === 1) {
        out.push(...doc(msg.doc), `export interface ${name} {`, `  t: '${kind}';`, ...members(variants[0]), '}', '');
      } else {
        const shapes = variants.map((v) => `{ t: '${kind}'; ${v.map((f) => `${f.name}${f.optional ? '?' : ''}: ${f.type}`).join('; ')} }`);
        out.push(...doc(msg.doc), `export type ${name} =`, ...shapes.map((s, i) => `  | ${s}${i === shapes.length - 1 ? ';' : ''}`), '');
      }
    }
    out.push(`export type ${union} =`, ...names.map((n, i) => `  | ${n}${i === names.length - 1 ? ';' : ''}`), '');
  }
  out.push("export type StubMessageType = StubToNode['t'];", '');
  return format(['node_modules/.bin/biome', 'format', `--stdin-file-path=${TS_OUT}`], out.join('\n'));
}

function python() {
  const constant = (kind) => kind.toUpperCase();
  const tuple = (names) => (names.length === 0 ? '()' : `(${names.map((n) => `"${n}"`).join(', ')}${names.length === 1 ? ',' : ''})`);
  const out = [
    `"""The messages of docs/ipc.md ("Messages"): their kinds and fields.`,
    '',
    'GENERATED from src/backends/python/ipc/messages.json by scripts/gen-ipc-messages.mjs: edit that',
    'file and run `npm run gen:ipc`. Node gets its view of the same declaration as TypeScript types',
    '(src/backends/python/ipc/messages.ts). The stub sends and dispatches on these names, and',
    'test/ipc-contract.test.ts checks every message literal of the stub against FIELDS.',
    '"""',
    '',
  ];
  const fields = [];
  for (const [, dir] of directions) {
    out.push(`# ${dir.doc}`);
    for (const [kind, msg] of Object.entries(dir.messages)) {
      out.push(`${constant(kind)} = "${kind}"`);
      const all = variantsOf(msg).flat();
      const required = [
        ...new Set(
          variantsOf(msg)
            .map((v) => v.filter((f) => !f.optional).map((f) => f.name))
            .reduce((a, b) => a.filter((n) => b.includes(n))),
        ),
      ];
      const optional = [...new Set(all.map((f) => f.name))].filter((n) => !required.includes(n));
      fields.push(`    ${constant(kind)}: (${tuple(required)}, ${tuple(optional)}),`);
    }
    out.push('');
  }
  const set = (dir) => `frozenset({${Object.keys(dir.messages).map(constant).join(', ')}})`;
  out.push(
    '# What each direction carries.',
    `NODE_TO_STUB = ${set(spec.nodeToStub)}`,
    `STUB_TO_NODE = ${set(spec.stubToNode)}`,
    '',
    '# kind -> (fields every message of it has, fields it may have); `t` is not listed. For a kind',
    '# with variants (metric, by `op`), what every variant has and what some have.',
    'FIELDS = {',
    ...fields,
    '}',
    '',
  );
  return format(['.venv/bin/ruff', 'format', '--stdin-filename', PY_OUT, '-'], out.join('\n'));
}

function format(command, text) {
  const r = spawnSync(path.join(root, command[0]), command.slice(1), { cwd: root, input: text, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${command[0]} could not format the generated code: ${r.stderr || r.error}`);
  return r.stdout;
}

const outputs = [
  [TS_OUT, typescript()],
  [PY_OUT, python()],
];
if (process.argv.includes('--check')) {
  const stale = outputs.filter(([file, text]) => !fs.existsSync(path.join(root, file)) || fs.readFileSync(path.join(root, file), 'utf8') !== text);
  for (const [file] of stale) console.error(`${file} is not what ${SOURCE} generates: run \`npm run gen:ipc\``);
  process.exit(stale.length === 0 ? 0 : 1);
}
for (const [file, text] of outputs) {
  fs.writeFileSync(path.join(root, file), text);
  console.log(`wrote ${file}`);
}
