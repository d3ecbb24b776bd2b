/**
 * @module core/model/config-builder
 * A model directory (or a load's config override) → normalised, validated config: parse →
 * backend inference → auto-complete → normalise → validate, refusing settings tritium cannot
 * honour.
 */
import fs from 'node:fs';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { ModelConfigSchema, type ModelConfig } from '../../generated/model_config_pb.js';
import type { Backend } from '../backend.js';
import { inferBackend, normalizeModelConfig } from '../config/normalize.js';
import { parseModelConfigTextWithPositions, type SourceMap } from '../config/parse.js';
import { validateModelConfig } from '../config/validate.js';
import { planEnsemble } from '../ensemble/plan.js';
import { Errors } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ResponseCache } from '../cache/response-cache.js';
import type { RateLimiter } from '../scheduling/rate-limiter.js';
import type { ModelSource } from '../repository/scan.js';
import { DEFAULT_BACKEND_DIRECTORY, resolveBackend } from './backend-resolution.js';

export interface ConfigBuildOptions {
  autoCompleteConfig: boolean;
  defaultMaxBatchSize: number;
  gpus: number[];
  backends: Map<string, Backend>;
  /** `--backend-directory`: where Python-based backends live (default tritonserver's). */
  backendDirectory?: string;
  /** The server's response cache (`--cache-config`), if it has one. */
  responseCache?: ResponseCache;
  /** The server's rate limiter (`--rate-limit=execution_count`), when on. */
  rateLimiter?: RateLimiter;
  logger: Logger;
}

/**
 * config.pbtxt (or `override`, the JSON config of a load request, or an empty config) →
 * normalised, validated config.
 */
export async function buildModelConfig(source: ModelSource, o: ConfigBuildOptions, override?: ModelConfig): Promise<ModelConfig> {
  let config: ModelConfig;
  // Where each field was written, so that validation errors name the line too.
  let positions: SourceMap | undefined;
  const file = override ? `config override of '${source.name}'` : (source.configFile ?? path.join(source.dir, 'config.pbtxt'));
  if (override) {
    config = override;
  } else if (source.configFile) {
    ({ config, positions } = parseModelConfigTextWithPositions(fs.readFileSync(source.configFile, 'utf8'), source.configFile));
  } else {
    config = create(ModelConfigSchema, {});
  }
  if (config.name && config.name !== source.name) {
    const at = positions?.get('name');
    throw Errors.configNameMismatch({ file, line: at?.line, field: 'name' }, file, config.name, source.name, at?.line, at?.column);
  }
  config.name = source.name;
  const latest = source.versions[source.versions.length - 1];
  const versionDir = latest === undefined ? undefined : path.join(source.dir, String(latest));
  const files = versionDir ? safeList(versionDir) : [];
  if (config.platform === 'ensemble') return buildEnsembleConfig(config, source, o, file, positions);
  inferBackend(files, config);
  if (!config.backend && config.platform) {
    const at = positions?.get('platform');
    throw Errors.configUnknownPlatform({ file, line: at?.line, field: 'platform' }, file, config.platform, source.name, at?.line, at?.column);
  }
  if (!config.backend) {
    throw Errors.configNoBackend({ file, field: 'backend' }, source.name, file);
  }
  const backend = resolveBackend(config, source.dir, versionDir, {
    backends: o.backends,
    backendDirectory: o.backendDirectory ?? DEFAULT_BACKEND_DIRECTORY,
    file,
  });
  if (o.autoCompleteConfig && backend.autoComplete && versionDir) {
    config = await backend.autoComplete({ source, versionDir, logger: o.logger }, config);
    config.name = source.name;
  }
  config = normalizeModelConfig(config, {
    modelName: source.name,
    gpuCount: o.gpus.length,
    gpus: o.gpus,
    defaultMaxBatchSize: o.defaultMaxBatchSize,
  });
  validateModelConfig(config, file, { gpus: o.gpus, modelName: source.name, positions });
  // Settings tritium cannot honour are refused or said out loud, never silently ignored.
  if (config.schedulingChoice.case === 'sequenceBatching') {
    const sb = config.schedulingChoice.value;
    // A Python model has no way to hand back a state output (Triton's Python backend has none
    // either): its state would stay at the initial value for ever.
    const what =
      sb.state.length > 0 && config.backend === 'python' ? "with implicit state ('state') on a Python model, which cannot write state outputs" : undefined;
    if (what !== undefined) {
      const at = positions?.get('sequence_batching');
      throw Errors.configSequenceBatchingUnsupported({ file, line: at?.line, field: 'sequence_batching' }, file, source.name, what, at?.line, at?.column);
    }
  }
  if (config.responseCache?.enable && o.responseCache === undefined) {
    // As Triton started without --cache-config: the model loads and every request is computed.
    o.logger.warn(`model '${source.name}' enables response_cache, but the server has no cache (--cache-config local,size=<bytes>): every request is computed`);
  }
  return config;
}

/**
 * An ensemble has no backend, model file or instances: normalised and validated like any
 * config, then its data flow is checked (core/ensemble/plan.ts). What depends on its composing
 * models is checked once they are loaded (model-control.ts).
 */
function buildEnsembleConfig(config: ModelConfig, source: ModelSource, o: ConfigBuildOptions, file: string, positions: SourceMap | undefined): ModelConfig {
  const out = normalizeModelConfig(config, { modelName: source.name, gpuCount: o.gpus.length, gpus: o.gpus, defaultMaxBatchSize: o.defaultMaxBatchSize });
  validateModelConfig(out, file, { gpus: o.gpus, modelName: source.name, positions });
  planEnsemble(out);
  return out;
}

function safeList(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}
