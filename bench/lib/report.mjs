/**
 * Benchmark helper: the pieces of a Markdown report bench/vs-triton.mjs and bench/floor.mjs
 * share: numbers, medians, tables, and the facts of the run (command, load, tool versions, commit).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './server.mjs';

/** `v` with `digits` decimals, or — when it is not a finite number. */
export function fmt(v, digits = 0) {
  return Number.isFinite(v) ? v.toFixed(digits) : '—';
}

/** The median of the finite numbers among `values` (NaN when there is none). */
export function median(values) {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** A Markdown table: the first column left-aligned, the others right-aligned. */
export function table(header, rows) {
  const lines = [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`];
  for (const r of rows) lines.push(`| ${r.join(' | ')} |`);
  return lines.join('\n');
}

/** `a` as one shell word. */
export function shellQuote(a) {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/** The command line this process was started with, as `node <script> <args>`. */
export function commandLine(script) {
  return `node ${script} ${process.argv.slice(2).map(shellQuote).join(' ')}`.trimEnd();
}

/** The first line of what `cmd args` prints, or 'unknown' when it fails. */
export function toolVersion(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return r.status === 0 ? `${r.stdout}${r.stderr}`.trim().split('\n')[0] : 'unknown';
}

/** The short commit of the checkout, noting uncommitted changes in the server's sources. */
export function gitCommit(root = ROOT) {
  const head = toolVersion('git', ['-C', root, 'rev-parse', '--short', 'HEAD']);
  const dirty = spawnSync('git', ['-C', root, 'status', '--porcelain', '--', 'src', 'stub', 'native'], { encoding: 'utf8' }).stdout?.trim();
  return dirty ? `${head} (+ uncommitted changes in src/ stub/ native/)` : head;
}

/** The 1, 5 and 15 minute load averages, two decimals each. */
export function loadAverage() {
  return os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

/** Prints the Markdown report `text` on stdout and keeps a copy in `dir`/report.md. */
export function publishReport(text, dir) {
  console.log(text);
  fs.writeFileSync(path.join(dir, 'report.md'), `${text}\n`);
}
