/**
 * @module frontends/openai/model-text
 * What the OpenAI endpoints need of a model beyond its tensors: its chat template, a token
 * counter for `usage` when the model does not count, and its context length.
 *
 * Where they come from, first found wins:
 * - chat template: `--chat-template FILE`; the `--tokenizer` directory's tokenizer_config.json;
 *   the model's directory; its version directory; the local directory a vLLM `model.json`
 *   names as `model`.
 * - token counter: tokenizer.json in the same directories (without `--chat-template`).
 * - context length: the model's `max_model_len` parameter, else `max_model_len` in the
 *   version's model.json (vLLM's engine arguments).
 * Looked up once per loaded model version (a reload is a new version object).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ModelHandle } from '../../core/model-handle.js';
import { ChatTemplate } from './chat-template.js';
import { type TokenCounter, loadTokenizerDir } from './tokenizer.js';

export interface OpenAiFiles {
  /** `--tokenizer DIR`: one tokenizer for every model (as Triton's frontend). */
  tokenizerDir?: string;
  /** `--chat-template FILE`: replaces every model's template. */
  chatTemplateFile?: string;
}

export interface ModelText {
  template?: ChatTemplate;
  counter?: TokenCounter;
  maxModelLen?: number;
  /** Why a file could not be used (reported at the first chat request, not at load). */
  problem?: unknown;
}

const cache = new WeakMap<ModelHandle, ModelText>();

export function modelTextOf(handle: ModelHandle, files: OpenAiFiles): ModelText {
  const known = cache.get(handle);
  if (known !== undefined) return known;
  const mt: ModelText = {};
  const engineArgs = readModelJson(path.join(handle.directory, handle.version, 'model.json'));
  const dirs = [files.tokenizerDir, handle.directory, path.join(handle.directory, handle.version)];
  if (typeof engineArgs?.model === 'string' && path.isAbsolute(engineArgs.model)) dirs.push(engineArgs.model);
  try {
    if (files.chatTemplateFile !== undefined) {
      const config = files.tokenizerDir === undefined ? undefined : path.join(files.tokenizerDir, 'tokenizer_config.json');
      mt.template = ChatTemplate.fromFile(files.chatTemplateFile, config !== undefined && fs.existsSync(config) ? config : undefined);
    }
    for (const dir of dirs) {
      if (dir === undefined || !fs.existsSync(dir)) continue;
      const found = loadTokenizerDir(dir);
      mt.template ??= found.template;
      mt.counter ??= found.counter;
      if (mt.template !== undefined && mt.counter !== undefined) break;
    }
  } catch (err) {
    mt.problem = err;
  }
  const params = handle.configJson().parameters as Record<string, { string_value?: string }> | undefined;
  const fromParam = Number(params?.max_model_len?.string_value);
  const fromJson = Number(engineArgs?.max_model_len);
  if (Number.isInteger(fromParam) && fromParam > 0) mt.maxModelLen = fromParam;
  else if (Number.isInteger(fromJson) && fromJson > 0) mt.maxModelLen = fromJson;
  cache.set(handle, mt);
  return mt;
}

function readModelJson(file: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(fs.readFileSync(file, 'utf8')) as unknown;
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
