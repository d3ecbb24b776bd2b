/**
 * Triton's server-side defaults (docs/protocol-notes.md, "Model configuration normalisation"):
 * what turns a config.pbtxt (plus auto-complete) into the config that
 * `/config` shows and `initialize(args)` receives. Backend inference from
 * files (step 2) is inferBackend; call it first, since the instance count
 * default depends on the backend.
 */
import { create } from '@bufbuild/protobuf';
import {
  ModelDynamicBatchingSchema,
  ModelInstanceGroup_Kind,
  ModelInstanceGroupSchema,
  ModelOptimizationPolicy_PinnedMemoryBufferSchema,
  ModelOptimizationPolicySchema,
  ModelVersionPolicySchema,
  type ModelConfig,
} from '../../generated/model_config_pb.js';
import { cloneModelConfig } from './schema.js';

// Step 2 lives in its own file; re-exported because callers treat it as part
// of normalisation.
export { inferBackend } from './infer-backend.js';

export interface NormalizeContext {
  /** Directory name of the model; the default for `name`. */
  modelName: string;
  /** Number of usable GPUs; used for their ids (0..n-1) when `gpus` is empty. */
  gpuCount: number;
  /** Ids of the usable GPUs. */
  gpus: number[];
  /**
   * `--backend-config=default-max-batch-size`. Not applied here: only the ONNX
   * backend's auto-complete uses it, when the graph allows batching.
   */
  defaultMaxBatchSize?: number;
}

/** Default `max_sequence_idle_microseconds` (1 s). */
export const DEFAULT_MAX_SEQUENCE_IDLE_MICROSECONDS = 1_000_000n;

// Backends whose CPU groups default to two instances.
const TWO_CPU_INSTANCE_BACKENDS = new Set(['onnxruntime', 'tensorflow']);

/** Returns a normalised copy; `cfg` is not modified. */
export function normalizeModelConfig(cfg: ModelConfig, ctx: NormalizeContext): ModelConfig {
  const out = cloneModelConfig(cfg);
  const usableGpus = ctx.gpus.length > 0 ? [...ctx.gpus] : Array.from({ length: Math.max(0, ctx.gpuCount) }, (_, i) => i);
  const isEnsemble = out.platform === 'ensemble';

  // 1. name
  if (out.name === '') out.name = ctx.modelName;

  // 4. version policy
  if (out.versionPolicy === undefined || out.versionPolicy.policyChoice.case === undefined) {
    out.versionPolicy = create(ModelVersionPolicySchema, {
      policyChoice: { case: 'latest', value: { numVersions: 1 } },
    });
  }

  // 5. dynamic batching: the largest batch is the preferred one by default.
  const sched = out.schedulingChoice;
  if (sched.case === 'dynamicBatching' && sched.value.preferredBatchSize.length === 0 && out.maxBatchSize > 0) {
    sched.value.preferredBatchSize = [out.maxBatchSize];
  }

  // 6. sequence batching
  if (sched.case === 'sequenceBatching') {
    const sb = sched.value;
    if (sb.maxSequenceIdleMicroseconds === 0n) sb.maxSequenceIdleMicroseconds = DEFAULT_MAX_SEQUENCE_IDLE_MICROSECONDS;
    const strategy = sb.strategyChoice;
    if (strategy.case === 'oldest' && strategy.value.preferredBatchSize.length === 0 && out.maxBatchSize > 0) {
      strategy.value.preferredBatchSize = [out.maxBatchSize];
    }
  }

  if (isEnsemble) return out;

  // 7. pinned memory buffers default to enabled.
  out.optimization ??= create(ModelOptimizationPolicySchema);
  out.optimization.inputPinnedMemory ??= create(ModelOptimizationPolicy_PinnedMemoryBufferSchema, { enable: true });
  out.optimization.outputPinnedMemory ??= create(ModelOptimizationPolicy_PinnedMemoryBufferSchema, { enable: true });

  // 8. instance groups
  if (out.instanceGroup.length === 0) {
    out.instanceGroup.push(create(ModelInstanceGroupSchema, { name: out.name, kind: ModelInstanceGroup_Kind.AUTO }));
  }
  out.instanceGroup.forEach((group, index) => {
    if (group.name === '') group.name = `${out.name}_${index}`;
    if (group.kind === ModelInstanceGroup_Kind.AUTO) {
      // GPU when the host has GPUs and every listed one is usable, else CPU
      // (validation then rejects a CPU group that still lists GPUs).
      const onGpu = usableGpus.length > 0 && group.gpus.every((g) => usableGpus.includes(g));
      group.kind = onGpu ? ModelInstanceGroup_Kind.GPU : ModelInstanceGroup_Kind.CPU;
    }
    if (group.count < 1) {
      group.count = group.kind === ModelInstanceGroup_Kind.CPU && TWO_CPU_INSTANCE_BACKENDS.has(out.backend) ? 2 : 1;
    }
    // No gpus listed means every usable GPU; count then applies per GPU.
    if (group.kind === ModelInstanceGroup_Kind.GPU && group.gpus.length === 0) group.gpus = [...usableGpus];
  });
  return out;
}

/** Creates an empty `dynamic_batching {}` (what auto-complete may add). */
export function emptyDynamicBatching(): ModelConfig['schedulingChoice'] {
  return { case: 'dynamicBatching', value: create(ModelDynamicBatchingSchema) };
}
