/**
 * The overrides of a load request (core/model/load-overrides.ts): a config override alone keeps
 * the repository's directory; with file overrides the model comes from a fresh temporary
 * directory holding only those files (a leading slash is relative to it, as in Triton); paths
 * that leave it, files without a config and configs
 * that are not model configs are refused with Triton's texts; the user's repository is never
 * written to.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { prepareOverrides } from '../../src/core/model/load-overrides.js';
import type { ModelSource } from '../../src/core/repository/scan.js';

const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-overrides-'));
const dir = path.join(repo, 'm');
fs.mkdirSync(path.join(dir, '1'), { recursive: true });
fs.writeFileSync(path.join(dir, 'config.pbtxt'), 'backend: "python"\n');
fs.writeFileSync(path.join(dir, '1', 'model.py'), 'original\n');
const source: ModelSource = { name: 'm', dir, repository: repo, configFile: path.join(dir, 'config.pbtxt'), versions: [1] };
const listing = () => fs.readdirSync(repo, { recursive: true }).map(String).sort();
const before = listing();

afterAll(() => fs.rmSync(repo, { recursive: true, force: true }));

describe('prepareOverrides', () => {
  it('leaves the source alone without overrides, and takes a config override as JSON', () => {
    expect(prepareOverrides(source, undefined).source).toBe(source);
    const p = prepareOverrides(source, { config: '{"backend": "python", "max_batch_size": 4, "instance_group": [{"kind": "kind_cpu"}]}' });
    expect(p.source).toBe(source);
    expect([p.config?.backend, p.config?.maxBatchSize, p.config?.instanceGroup[0]?.kind]).toEqual(['python', 4, 2]);
  });

  it('builds the model directory from the file overrides in a temporary directory, removed by release()', () => {
    const p = prepareOverrides(source, {
      config: '{}',
      files: { 'file:1/model.py': Buffer.from('override\n'), 'file:2/sub/data.bin': Buffer.from([1, 2, 3]) },
    });
    expect(p.source.dir.startsWith(dir)).toBe(false);
    expect(path.basename(p.source.dir)).toBe('m');
    expect(p.source.versions).toEqual([1, 2]);
    expect(fs.readFileSync(path.join(p.source.dir, '1', 'model.py'), 'utf8')).toBe('override\n');
    expect([...fs.readFileSync(path.join(p.source.dir, '2', 'sub', 'data.bin'))]).toEqual([1, 2, 3]);
    p.release();
    expect(fs.existsSync(p.source.repository)).toBe(false);
    expect(listing()).toEqual(before);
  });

  it('takes a path with leading slashes as relative to the model directory, as tritonserver joins it', () => {
    const p = prepareOverrides(source, {
      config: '{}',
      files: { 'file:/1/model.py': Buffer.from('slash\n'), 'file://etc/x': Buffer.from('inside\n') },
    });
    expect(p.source.versions).toEqual([1]);
    expect(fs.readFileSync(path.join(p.source.dir, '1', 'model.py'), 'utf8')).toBe('slash\n');
    expect(fs.readFileSync(path.join(p.source.dir, 'etc', 'x'), 'utf8')).toBe('inside\n');
    p.release();
    expect(listing()).toEqual(before);
  });

  it("keeps the directory inside its temporary root whatever the model's name (gRPC can send '../x')", () => {
    for (const name of ['../escaped-model', '..', 'a/b']) {
      const p = prepareOverrides({ ...source, name }, { config: '{}', files: { 'file:1/model.py': Buffer.from('x') } });
      expect(path.dirname(p.source.dir)).toBe(p.source.repository);
      expect(p.source.name).toBe(name);
      p.release();
    }
    expect(fs.existsSync(path.join(os.tmpdir(), 'escaped-model'))).toBe(false);
    expect(listing()).toEqual(before);
  });

  it.each([
    [{ files: { 'file:1/model.py': Buffer.from('x') } }, "Load parameter 'config' must be specified for model file override"],
    [
      { config: '{}', files: { 'file:../x': Buffer.from('x') } },
      /^Invalid file parameter 'file:\.\.\/x' with normalized path '\/.*\/x' must stay within model directory\.$/,
    ],
    [{ config: '{}', files: { 'file:/../x': Buffer.from('x') } }, /^Invalid file parameter 'file:\/\.\.\/x' with normalized path '\/.*\/x' must stay/],
    [{ config: '{}', files: { 'file:///1/../../x': Buffer.from('x') } }, /must stay within model directory/],
    [{ config: '{}', files: { 'file:1/../../m2/x': Buffer.from('x') } }, /must stay within model directory/],
    [{ config: '{}', files: { 'file:': Buffer.from('x') } }, /must stay within model directory/],
    [{ config: '{not json' }, /^Invalid config override: /],
    [{ config: '{"bogus_field": 1}' }, /^Invalid config override: .*bogus_field/],
  ])('refuses %j', (overrides, message) => {
    expect(() => prepareOverrides(source, overrides)).toThrow(message);
    expect(listing()).toEqual(before);
  });
});
