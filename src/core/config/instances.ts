/**
 * The model instances a normalised config asks for (docs/protocol-notes.md,
 * "Instances and dispatch"; core backend_model.cc). Each one is a stub process for Python models.
 *
 * Naming follows Triton exactly: instance `<group name>_<c>` for c in
 * [0, count). A KIND_GPU group creates `count` instances on *each* listed GPU,
 * and the instances of the same c on different GPUs share one name (Triton
 * passes the same name with a different device id). Callers that need a
 * unique key must combine `name` with `deviceId`.
 */
import { ModelInstanceGroup_Kind, type ModelConfig } from '../../generated/model_config_pb.js';

export interface InstanceSpec {
  /** `model_instance_name`: `<group>_<c>`. */
  name: string;
  /** `model_instance_kind`. */
  kind: 'CPU' | 'GPU' | 'MODEL';
  /** `model_instance_device_id`: the GPU ordinal for GPU, else 0. */
  deviceId: number;
  groupName: string;
  /** c: index within the group's count (not unique across GPUs). */
  index: number;
  /** Passive instances are loaded but get no requests from the scheduler. */
  passive: boolean;
  /** The group's `host_policy`, else Triton's default for the kind (`cpu`, `model`, `gpu_<id>`). */
  hostPolicy: string;
}

/**
 * Expands `instance_group` in config order; within a group, for each c the
 * group's GPUs in listed order (the order Triton creates them in).
 * Expects a normalised config; a leftover KIND_AUTO is read as GPU when it
 * lists GPUs, else CPU.
 */
export function expandInstances(cfg: ModelConfig): InstanceSpec[] {
  const out: InstanceSpec[] = [];
  for (const group of cfg.instanceGroup) {
    const kind = group.kind === ModelInstanceGroup_Kind.AUTO ? (group.gpus.length > 0 ? ModelInstanceGroup_Kind.GPU : ModelInstanceGroup_Kind.CPU) : group.kind;
    for (let c = 0; c < group.count; c++) {
      const base = { name: `${group.name}_${c}`, groupName: group.name, index: c, passive: group.passive };
      if (kind === ModelInstanceGroup_Kind.GPU) {
        for (const gpu of group.gpus) out.push({ ...base, kind: 'GPU', deviceId: gpu, hostPolicy: group.hostPolicy || `gpu_${gpu}` });
      } else {
        const k = kind === ModelInstanceGroup_Kind.MODEL ? 'MODEL' : 'CPU';
        out.push({ ...base, kind: k, deviceId: 0, hostPolicy: group.hostPolicy || (k === 'MODEL' ? 'model' : 'cpu') });
      }
    }
  }
  return out;
}
