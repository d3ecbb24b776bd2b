import { describe, expect, it } from 'vitest';
import { inferBackend } from '../../src/core/config/infer-backend.js';
import { normalizeModelConfig, type NormalizeContext } from '../../src/core/config/normalize.js';
import { parseModelConfigText } from '../../src/core/config/parse.js';
import { ModelInstanceGroup_Kind, type ModelConfig } from '../../src/core/config/schema.js';

const cpuHost: NormalizeContext = { modelName: 'm', gpuCount: 0, gpus: [] };
const twoGpus: NormalizeContext = { modelName: 'm', gpuCount: 2, gpus: [0, 1] };
const pb = (text: string): ModelConfig => parseModelConfigText(text, 'config.pbtxt');
const norm = (text: string, ctx: NormalizeContext = cpuHost): ModelConfig => normalizeModelConfig(pb(`backend: "python"\n${text}`), ctx);
/** The dynamic_batching message of a config that has one. */
const dynamic = (cfg: ModelConfig) => {
  if (cfg.schedulingChoice.case !== 'dynamicBatching') throw new Error(`no dynamic_batching: ${cfg.schedulingChoice.case}`);
  return cfg.schedulingChoice.value;
};

describe('normalizeModelConfig', () => {
  it('fills the name from the directory and keeps an explicit one', () => {
    expect(norm('').name).toBe('m');
    expect(norm('name: "given"').name).toBe('given');
  });

  it('does not modify its argument', () => {
    const cfg = pb('backend: "python" max_batch_size: 4 dynamic_batching {}');
    normalizeModelConfig(cfg, cpuHost);
    expect(cfg.name).toBe('');
    expect(cfg.instanceGroup).toHaveLength(0);
    expect(dynamic(cfg).preferredBatchSize).toEqual([]);
  });

  it('defaults the version policy to latest { num_versions: 1 } only when unset', () => {
    expect(norm('').versionPolicy?.policyChoice).toMatchObject({ case: 'latest', value: { numVersions: 1 } });
    expect(norm('version_policy { all {} }').versionPolicy?.policyChoice.case).toBe('all');
    expect(norm('version_policy { specific { versions: 2 } }').versionPolicy?.policyChoice).toMatchObject({
      case: 'specific',
      value: { versions: [2n] },
    });
  });

  it('defaults preferred_batch_size to [max_batch_size] for dynamic batching', () => {
    expect(dynamic(norm('max_batch_size: 8 dynamic_batching {}')).preferredBatchSize).toEqual([8]);
    expect(dynamic(norm('max_batch_size: 8 dynamic_batching { preferred_batch_size: [2, 4] }')).preferredBatchSize).toEqual([2, 4]);
    expect(dynamic(norm('max_batch_size: 0 dynamic_batching {}')).preferredBatchSize).toEqual([]);
  });

  it('defaults the sequence idle time and the oldest strategy preferred sizes', () => {
    const cfg = norm('max_batch_size: 4 sequence_batching { oldest { max_candidate_sequences: 4 } }');
    const sb = cfg.schedulingChoice.case === 'sequenceBatching' ? cfg.schedulingChoice.value : undefined;
    expect(sb?.maxSequenceIdleMicroseconds).toBe(1_000_000n);
    expect(sb?.strategyChoice).toMatchObject({ case: 'oldest', value: { preferredBatchSize: [4] } });
    const kept = norm('sequence_batching { max_sequence_idle_microseconds: 5 }');
    expect(kept.schedulingChoice.value).toMatchObject({ maxSequenceIdleMicroseconds: 5n });
  });

  it('enables pinned memory buffers unless configured, and not for ensembles', () => {
    const cfg = norm('optimization { input_pinned_memory { enable: false } }');
    expect(cfg.optimization?.inputPinnedMemory?.enable).toBe(false);
    expect(cfg.optimization?.outputPinnedMemory?.enable).toBe(true);
    const ens = normalizeModelConfig(pb('platform: "ensemble"'), cpuHost);
    expect(ens.optimization).toBeUndefined();
    expect(ens.instanceGroup).toHaveLength(0);
  });

  it('creates one group named after the model when there is none: CPU without GPUs, GPU with all of them', () => {
    const cpu = norm('').instanceGroup;
    expect(cpu).toHaveLength(1);
    expect(cpu[0]).toMatchObject({ name: 'm', kind: ModelInstanceGroup_Kind.CPU, count: 1, gpus: [] });
    const gpu = norm('', twoGpus).instanceGroup;
    expect(gpu[0]).toMatchObject({ name: 'm', kind: ModelInstanceGroup_Kind.GPU, count: 1, gpus: [0, 1] });
  });

  it('names unnamed groups <model>_<index>, resolves KIND_AUTO, count < 1 → 1, KIND_GPU without gpus → all', () => {
    const groups = norm(
      `instance_group [
         { count: 2 kind: KIND_CPU },
         { name: "named" kind: KIND_GPU },
         { kind: KIND_AUTO count: 0 },
         { kind: KIND_AUTO gpus: [ 3 ] },
         { kind: KIND_MODEL count: -4 }
       ]`,
      twoGpus,
    ).instanceGroup;
    expect(groups.map((g) => [g.name, g.kind, g.count, g.gpus])).toEqual([
      ['m_0', ModelInstanceGroup_Kind.CPU, 2, []],
      ['named', ModelInstanceGroup_Kind.GPU, 1, [0, 1]],
      ['m_2', ModelInstanceGroup_Kind.GPU, 1, [0, 1]],
      // A listed GPU the host lacks makes AUTO fall back to CPU (validation then objects to the gpus).
      ['m_3', ModelInstanceGroup_Kind.CPU, 1, [3]],
      ['m_4', ModelInstanceGroup_Kind.MODEL, 1, []],
    ]);
  });

  it('leaves a KIND_GPU group without GPUs on a CPU-only host for validation to reject', () => {
    expect(norm('instance_group { kind: KIND_GPU }').instanceGroup[0]).toMatchObject({ kind: ModelInstanceGroup_Kind.GPU, gpus: [] });
  });

  it('derives GPU ids from gpuCount when gpus is empty', () => {
    expect(norm('', { modelName: 'm', gpuCount: 2, gpus: [] }).instanceGroup[0]!.gpus).toEqual([0, 1]);
  });

  it('defaults CPU groups of onnxruntime models to two instances', () => {
    const cfg = normalizeModelConfig(pb('backend: "onnxruntime" instance_group { kind: KIND_CPU }'), cpuHost);
    expect(cfg.instanceGroup[0]!.count).toBe(2);
  });
});

