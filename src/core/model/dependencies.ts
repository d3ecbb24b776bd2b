/**
 * @module core/model/dependencies
 * The one place that says which other models a model needs loaded first: load order and
 * `unload_dependents` ask here. Python and ONNX models need none; ensembles will name their
 * steps' models.
 */
import type { ModelConfig } from '../../generated/model_config_pb.js';

export function dependenciesOf(_config: ModelConfig): string[] {
  return [];
}
