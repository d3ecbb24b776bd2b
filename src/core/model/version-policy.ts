/**
 * @module core/model/version-policy
 * Which of the version directories on disk are served: `latest { num_versions }` (default 1),
 * `all`, or `specific { versions }`.
 */
import type { ModelConfig } from '../../generated/model_config_pb.js';

export function selectVersions(config: ModelConfig, onDisk: readonly number[]): number[] {
  const policy = config.versionPolicy?.policyChoice;
  const sorted = [...onDisk].sort((a, b) => a - b);
  switch (policy?.case) {
    case 'all':
      return sorted;
    case 'specific': {
      const wanted = new Set(policy.value.versions.map(Number));
      return sorted.filter((v) => wanted.has(v));
    }
    default: {
      // 'latest', and a config without a policy
      const n = policy?.case === 'latest' ? Math.max(1, policy.value.numVersions) : 1;
      return sorted.slice(-n);
    }
  }
}