describe('inferBackend', () => {
  it('recognises Python models from model.py', () => {
    const cfg = inferBackend(['model.py', '__pycache__'], pb(''));
    expect([cfg.backend, cfg.platform, cfg.defaultModelFilename]).toEqual(['python', '', 'model.py']);
  });

  it('recognises ONNX models from model.onnx, and prefers ONNX when both files exist', () => {
    for (const files of [['model.onnx'], ['/repo/m/1/model.onnx', '/repo/m/1/model.py']]) {
      const cfg = inferBackend(files, pb(''));
      expect([cfg.backend, cfg.platform, cfg.defaultModelFilename]).toEqual(['onnxruntime', 'onnxruntime_onnx', 'model.onnx']);
    }
  });

  it('completes backend from platform and platform from backend', () => {
    const fromPlatform = inferBackend([], pb('platform: "onnxruntime_onnx"'));
    expect([fromPlatform.backend, fromPlatform.defaultModelFilename]).toEqual(['onnxruntime', 'model.onnx']);
    const fromBackend = inferBackend([], pb('backend: "onnxruntime"'));
    expect(fromBackend.platform).toBe('onnxruntime_onnx');
    const py = inferBackend([], pb('backend: "python"'));
    expect([py.platform, py.defaultModelFilename]).toEqual(['', 'model.py']);
  });

  it('uses default_model_filename to pick the framework and keeps it', () => {
    const cfg = inferBackend(['entry.py'], pb('default_model_filename: "entry.py"'));
    expect([cfg.backend, cfg.defaultModelFilename]).toEqual(['python', 'entry.py']);
  });

  it('leaves unknown layouts and ensembles alone', () => {
    expect(inferBackend(['weights.bin'], pb('')).backend).toBe('');
    expect(inferBackend(['model.py'], pb('platform: "ensemble"')).backend).toBe('');
  });
});

describe('inferBackend in place', () => {
  it('mutates and returns its argument (also exported from normalize.js)', async () => {
    const { inferBackend: fromNormalize } = await import('../../src/core/config/normalize.js');
    const cfg = pb('');
    expect(fromNormalize(['model.py'], cfg)).toBe(cfg);
    expect(cfg.backend).toBe('python');
  });
});
