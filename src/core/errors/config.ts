/**
 * @module core/errors/config
 * Catalogue: model configurations that cannot be loaded. Each entry builds a `ConfigError`
 * (INVALID_ARG) that carries the file, line and field, given first as a `ConfigLocation`.
 * Syntax errors are in ./config-syntax.ts, validation rules in ./config-rules.ts.
 */
import { configEntries, type ConfigLocation } from './config-error.js';

const configEntry = configEntries('', (at: ConfigLocation) => ({ holes: {}, at }));

/** `file:line:column: ` when the position is known, else `file: ` (or nothing without a file). */
const where = (file: string | undefined, line?: number, column?: number): string =>
  file === undefined ? '' : line !== undefined ? `${file}:${line}:${column ?? 0}` : file;

export const config = {
  configNameMismatch: configEntry(
    {
      text: "{where}unexpected 'name' '{name}' in {file}: the model directory is '{dir}'",
      when: "config.pbtxt names the model differently from its directory ({where} is 'file:line:column: ' when known).",
    },
    (file: string, name: string, dir: string, line?: number, column?: number) => ({
      where: line !== undefined ? `${where(file, line, column)}: ` : '',
      name,
      file,
      dir,
    }),
  ),
  configNoBackend: configEntry(
    {
      text: "unable to find a backend for model '{model}': set 'backend' in {file} or put model.py / model.onnx in a version directory",
      when: 'Neither the config nor the version directory says which backend serves the model.',
    },
    (model: string, file: string) => ({ model, file }),
  ),
  configUnknownPlatform: configEntry(
    {
      text: "{where}unexpected platform type '{platform}' for {model}: tritium serves the platform onnxruntime_onnx and the python and onnxruntime backends; set 'backend' (or 'platform') to one of them",
      when: "The config names a platform Triton does not know (Triton's own words, then what tritium has). {where} is 'file:line:column: ' when known.",
    },
    (file: string, platform: string, model: string, line?: number, column?: number) => ({
      where: line !== undefined ? `${where(file, line, column)}: ` : '',
      platform,
      model,
    }),
  ),
  configUnsupportedBackend: configEntry(
    {
      text: "unable to find backend library for backend '{backend}', try specifying runtime on the model configuration. tritium serves the python and onnxruntime backends and Python-based ones, and {searched} does not exist",
      when: "The config names a backend that is neither built in nor a `model.py` in --backend-directory (Triton's text, then where tritium looked).",
    },
    (backend: string, searched: string) => ({ backend, searched }),
  ),
  configNativeBackend: configEntry(
    {
      text: "backend '{backend}' of model '{model}' is the native library {library}, which tritium cannot load: tritium serves python, onnxruntime and Python-based backends (<backend-directory>/{backend}/model.py)",
      when: 'A `libtriton_<backend>.so` (or a `runtime` library) was found for the model: a C++ backend.',
    },
    (backend: string, model: string, library: string) => ({ backend, model, library }),
  ),
  configBackendModelPyMissing: configEntry(
    {
      text: "unable to find Python backend based backend library 'model.py' for model '{model}', searched: '{searched}'",
      when: '`runtime: "model.py"` and no model.py in the backend\'s directory (Triton\'s text).',
    },
    (model: string, searched: string) => ({ model, searched }),
  ),
  configBackendEscape: configEntry(
    {
      text: "backend library name '{library}' escapes backend directory '{dir}', for model '{model}', check model config runtime field",
      when: "A `runtime` or backend name whose path (through `..` or a link) leaves the backend's directory (Triton's text).",
    },
    (library: string, dir: string, model: string) => ({ library, dir, model }),
  ),
  configSequenceBatchingUnsupported: configEntry(
    {
      text: "{where}model '{model}' uses sequence_batching {what}, so the model is not loaded",
      when: "A sequence model that cannot be served faithfully: implicit state (`state`) on a Python model, which has no way to write state outputs (Triton's Python backend has none either). {where} is 'file:line:column: ' when known.",
    },
    (file: string, model: string, what: string, line?: number, column?: number) => ({
      where: line !== undefined ? `${where(file, line, column)}: ` : '',
      model,
      what,
    }),
  ),
  configJsonSyntax: configEntry(
    { text: '{file}: invalid JSON: {cause}', when: 'A configuration given as JSON (auto_complete_config result, load override) does not parse.' },
    (file: string, cause: string) => ({ file, cause }),
  ),
  configJsonNotObject: configEntry(
    { text: '{file}: a model configuration must be a JSON object', when: 'A JSON configuration is not an object.' },
    (file: string) => ({ file }),
  ),
  configJsonInvalid: configEntry(
    { text: '{file}: {cause}', when: "A JSON configuration has an unknown field or a bad value ({cause} is protobuf-es's diagnostic)." },
    (file: string, cause: string) => ({ file, cause }),
  ),
} as const;
