/**
 * @module core/model/load-overrides
 * The overrides a load request may carry (docs/protocol-notes.md, "Model repository"): `config`,
 * a JSON model config that replaces config.pbtxt, and `file:<version>/<path>` contents that,
 * with it, form the whole model directory. The files are written to a fresh temporary directory,
 * never into the user's repository. A path is relative to the model directory even with leading
 * slashes (`file:/1/model.py` is `1/model.py`, as tritonserver joins it), and one that leaves the
 * directory once normalised (`file:../x`, `file:/1/../../x`) is refused.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ModelConfig } from '../../generated/model_config_pb.js';
import { modelConfigFromJson } from '../config/json.js';
import { Errors } from '../errors.js';
import { listVersions, type ModelSource } from '../repository/scan.js';

export interface LoadOverrides {
  /** JSON model config (protobuf JSON, as tritonclient's `load_model(config=...)` sends it). */
  config?: string;
  /** `file:<version>/<path>` → content. */
  files?: Record<string, Buffer>;
}

export interface PreparedSource {
  source: ModelSource;
  config?: ModelConfig;
  /** Removes the temporary directory, if one was made; safe to call more than once. */
  release: () => void;
}

const FILE_PREFIX = 'file:';

/** Applies `o` to the repository's `source`; throws the catalogue's texts for refused overrides. */
export function prepareOverrides(source: ModelSource, o: LoadOverrides | undefined): PreparedSource {
  const none = () => {};
  const files = Object.entries(o?.files ?? {});
  if (o?.config === undefined) {
    if (files.length > 0) throw Errors.loadFilesNeedConfig();
    return { source, release: none };
  }
  let config: ModelConfig;
  try {
    config = modelConfigFromJson(o.config);
  } catch (err) {
    throw Errors.loadConfigOverride((err as Error).message);
  }
  if (files.length === 0) return { source, config, release: none };

  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tritium-load-'));
  const release = () => fs.rmSync(root, { recursive: true, force: true });
  try {
    // Named after the model where the name is one path component: a gRPC load may name a model
    // '../x', which must not put the directory outside root.
    const plain = source.name !== '' && source.name !== '.' && source.name !== '..' && !source.name.includes('/');
    const dir = path.join(root, plain ? source.name : 'model');
    fs.mkdirSync(dir);
    for (const [key, content] of files) {
      // join, not resolve: a leading slash does not make the path absolute (Triton's JoinPath).
      const target = path.join(dir, key.slice(FILE_PREFIX.length));
      if (!key.startsWith(FILE_PREFIX) || !target.startsWith(dir + path.sep)) throw Errors.loadFileEscapes(key, target);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, content);
    }
    return { source: { name: source.name, dir, repository: root, configFile: undefined, versions: listVersions(dir) }, config, release };
  } catch (err) {
    release();
    throw err;
  }
}
