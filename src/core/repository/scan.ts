/**
 * @module core/repository/scan
 * Finds the models of one or more repositories: `<repo>/<model>/config.pbtxt` (optional) and
 * numeric version directories. A model name found in two repositories is reported, not loaded.
 */
import fs from 'node:fs';
import path from 'node:path';
import { compareUtf8 } from '../utf8-order.js';

export interface ModelSource {
  name: string;
  /** `<repo>/<model>`: the directory `args['model_repository']` names. */
  dir: string;
  repository: string;
  /** Path of config.pbtxt, or undefined when the model has none. */
  configFile: string | undefined;
  /** Version numbers found on disk, ascending. */
  versions: number[];
}

export interface ScanResult {
  models: ModelSource[];
  /** Models that cannot be loaded at all, with the reason (e.g. duplicated names). */
  unavailable: Array<{ name: string; reason: string }>;
}

/** Version directories: digits only, no leading zero. */
const VERSION_DIR = /^[1-9][0-9]*$/;

export function listVersions(modelDir: string): number[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(modelDir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((e) => VERSION_DIR.test(e.name) && isDirectory(path.join(modelDir, e.name)))
    .map((e) => Number(e.name))
    .filter((v) => Number.isSafeInteger(v))
    .sort((a, b) => a - b);
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * @param configName `--model-config-name`: a model's `configs/<name>.pbtxt` is its config when
 *   it exists, else its config.pbtxt (docs/protocol-notes.md, "Command line").
 */
export function scanRepositories(repositories: string[], configName = ''): ScanResult {
  const byName = new Map<string, ModelSource[]>();
  for (const repo of repositories) {
    const root = path.resolve(repo);
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(root, { withFileTypes: true });
    } catch (err) {
      throw new Error(`failed to stat file ${repo}: ${(err as Error).message}`);
    }
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      const dir = path.join(root, e.name);
      if (!isDirectory(dir)) continue;
      const custom = configName === '' ? undefined : path.join(dir, 'configs', `${configName}.pbtxt`);
      const configPath = custom !== undefined && fs.existsSync(custom) ? custom : path.join(dir, 'config.pbtxt');
      const source: ModelSource = {
        name: e.name,
        dir,
        repository: root,
        configFile: fs.existsSync(configPath) ? configPath : undefined,
        versions: listVersions(dir),
      };
      const list = byName.get(e.name) ?? [];
      list.push(source);
      byName.set(e.name, list);
    }
  }
  const result: ScanResult = { models: [], unavailable: [] };
  for (const [name, sources] of [...byName.entries()].sort(([a], [b]) => compareUtf8(a, b))) {
    if (sources.length > 1) result.unavailable.push({ name, reason: 'model appears in two or more repositories' });
    else result.models.push(sources[0]!);
  }
  return result;
}
