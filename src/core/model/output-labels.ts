/**
 * @module core/model/output-labels
 * The `label_filename` of each output, read when a version loads: one label per line, the
 * line's index being the class index classification reports (docs/protocol-notes.md,
 * "Classification"). The file is relative to the model directory, as in Triton; a file that
 * cannot be read fails the load with Triton's text. Unlike Triton, a name that leaves the model
 * directory (absolute, `..`, a link out) is refused, as every file a config names is
 * (repository/safe-path.ts): a config must not make the server read files elsewhere.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ModelConfig } from '../../generated/model_config_pb.js';
import { Errors } from '../errors.js';
import { resolveInside } from '../repository/safe-path.js';

/** strerror's words for what Node reports by code (Triton prints strerror). */
const STRERROR: Record<string, string> = {
  ENOENT: 'No such file or directory',
  EACCES: 'Permission denied',
  EISDIR: 'Is a directory',
  ENOTDIR: 'Not a directory',
};

export function readOutputLabels(modelDir: string, config: ModelConfig): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const o of config.output) {
    if (!o.labelFilename) continue;
    resolveInside(modelDir, o.labelFilename, 'label_filename');
    const file = path.join(modelDir, o.labelFilename);
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw Errors.labelFileRead(file, STRERROR[e.code ?? ''] ?? e.message);
    }
    const lines = text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop(); // the newline ending the last line
    out.set(o.name, lines);
  }
  return out;
}
