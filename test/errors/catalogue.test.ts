/**
 * The error catalogue's two rules (docs/errors.md): every entry is documented, and no error is
 * built outside the catalogue.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, ErrorCode, Errors, TritonError, catalogueEntries } from '../../src/core/errors.js';
import { DOC_BEGIN, DOC_END, renderCatalogueTables } from '../../src/core/errors/doc.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DOC = fs.readFileSync(path.join(ROOT, 'docs/errors.md'), 'utf8');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    if (d.isDirectory()) return sourceFiles(p);
    return d.name.endsWith('.ts') ? [p] : [];
  });
}

/** The catalogue's own modules: the only places allowed to construct its error classes. */
const isCatalogue = (rel: string): boolean => rel === 'src/core/errors.ts' || rel.startsWith('src/core/errors/');

describe('error catalogue', () => {
  it('documents every entry in docs/errors.md, exactly as the catalogue defines it', () => {
    const begin = DOC.indexOf(DOC_BEGIN);
    const end = DOC.indexOf(DOC_END);
    expect(begin, 'docs/errors.md has the catalogue markers').toBeGreaterThanOrEqual(0);
    const documented = DOC.slice(begin + DOC_BEGIN.length, end);
    for (const { name } of catalogueEntries()) {
      expect(documented, `entry '${name}' is listed in docs/errors.md`).toContain(`| \`${name}\` |`);
    }
    // Code, statuses, reason, template and "when" too: run `node scripts/errors-doc.mjs` after a change.
    expect(documented.trim()).toBe(renderCatalogueTables().trim());
  });

  it('builds no TritonError or ConfigError outside the catalogue modules', () => {
    const offenders: string[] = [];
    for (const file of sourceFiles(path.join(ROOT, 'src'))) {
      const rel = path.relative(ROOT, file);
      if (isCatalogue(rel)) continue;
      const text = fs.readFileSync(file, 'utf8');
      text.split('\n').forEach((line, i) => {
        if (/new\s+(TritonError|ConfigError)\s*\(|extends\s+(TritonError|ConfigError)\b/.test(line)) offenders.push(`${rel}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offenders).toEqual([]);
  });

  it('lists in docs/errors.md every other error class in src/ and why it is not a catalogue error', () => {
    const undocumented: string[] = [];
    for (const file of sourceFiles(path.join(ROOT, 'src'))) {
      const rel = path.relative(ROOT, file);
      if (isCatalogue(rel)) continue;
      for (const m of fs.readFileSync(file, 'utf8').matchAll(/class\s+(\w+)\s+extends\s+Error\b/g)) {
        if (!DOC.includes(`\`${m[1]}\``)) undocumented.push(`${rel}: ${m[1]}`);
      }
    }
    expect(undocumented).toEqual([]);
  });

  it('fills templates and records the entry that built an error', () => {
    const e = Errors.unknownModel('m1');
    expect(e).toBeInstanceOf(TritonError);
    expect(e.message).toBe("Request for unknown model: 'm1' is not found");
    expect(e.code).toBe(ErrorCode.NOT_FOUND);
    expect(e.reason).toBe('OTHER');
    expect(e.entry).toBe('unknownModel');
    const shape = Errors.shapeMismatch('m', 'x', [2], [3], false);
    expect(shape.message).toBe("unexpected shape for input 'x' for model 'm'. Expected [2], got [3]");
    expect(shape.reason).toBe('REJECTED');
  });

  it('keeps the code and reason of a wrapped error for entries whose code varies', () => {
    const inner = Errors.reservedParameter('triton_x');
    const outer = Errors.generateParameters(inner);
    expect(outer.code).toBe(inner.code);
    expect(outer.reason).toBe('REJECTED');
    expect(outer.message).toBe(`Converting keyword: 'parameters': ${inner.message}`);
    expect(Errors.modelRaised(ErrorCode.UNAVAILABLE, 'busy').code).toBe(ErrorCode.UNAVAILABLE);
  });

  it('builds config errors that are catalogue errors carrying file, line and field', () => {
    const e = Errors.ruleMaxBatchSize({ file: 'c.pbtxt', field: 'max_batch_size', line: 4, column: 3 }, -1);
    expect(e).toBeInstanceOf(ConfigError);
    expect(e).toBeInstanceOf(TritonError);
    expect(e.code).toBe(ErrorCode.INVALID_ARG);
    expect([e.file, e.line, e.field]).toEqual(['c.pbtxt', 4, 'max_batch_size']);
    expect(e.message).toBe('c.pbtxt:4:3: max_batch_size: must be >= 0, got -1');
    expect(e.entry).toBe('ruleMaxBatchSize');
    // A ConfigError is a TritonError, not the other way round.
    expect(Errors.unknownModel('m')).not.toBeInstanceOf(ConfigError);
  });

  it('has no template hole left unfilled by any entry that takes no arguments', () => {
    for (const { name } of catalogueEntries()) {
      const make = (Errors as unknown as Record<string, { (): TritonError; arity?: number }>)[name]!;
      if (make.arity !== 0) continue;
      expect(make().message, name).not.toMatch(/\{\w+\}/);
    }
  });
});
